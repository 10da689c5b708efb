// A Poplar program whose host code and codelets share one file, as Poplar's examples sometimes
// do: the host passes __FILE__ to addCodelets, and the codelet compiler (popc, here Aspen's
// host codelet compiler) defines __POPC__ so that only the vertices are seen there. The
// codelets are in PopLibs' style: templates named as poputil::templateVertex spells them,
// MultiVertex striding by CTXT_WORKERS, vectors of edges, VectorList fields, plain members,
// Vector layouts, memory constraints and IS_EXTERNAL_CODELET. The host side also uses the
// smaller Poplar names (TypeTraits, Interval, ArrayRef, DebugNameAndId, tile mappings, clone
// methods). Built against include/compat with no source change; its output is compared with
// ported_mixed.expected, worked out by hand.
#include <poplar/AvailableVTypes.h>
#include <poplar/HalfFloat.hpp>
#include <poplar/StackSizeDefs.hpp>
#include <poplar/TileConstants.hpp>
#include <poplar/VectorLayout.hpp>
#include <poplar/Vertex.hpp>
#include <poplibs_support/ExternalCodelet.hpp>

using namespace poplar;

#ifdef VECTOR_AVAIL_SCALED_PTR64
static constexpr auto PTR_ALIGN64 = VectorLayout::SCALED_PTR64;
#else
static constexpr auto PTR_ALIGN64 = VectorLayout::ONE_PTR;
#endif
static constexpr auto ONE_PTR = VectorLayout::ONE_PTR;
static constexpr auto SPAN = VectorLayout::SPAN;
static constexpr auto COMPACT_DELTAN = VectorListLayout::COMPACT_DELTAN;

namespace demo {

// out[i] = scale * (sum of the i-th edge of `in`).
template <typename T>
class [[poplar::constraint("elem(*in) != elem(*out)")]] RowSums : public Vertex {
public:
  RowSums();

  Vector<Input<Vector<T>>> in;
  Output<Vector<T>> out;
  T scale;

  IS_EXTERNAL_CODELET(false);

  void compute() {
    for (unsigned i = 0; i < in.size(); ++i) {
      T sum = 0;
      for (auto v : in[i])
        sum += v;
      out[i] = scale * sum;
    }
  }
};

template class RowSums<float>;
template class RowSums<int>;

// data[i] *= factor (negated when Negate), the elements shared out among the workers.
template <typename T, bool Negate>
class ScaleInPlace : public MultiVertex {
public:
  ScaleInPlace();

  InOut<Vector<T, SPAN, 8>> data;
  unsigned short factor;

  void compute(unsigned workerId) {
    const T f = Negate ? -T(factor) : T(factor);
    for (unsigned i = workerId; i < data.size(); i += CTXT_WORKERS)
      data[i] *= f;
  }
};

template class ScaleInPlace<float, true>;
template class ScaleInPlace<float, false>;

} // namespace demo

// lengths[i] = (doubled ? 2 : 1) * (length of row i) + bias.
class RowLengths : public Vertex {
public:
  Input<VectorList<float, VectorListLayout::DELTANELEMENTS>> rows;
  Output<Vector<unsigned>> lengths;
  bool doubled;
  unsigned char bias;

  bool compute() {
    for (unsigned i = 0; i < rows.size(); ++i)
      lengths[i] = (doubled ? 2 : 1) * rows[i].size() + bias;
    return true;
  }
};

// Adds its row index to every element of each row.
class AddRowIndex : public Vertex {
public:
  InOut<VectorList<int, COMPACT_DELTAN, 4>> rows;

  void compute() {
    for (unsigned i = 0; i < rows.size(); ++i)
      for (auto &v : rows[i])
        v += i;
  }
};

// y += a * x, with x's size taken from y (a scaled pointer carries no size).
class [[poplar::constraint("elem(*x) != elem(*y)")]] Axpy : public Vertex {
public:
  Input<Vector<float, PTR_ALIGN64, 8>> x;
  InOut<Vector<float, SPAN, 8>> y;
  float a;

  void compute() {
    for (unsigned i = 0; i < y.size(); ++i)
      y[i] += a * x[i];
  }
};

class HalfToFloat : public Vertex {
public:
  Input<Vector<half, ONE_PTR>> in;
  Output<Vector<float>> out;

  void compute() {
    for (unsigned i = 0; i < out.size(); ++i)
      out[i] = float(in[i]);
  }
};

#ifndef __POPC__
#include <poplar/ArrayRef.hpp>
#include <poplar/DebugContext.hpp>
#include <poplar/Device.hpp>
#include <poplar/Engine.hpp>
#include <poplar/Graph.hpp>
#include <poplar/GraphElements.hpp>
#include <poplar/IPUModel.hpp>
#include <poplar/Interval.hpp>
#include <poplar/StringRef.hpp>
#include <poplar/TargetType.hpp>
#include <poplar/TensorCloneMethod.hpp>
#include <poplar/TypeTraits.hpp>
#include <poplar/VariableMappingMethod.hpp>
#include <poputil/VertexTemplates.hpp>

#include <type_traits>

using namespace poplar::program;

static_assert(!std::is_convertible_v<const char *, Type>,
              "a string literal must never pick a Type overload over a DebugContext one");

static void printMapping(StringRef title, const Graph::TileToTensorMapping &mapping) {
  std::cout << title << ":";
  for (unsigned tile = 0; tile < mapping.size(); ++tile)
    for (const Interval &i : mapping[tile])
      std::cout << " tile " << tile << " [" << i.begin() << "," << i.end() << ") size "
                << i.size() << ";";
  std::cout << "\n";
}

static std::size_t product(ArrayRef<std::size_t> dims) {
  std::size_t n = 1;
  for (auto d : dims)
    n *= d;
  return n;
}

// True when the mapping gives every element of [0, n) to exactly one tile, in tile order.
static bool coversInTileOrder(const Graph::TileToTensorMapping &mapping, std::size_t n) {
  std::size_t next = 0;
  for (const auto &intervals : mapping)
    for (const Interval &i : intervals) {
      if (i.begin() != next)
        return false;
      next = i.end();
    }
  return next == n;
}

int main() {
  Device cpu = Device::createCPUDevice();
  std::cout << "CPU device tiles: " << cpu.getTarget().getNumTiles() << "\n";

  IPUModel ipuModel;
  ipuModel.tilesPerIPU = 4;
  Device device = ipuModel.createDevice();
  const Target &target = device.getTarget();
  Graph graph(target);
  graph.addCodelets(__FILE__);

  std::cout << "TypeTraits::make<float>().size: " << TypeTraits::make<float>().size
            << ", isSimpleType<float>: " << TypeTraits::isSimpleType<float>()
            << ", equivalent_device_type<unsigned>: "
            << equivalent_device_type<unsigned>().value.toString() << "\n";
  std::cout << "hasCodelet demo::RowSums<float>: " << graph.hasCodelet("demo::RowSums<float>")
            << ", demo::RowSums<double>: " << graph.hasCodelet("demo::RowSums<double>")
            << ", demo::ScaleInPlace<float,true>: "
            << graph.hasCodelet("demo::ScaleInPlace<float,true>") << "\n";

  // Tile mappings: LINEAR over the four tiles, and one set by hand from intervals.
  DebugNameAndId parent("mixed");
  const std::vector<std::size_t> linearShape{4, 25};
  Tensor linear = graph.addVariable(FLOAT, linearShape, VariableMappingMethod::LINEAR,
                                    {parent, "linear"});
  const Graph::TileToTensorMapping linearMapping = graph.getTileMapping(linear);
  unsigned tilesUsed = 0;
  for (const auto &intervals : linearMapping)
    tilesUsed += !intervals.empty();
  std::cout << "LINEAR maps all " << product(linearShape)
            << " elements in tile order: " << coversInTileOrder(linearMapping, linear.numElements())
            << ", over several tiles: " << (tilesUsed > 1) << "\n";

  Tensor data = graph.addVariable(FLOAT, {9}, DebugContext(parent, "data"));
  Graph::TileToTensorMapping byHand(target.getNumTiles());
  byHand[1] = {Interval(0, 2), Interval(5, 9)};
  byHand[2] = {Interval(2, 5)};
  graph.setTileMapping(data, byHand);
  printMapping("data mapping", graph.getTileMapping(data));
  Tensor twin = graph.clone(data, "twin", TensorCloneMethod::PRESERVE_ORDER_AND_ALIASES);
  Tensor intTwin = graph.clone(INT, data, "intTwin");
  std::cout << "clone keeps mapping: " << (graph.getTileMapping(twin) == byHand)
            << ", clone(INT, ...) type: " << intTwin.elementType().toString() << "\n";

  Tensor dataStart = graph.addConstant<float>(FLOAT, {9}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor ints = graph.addVariable(INT, {6}, "ints");
  Tensor intsStart = graph.addConstant<int>(INT, {6}, {1, 2, 3, 4, 5, 6});
  Tensor sums = graph.addVariable(FLOAT, {3}, "sums");
  Tensor intSums = graph.addVariable(INT, {3}, "intSums");
  Tensor lengths = graph.addVariable(UNSIGNED_INT, {3}, "lengths");
  Tensor scaled = graph.addVariable(FLOAT, {12}, "scaled");
  Tensor scaledStart = graph.addConstant<float>(FLOAT, {12}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  Tensor x = graph.addConstant<float>(FLOAT, {3}, {1, 2, 3});
  Tensor y = graph.addVariable(FLOAT, {3}, "y");
  Tensor yStart = graph.addConstant<float>(FLOAT, {3}, {10, 20, 30});
  Tensor halves = graph.addConstant<float>(HALF, {3}, {0.5, 1.25, -2});
  Tensor widened = graph.addVariable(FLOAT, {3}, "widened");
  for (const Tensor &t : {dataStart, ints, intsStart, sums, intSums, lengths, scaled, scaledStart,
                          x, y, yStart, halves, widened})
    graph.setTileMapping(t, 3);

  const std::vector<Tensor> rows = {data.slice(0, 2), data.slice(2, 5), data.slice(5, 9)};
  const std::vector<Tensor> intRows = {ints.slice(0, 1), ints.slice(1, 4), ints.slice(4, 6)};

  ComputeSet cs = graph.addComputeSet("compute");
  // A vector of edges, sized and then connected edge by edge.
  VertexRef floatSums =
      graph.addVertex(cs, poputil::templateVertex("demo::RowSums", FLOAT), {{"out", sums}});
  graph.setFieldSize(floatSums["in"], rows.size());
  for (unsigned i = 0; i < rows.size(); ++i)
    graph.connect(floatSums["in"][i], rows[i]);
  graph.setInitialValue(floatSums["scale"], 0.5f);
  // The same field connected from a list of tensors.
  VertexRef integerSums = graph.addVertex(cs, poputil::templateVertex("demo::RowSums", INT));
  graph.connect(integerSums["in"], intRows);
  graph.connect(integerSums["out"], intSums);
  graph.setInitialValue(integerSums["scale"], 2);

  VertexRef scale = graph.addVertex(cs, poputil::templateVertex("demo::ScaleInPlace", FLOAT, true),
                                    {{"data", scaled}});
  graph.setInitialValue(scale["factor"], 3);
  VertexRef rowLengths = graph.addVertex(cs, "RowLengths", {{"lengths", lengths}});
  graph.connect(rowLengths["rows"], rows);
  graph.setInitialValue(rowLengths["doubled"], true);
  graph.setInitialValue(rowLengths["bias"], 10);
  VertexRef axpy = graph.addVertex(cs, "Axpy", {{"x", x}, {"y", y}});
  graph.setInitialValue(axpy["a"], -1.5);
  VertexRef widen = graph.addVertex(cs, "HalfToFloat", {{"in", halves}, {"out", widened}});
  for (VertexRef v : {floatSums, integerSums, scale, rowLengths, axpy, widen})
    graph.setTileMapping(v, 3);

  // After the sums have read `ints`, a second compute set adds each row's index in place.
  ComputeSet rowIndexCs = graph.addComputeSet("rowIndex");
  VertexRef rowIndex = graph.addVertex(rowIndexCs, "AddRowIndex");
  graph.connect(rowIndex["rows"], intRows);
  graph.setTileMapping(rowIndex, 3);

  Sequence prog({Copy(dataStart, data), Copy(intsStart, ints), Copy(scaledStart, scaled),
                 Copy(yStart, y)});
  prog.add(Execute(cs, "compute"));
  prog.add(Execute(rowIndexCs));
  prog.add(PrintTensor("float row sums", sums));
  prog.add(PrintTensor("int row sums", intSums));
  prog.add(PrintTensor("scaled by -3", scaled.reshape({2, 6})));
  prog.add(PrintTensor("row lengths", lengths));
  prog.add(PrintTensor("axpy", y));
  prog.add(PrintTensor("half to float", widened));
  prog.add(PrintTensor("ints plus row index", ints));

  Engine engine(graph, prog);
  engine.load(device);
  engine.run();
  std::cout << "Program complete" << std::endl;
  return 0;
}
#endif // __POPC__
