// The reduce codelets (popops Reduce.hpp), two stages planned by lib/ops/ReducePlan.cpp:
//
//   ReducePartial<Op, In, Acc>  one per tile holding input: partitions of segments; worker w
//                               runs partitions w, w + numWorkers(), ...; partition p fills its
//                               own slots, W edges partials[p * W + w] (value w of each slot).
//   ReduceFinal<Op, Acc, Out>   one per tile holding output: partitions of output slots; each
//                               merges the partial runs of its slots in the planned order, then
//                               applies scale and update and writes `out`.
//
// Segment s of ReducePartial is a contiguous run of input elements; element j of it belongs to
// the partition's slot segmentSlot[s] + j / segmentGroup[s] (group 1: added elementwise). Run r
// of ReduceFinal is W edges (runs[r * W + w]: value w of the partial states); element j of it
// merges into slot runSlot[r] + j / runGroup[r]. Slots start from the identity; the order of
// accumulation is the order of segments and runs, fixed by the plan, whatever the number of
// threads or the worker that runs a partition.
#include <aspen/Vertex.hpp>

#include "reduceOps.hpp"

namespace aspen::ops {

using ::aspen::detail::SizeType;

template <Operation Op, class In, class Acc> class ReducePartial : public MultiVertex {
public:
  Vector<Input<Vector<In>>> in;
  Vector<unsigned> segmentSlot;
  Vector<unsigned> segmentGroup;
  Vector<unsigned> partitionSegments;   // partition p: segments [p], [p + 1)
  Vector<Output<Vector<Acc>>> partials; // partition p: W edges, one per state value

  bool compute(unsigned workerId) {
    using State = reduce_codelets::State<Op, Acc>;
    constexpr unsigned W = reduce_codelets::StateWidth<Op, Acc>::value;
    const unsigned numPartitions = partitionSegments.size() - 1;
    for (unsigned p = workerId; p < numPartitions; p += numWorkers()) {
      Acc *planes[W];
      for (unsigned w = 0; w < W; ++w)
        planes[w] = partials[p * W + w].data();
      State state;
      for (unsigned slot = 0; slot < partials[p * W].size(); ++slot) {
        state.init();
        state.store(planes, slot);
      }
      for (unsigned s = partitionSegments[p]; s < partitionSegments[p + 1]; ++s) {
        const In *x = in[s].data();
        const SizeType n = in[s].size();
        const unsigned group = segmentGroup[s];
        if (group == 1) {
          State::addElementwise(planes, segmentSlot[s], x, n);
          continue;
        }
        unsigned slot = segmentSlot[s];
        for (SizeType begin = 0; begin < n; begin += group, ++slot) {
          state.load(planes, slot);
          state.addRun(x + begin, n - begin < group ? n - begin : group);
          state.store(planes, slot);
        }
      }
    }
    return true;
  }
};

template <Operation Op, class Acc, class Out> class ReduceFinal : public MultiVertex {
public:
  Vector<Input<Vector<Acc>>> runs; // W edges per run
  Vector<unsigned> runSlot;
  Vector<unsigned> runGroup;
  Vector<unsigned> partitionRuns;  // partition p: runs [p], [p + 1)
  Vector<unsigned> partitionSlots; // partition p: slots [p], [p + 1)
  Output<Vector<Acc>> states;      // scratch: W planes of slots
  InOut<Vector<Out>> out;
  Input<float> scale;
  bool update;

  bool compute(unsigned workerId) {
    using State = reduce_codelets::State<Op, Acc>;
    constexpr unsigned W = reduce_codelets::StateWidth<Op, Acc>::value;
    const unsigned numPartitions = partitionSlots.size() - 1;
    const SizeType plane = states.size() / W;
    Acc *planes[W];
    for (unsigned w = 0; w < W; ++w)
      planes[w] = &states[w * plane];
    for (unsigned p = workerId; p < numPartitions; p += numWorkers()) {
      State state;
      for (unsigned slot = partitionSlots[p]; slot < partitionSlots[p + 1]; ++slot) {
        state.init();
        state.store(planes, slot);
      }
      for (unsigned r = partitionRuns[p]; r < partitionRuns[p + 1]; ++r) {
        const Acc *from[W];
        for (unsigned w = 0; w < W; ++w)
          from[w] = runs[r * W + w].data();
        const SizeType n = runs[r * W].size();
        const unsigned group = runGroup[r];
        if (group == 1) {
          State::mergeElementwise(planes, runSlot[r], from, n);
          continue;
        }
        unsigned slot = runSlot[r];
        for (SizeType j = 0; j < n; ++slot) {
          state.load(planes, slot);
          for (const SizeType stop = j + group; j < stop; ++j)
            state.merge(from, j);
          state.store(planes, slot);
        }
      }
      for (unsigned slot = partitionSlots[p]; slot < partitionSlots[p + 1]; ++slot) {
        state.load(planes, slot);
        Acc value = scaled(state.value());
        if (update)
          value = reduce_codelets::combine<Op, Acc>(static_cast<Acc>(out[slot]), value);
        out[slot] = static_cast<Out>(value);
      }
    }
    return true;
  }

private:
  // out = scale * result; LOG_ADD works in the log domain, where multiplying by the scale is
  // adding it (popops: "the scale is a log multiply"): result + scale.
  Acc scaled(Acc value) const {
    const float s = *scale;
    if constexpr (Op == Operation::LOG_ADD)
      return value + s;
    if (s == 1.0f)
      return value;
    if constexpr (reduce_codelets::IsFloat<Acc>::value)
      return value * s;
    else // exact for every 32-bit integer
      return static_cast<Acc>(static_cast<double>(value) * s);
  }
};

// Instances per the operation table's type column; half inputs feed both float and half outputs
// through ReduceFinal<..., float, float> and <..., float, half>.
// clang-format off
#define ASPEN_REDUCE_INSTANCES(Op, In, Acc, Out)                                                 \
  template class ReducePartial<aspen::ops::Operation::Op, In, Acc>;                              \
  template class ReduceFinal<aspen::ops::Operation::Op, Acc, Out>;
#define ASPEN_REDUCE_Floating(Op)                                                                \
  ASPEN_REDUCE_INSTANCES(Op, float, float, float)                                                \
  ASPEN_REDUCE_INSTANCES(Op, half, float, half)
#define ASPEN_REDUCE_Numeric(Op)                                                                 \
  ASPEN_REDUCE_Floating(Op)                                                                      \
  ASPEN_REDUCE_INSTANCES(Op, int, int, int)                                                      \
  ASPEN_REDUCE_INSTANCES(Op, unsigned int, unsigned int, unsigned int)
#define ASPEN_REDUCE_Logical(Op) ASPEN_REDUCE_INSTANCES(Op, bool, bool, bool)
#define ASPEN_REDUCE_INSTANTIATE(name, identity, types, compensated) ASPEN_REDUCE_##types(name)
// clang-format on
ASPEN_FOR_EACH_REDUCE_OPERATION(ASPEN_REDUCE_INSTANTIATE)

} // namespace aspen::ops
