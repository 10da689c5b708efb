// Codelets of QUARTER data (<aspen/Quarter.hpp>): casts between quarter and float or half with a
// metadata tensor, and metadata made from a scale held on the device.
#include <aspen/Quarter.hpp>
#include <aspen/Vertex.hpp>
#include <aspen/detail/WorkerShare.hpp>

namespace aspen::ops {

// out[r][i] = in[r][i] converted with the metadata's format and scale: float or half to quarter
// divides by 2^scale and rounds to nearest even once; quarter to float multiplies by 2^scale
// exactly, and to half rounds that once.
template <class Src, class Dst> class CastQuarter : public MultiVertex {
public:
  Vector<Input<Vector<Src>>> in;
  Vector<Output<Vector<Dst>>> out;
  Input<QuarterMetadata> metadata;

  static void convert(float v, quarter &o, QuarterMetadata m) {
    o.bits = ::aspen::detail::floatToQuarter(v, m);
  }
  static void convert(half v, quarter &o, QuarterMetadata m) {
    o.bits = ::aspen::detail::floatToQuarter(float(v), m);
  }
  static void convert(quarter v, float &o, QuarterMetadata m) {
    o = ::aspen::detail::quarterToFloat(v.bits, m);
  }
  static void convert(quarter v, half &o, QuarterMetadata m) {
    o = half(::aspen::detail::quarterToFloat(v.bits, m));
  }

  bool compute(unsigned wid) {
    const QuarterMetadata m = *metadata;
    for (unsigned r = 0; r < out.size(); ++r) {
      unsigned begin, end;
      ::aspen::detail::workerShare(out[r].size(), wid, numWorkers(), begin, end);
      for (unsigned i = begin; i < end; ++i)
        convert(in[r][i], out[r][i], m);
    }
    return true;
  }
};
template class CastQuarter<float, quarter>;
template class CastQuarter<half, quarter>;
template class CastQuarter<quarter, float>;
template class CastQuarter<quarter, half>;

// out = metadata of `format` with the scale in `scale`. A scale outside [-32, 31] fails the
// vertex (the engine reports which), rather than wrapping into another scale.
template <class S> class SetQuarterMetadata : public Vertex {
public:
  Input<S> scale;
  Output<QuarterMetadata> out;
  unsigned char format; // QuarterMetadata::Format

  bool compute() {
    const int s = int(*scale);
    if (s < QuarterMetadata::kMinScale || s > QuarterMetadata::kMaxScale)
      return false;
    *out = QuarterMetadata::fromBits(
        static_cast<unsigned char>((format ? 0x80u : 0u) | (static_cast<unsigned>(s) & 0x3fu)));
    return true;
  }
};
template class SetQuarterMetadata<int>;
template class SetQuarterMetadata<unsigned>;
template class SetQuarterMetadata<short>;
template class SetQuarterMetadata<unsigned short>;
template class SetQuarterMetadata<char>;
template class SetQuarterMetadata<signed char>;
template class SetQuarterMetadata<unsigned char>;

} // namespace aspen::ops
