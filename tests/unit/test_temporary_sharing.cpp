// Which edges of a vertex share a contiguous temporary (LowerComputeSets.hpp): fields and 2-D
// field edges of one vertex connected to equal tensors (operator==: same type, shape and
// elements, however the views were built) get one temporary, gathered once and scattered once;
// different tensors, and other vertices, get their own. Lowering finds equal tensors through a
// hash of their elements (issue 34), so these tests pin down that the hash neither merges
// different tensors nor misses equal ones, at a few edges and at a thousand.
#include "compiler/CompiledGraph.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/ops/Codelets.hpp>
#include <aspen/ops/ElementWise.hpp>
#include <aspen/util/TileMapping.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

using namespace aspen;
using namespace aspen::program;
using aspen::detail::BufferKind;
using aspen::detail::CompiledComputeSet;
using aspen::detail::CompiledGraph;
using aspen::detail::DescTemplate;

namespace {

const char *kCodelets = R"(
#include <aspen/Vertex.hpp>
using namespace aspen;
// sums[r] = sum of rows[r]
class SharingRows : public Vertex {
public:
  Vector<Input<Vector<float>>> rows;
  Output<Vector<float>> sums;
  bool compute() {
    for (unsigned r = 0; r < rows.size(); ++r) {
      float total = 0;
      for (unsigned i = 0; i < rows[r].size(); ++i)
        total += rows[r][i];
      sums[r] = total;
    }
    return true;
  }
};
// b = a + 1, in place when a and b are the same tensor.
class SharingInPlace : public Vertex {
public:
  Input<Vector<float>> a;
  Output<Vector<float>> b;
  bool compute() {
    for (unsigned i = 0; i < b.size(); ++i)
      b[i] = a[i] + 1;
    return true;
  }
};
)";

Graph makeGraph() {
  Graph g(Target::createGeneric(2));
  g.addCodeletsFromString(kCodelets, "test_temporary_sharing.cpp");
  return g;
}

const CompiledComputeSet &computeSet(const CompiledGraph &compiled, const std::string &name) {
  const auto it = std::find_if(compiled.computeSets.begin(), compiled.computeSets.end(),
                               [&](const CompiledComputeSet &cs) { return cs.name == name; });
  REQUIRE(it != compiled.computeSets.end());
  return *it;
}

bool inScratch(const CompiledGraph &compiled, const DescTemplate &d) {
  return d.base == DescTemplate::Arena && compiled.buffers.at(d.buffer).kind == BufferKind::Scratch;
}

// Offsets in the scratch buffer of the fields of vertex `v` (in field order) that point there.
std::vector<std::uint64_t> scratchOffsets(const CompiledGraph &compiled,
                                          const CompiledComputeSet &cs, std::size_t v) {
  const std::size_t end =
      v + 1 < cs.vertices.size() ? cs.vertices[v + 1].firstField : cs.fields.size();
  std::vector<std::uint64_t> offsets;
  for (std::size_t f = cs.vertices[v].firstField; f < end; ++f)
    if (inScratch(compiled, cs.fields[f]))
      offsets.push_back(cs.fields[f].offset);
  return offsets;
}

// The temporaries of compute set `name` that are gathered (or scattered): the runs of its
// scratch buffer that the rearranging copies (Copy steps made by copy lowering) write (or read).
std::size_t rearranged(const CompiledGraph &compiled, const std::string &name, bool gathered) {
  const std::string scratch = "scratch of compute set '" + name + "'";
  std::size_t temporaries = 0;
  for (const aspen::detail::CopyPlan &plan : compiled.copies) {
    if (!plan.rearranges)
      continue;
    for (const aspen::detail::ByteRun &run : (gathered ? plan.dst : plan.src).runs)
      temporaries += compiled.buffers.at(run.buffer).name == scratch;
  }
  return temporaries;
}
std::size_t gathered(const CompiledGraph &compiled, const std::string &name) {
  return rearranged(compiled, name, true);
}
std::size_t scattered(const CompiledGraph &compiled, const std::string &name) {
  return rearranged(compiled, name, false);
}

// A SharingRows vertex on tile 0.
void addRows(Graph &g, ComputeSet cs, const std::vector<Tensor> &rows, const Tensor &sums) {
  VertexRef v = g.addVertex(cs, "SharingRows");
  g.connect(v["rows"], rows);
  g.connect(v["sums"], sums);
  g.setTileMapping(v, 0);
}

// The element-wise transpose of column c of m, built one element at a time: equal to
// m.transpose()[c] (same shape and elements) but a different view.
Tensor columnByElements(const Tensor &m, std::size_t c) {
  std::vector<Tensor> elements;
  for (std::size_t r = 0; r < m.dim(0); ++r)
    elements.push_back(m[r][c].reshape({1}));
  return concat(elements);
}

} // namespace

TEST_CASE("Temporaries: edges of one vertex connected to equal tensors share one gather",
          "[unit][temporaries]") {
  Graph g = makeGraph();
  Tensor m = g.addVariable(FLOAT, {4, 5}, "m");
  Tensor sums = g.addVariable(FLOAT, {6}, "sums");
  g.setTileMapping(m, 0);
  g.setTileMapping(sums, 0);
  const Tensor col0 = m.transpose()[0], col1 = m.transpose()[1], col2 = m.transpose()[2];
  REQUIRE(columnByElements(m, 0) == col0);
  // Edges 0 and 2 are equal views built differently, 1 and 4 the same view, 3 a new one, and 5
  // edge 0's elements in reverse order (a different tensor).
  const std::vector<Tensor> rows{col0, col1, columnByElements(m, 0), col2, col1, col0.reverse(0)};
  ComputeSet cs = g.addComputeSet("rows");
  addRows(g, cs, rows, sums);
  g.createHostWrite("m", m);
  g.createHostRead("sums", sums);
  Executable exe = compileGraph(g, {Execute(cs)});
  const CompiledGraph &compiled = exe.compiled();
  const CompiledComputeSet &lowered = computeSet(compiled, "rows");

  REQUIRE(gathered(compiled, "rows") == 4);
  REQUIRE(scattered(compiled, "rows") == 0);
  REQUIRE(lowered.nested.size() == rows.size());
  for (const DescTemplate &d : lowered.nested)
    REQUIRE(inScratch(compiled, d));
  const auto &e = lowered.nested;
  CHECK(e[0].offset == e[2].offset);
  CHECK(e[1].offset == e[4].offset);
  const std::set<std::uint64_t> distinct{e[0].offset, e[1].offset, e[3].offset, e[5].offset};
  CHECK(distinct.size() == 4);

  // And the vertex sees the right values through them.
  Engine engine(std::move(exe));
  engine.load(Device::createModelDevice(g.getTarget()));
  std::vector<float> hm(20);
  for (std::size_t i = 0; i < hm.size(); ++i)
    hm[i] = float(i * i % 11);
  engine.writeTensor("m", hm.data(), hm.data() + hm.size());
  engine.run();
  std::vector<float> got(6);
  engine.readTensor("sums", got.data(), got.data() + got.size());
  auto column = [&](std::size_t c) { return hm[c] + hm[5 + c] + hm[10 + c] + hm[15 + c]; };
  CHECK(got == std::vector<float>{column(0), column(1), column(0), column(2), column(1),
                                  column(0)});
}

TEST_CASE("Temporaries: a vertex reading and writing one tensor through two fields gets one "
          "temporary, gathered and scattered",
          "[unit][temporaries]") {
  Graph g = makeGraph();
  Tensor x = g.addVariable(FLOAT, {8}, "x");
  g.setTileMapping(x, 0);
  ComputeSet cs = g.addComputeSet("in place");
  // Two views of the even elements, built separately.
  g.setTileMapping(
      g.addVertex(cs, "SharingInPlace", {{"a", x.subSample(2, 0)}, {"b", x.reshape({4, 2})
                                                                          .transpose()[0]}}),
      0);
  g.createHostWrite("x", x);
  g.createHostRead("x-read", x);
  const Executable exe = compileGraph(g, {Execute(cs)});
  const CompiledGraph &compiled = exe.compiled();
  const CompiledComputeSet &lowered = computeSet(compiled, "in place");
  REQUIRE(gathered(compiled, "in place") == 1);
  REQUIRE(scattered(compiled, "in place") == 1);
  // The gather and the scatter are Copy steps of their own around the Execute step.
  using aspen::detail::Step;
  using aspen::detail::StepKind;
  const Step &root = compiled.steps.at(compiled.programs.at(0));
  REQUIRE(root.kind == StepKind::Sequence);
  REQUIRE(root.children.size() == 3);
  const Step &gather = compiled.steps.at(root.children[0]),
             &execute = compiled.steps.at(root.children[1]),
             &scatter = compiled.steps.at(root.children[2]);
  REQUIRE(gather.kind == StepKind::Copy);
  REQUIRE(execute.kind == StepKind::Execute);
  REQUIRE(scatter.kind == StepKind::Copy);
  CHECK(compiled.copies.at(gather.index).rearranges);
  CHECK(compiled.copies.at(scatter.index).rearranges);
  CHECK(compiled.computeSets.at(execute.index).name == "in place");
  // 4 floats gathered and scattered: 32 bytes moved per execution.
  CHECK(compiled.computeSets.at(execute.index).rearrangedBytes == 32);
  const std::vector<std::uint64_t> offsets = scratchOffsets(compiled, lowered, 0);
  REQUIRE(offsets.size() == 2);
  CHECK(offsets[0] == offsets[1]);
}

TEST_CASE("Temporaries: different shapes of the same elements, and other vertices, get their own",
          "[unit][temporaries]") {
  Graph g = makeGraph();
  Tensor x = g.addVariable(FLOAT, {8}, "x");
  Tensor y = g.addVariable(FLOAT, {8}, "y");
  g.setTileMapping(x, 0);
  g.setTileMapping(y, 0);
  const Tensor evens = x.subSample(2, 0);
  ComputeSet cs = g.addComputeSet("two vertices");
  for (std::size_t i = 0; i < 2; ++i)
    g.setTileMapping(
        g.addVertex(cs, "SharingInPlace", {{"a", evens}, {"b", y.slice(4 * i, 4 * i + 4)}}), 0);
  ComputeSet shapes = g.addComputeSet("shapes");
  addRows(g, shapes, {evens, evens.reshape({2, 2})}, y.slice(0, 2));
  g.createHostWrite("x", x);
  g.createHostRead("y", y);
  const Executable exe = compileGraph(g, {Sequence({Execute(cs), Execute(shapes)})});
  const CompiledGraph &compiled = exe.compiled();

  // Temporaries are per vertex: each vertex gathers its own copy.
  const CompiledComputeSet &perVertex = computeSet(compiled, "two vertices");
  REQUIRE(gathered(compiled, "two vertices") == 2);
  REQUIRE(scratchOffsets(compiled, perVertex, 0).size() == 1);
  REQUIRE(scratchOffsets(compiled, perVertex, 1).size() == 1);
  CHECK(scratchOffsets(compiled, perVertex, 0) != scratchOffsets(compiled, perVertex, 1));

  // operator== compares shapes, so a reshaped view is another tensor with another temporary.
  REQUIRE(evens != evens.reshape({2, 2}));
  const CompiledComputeSet &byShape = computeSet(compiled, "shapes");
  REQUIRE(gathered(compiled, "shapes") == 2);
  CHECK(byShape.nested.at(0).offset != byShape.nested.at(1).offset);
}

TEST_CASE("Temporaries: a thousand shuffled edges, each used twice, make a thousand gathers",
          "[unit][temporaries]") {
  constexpr std::size_t kEdges = 1000, kChunk = 4, kChunksPerEdge = 4;
  Graph g = makeGraph();
  const std::size_t n = kEdges * kChunk * kChunksPerEdge;
  Tensor x = g.addVariable(FLOAT, {n}, "x");
  Tensor sums = g.addVariable(FLOAT, {2 * kEdges}, "sums");
  g.setTileMapping(x, 0);
  g.setTileMapping(sums, 0);
  std::vector<std::size_t> order(n / kChunk);
  for (std::size_t c = 0; c < order.size(); ++c)
    order[c] = c;
  std::shuffle(order.begin(), order.end(), std::mt19937(7));
  std::vector<Tensor> chunks;
  for (std::size_t c : order)
    chunks.push_back(x.slice(kChunk * c, kChunk * (c + 1)));
  const std::size_t edgeElements = kChunk * kChunksPerEdge;
  // Edge i, then the same edges again in reverse order, each rebuilt from its chunks.
  const Tensor shuffled = concat(chunks);
  std::vector<Tensor> rows;
  for (std::size_t i = 0; i < kEdges; ++i)
    rows.push_back(shuffled.slice(i * edgeElements, (i + 1) * edgeElements));
  for (std::size_t i = kEdges; i-- > 0;)
    rows.push_back(concat(std::vector<Tensor>(chunks.begin() + i * kChunksPerEdge,
                                              chunks.begin() + (i + 1) * kChunksPerEdge)));
  ComputeSet cs = g.addComputeSet("many");
  addRows(g, cs, rows, sums);
  g.createHostWrite("x", x);
  g.createHostRead("sums", sums);
  const Executable exe = compileGraph(g, {Execute(cs)});
  const CompiledGraph &compiled = exe.compiled();
  const CompiledComputeSet &lowered = computeSet(compiled, "many");

  std::size_t contiguous = 0;
  for (std::size_t i = 0; i < kEdges; ++i)
    contiguous += rows[i].numRegions() == 1;
  INFO(contiguous << " of the edges happen to be contiguous");
  REQUIRE(gathered(compiled, "many") == kEdges - contiguous);
  std::set<std::uint64_t> firstUses;
  for (std::size_t i = 0; i < kEdges; ++i) {
    const DescTemplate &first = lowered.nested.at(i), &again = lowered.nested.at(2 * kEdges - 1 - i);
    CHECK(first.buffer == again.buffer);
    CHECK(first.offset == again.offset);
    if (inScratch(compiled, first))
      firstUses.insert(first.offset);
  }
  CHECK(firstUses.size() == kEdges - contiguous);
}

TEST_CASE("a channel's scale broadcast over its image is read once a row, not gathered",
          "[unit][compiler][elementwise]") {
  // y = x * s + b with s and b [C, 1] over x [N, C, HW]: the generated codelet takes one element
  // of s and b for each row of HW elements, so the compute set gathers at most the rows'
  // elements (N * C each), where gathering the broadcast views would move N * C * HW each.
  const std::size_t N = 2, C = 8, HW = 64;
  for (const bool generate : {true, false}) {
    Graph g(Target::createGeneric(3));
    aspen::ops::addCodelets(g);
    Tensor x = g.addVariable(FLOAT, {N, C, HW}, "x"), s = g.addVariable(FLOAT, {C, 1}, "s"),
           b = g.addVariable(FLOAT, {C, 1}, "b");
    for (const Tensor &t : {x, s, b})
      aspen::util::mapTensorLinearly(g, t);
    Sequence prog;
    namespace ex = aspen::ops::expr;
    aspen::ops::map(g, ex::_1 * ex::_2 + ex::_3, {x, s, b}, prog, "affine",
                    {{"enableGenerateCodelet", generate ? "true" : "false"}});
    const Executable exe = compileGraph(g, {prog});
    std::uint64_t moved = 0;
    for (const CompiledComputeSet &cs : exe.compiled().computeSets)
      moved += cs.rearrangedBytes;
    INFO("generated codelet: " << generate << ", bytes gathered " << moved);
    if (generate)
      CHECK(moved <= 2 * N * C * sizeof(float));
    else
      CHECK(moved >= 2 * N * C * HW * sizeof(float) / 2); // the operation-by-operation path
  }
}
