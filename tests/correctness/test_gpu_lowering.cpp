// The CUDA executor's launch tables and copy plans (GpuLaunchTables), checked without a GPU.
//
// The tables hold absolute addresses, so placing the "device" arena, table region, temporary
// and staging area in host memory makes them runnable on the host: copy plans are played
// byte by byte and each tile record's vertices run through their host entry points, exactly as
// the GPU kernel contract (GpuAbi.hpp) says. A program run that way must give the CPU
// executor's results bit for bit, and the tables must place every field where the compiled
// descriptors say, list every vertex once and keep each tile's order.
#include "ProgramTestUtils.hpp"
#include "TestPaths.hpp"
#include "compiler/Compiler.hpp"
#include "executors/cuda/GpuLaunchTables.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/Program.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <random>

using namespace aspen;
using namespace aspen::program;
using namespace aspen::detail;

namespace {

std::uint64_t addressOf(const void *p) { return reinterpret_cast<std::uintptr_t>(p); }
std::uint8_t *pointerAt(std::uint64_t address) {
  return reinterpret_cast<std::uint8_t *>(static_cast<std::uintptr_t>(address));
}

// Plays a copy plan on host memory, stage after stage, as the copy kernel and memcpys would.
void playCopyPlan(const GpuCopyPlan &plan) {
  for (const GpuCopyStage &stage : plan.stages) {
    for (const GpuMemcpy &m : stage.memcpys)
      std::memmove(pointerAt(m.dst), pointerAt(m.src), m.bytes);
    for (const GpuCopySegment &s : stage.segments) {
      REQUIRE(s.count <= kGpuCopySegmentElements);
      for (std::uint64_t i = 0; i < s.count; ++i)
        std::memcpy(pointerAt(s.dst + std::uint64_t(s.dstStride * std::int64_t(i))),
                    pointerAt(s.src + std::uint64_t(s.srcStride * std::int64_t(i))),
                    plan.elementBytes);
    }
  }
}

// A CompiledGraph "loaded" into host memory through the GPU tables.
class TableRunner {
public:
  explicit TableRunner(const CompiledGraph &graph)
      : graph_(graph), arena_(graph.arenaBytes + 64), typeIndices_(gpuVertexTypeIndices(graph)) {
    std::uint64_t temporaryBytes = 0;
    for (const CopyPlan &p : graph.copies)
      temporaryBytes = std::max(temporaryBytes, p.src.bytes());
    temporary_.resize(temporaryBytes + 8);
    for (const InitialValue &init : graph.initialValues)
      std::memcpy(arena_.data() + graph.buffers[init.buffer].offset + init.offset,
                  init.bytes.data(), init.bytes.size());
    for (std::uint32_t c = 0; c < graph.computeSets.size(); ++c) {
      const std::size_t bytes = gpuLaunchTables(graph, c, typeIndices_, 0, 0).image.size();
      tableMemory_.emplace_back(bytes + 16);
      tables_.push_back(gpuLaunchTables(graph, c, typeIndices_, arenaBase(),
                                        addressOf(tableMemory_.back().data())));
      std::memcpy(tableMemory_.back().data(), tables_.back().image.data(),
                  tables_.back().image.size());
    }
  }

  std::uint64_t arenaBase() const { return addressOf(arena_.data()); }
  std::uint64_t temporaryBase() const { return addressOf(temporary_.data()); }
  const GpuComputeSetTables &tables(std::uint32_t c) const { return tables_[c]; }
  std::uint64_t tableBase(std::uint32_t c) const { return addressOf(tableMemory_[c].data()); }

  // Host transfers through a staging area, as the executor does them.
  void write(const std::string &handle, const void *host) {
    const RegionList &regions = graph_.hostWrites.at(handle).regions;
    std::vector<std::uint8_t> staging(regions.bytes());
    std::memcpy(staging.data(), host, staging.size());
    playCopyPlan(gpuTransferPlan(regions, graph_.buffers, arenaBase(), addressOf(staging.data()),
                                 true));
  }
  template <class T> std::vector<T> read(const std::string &handle) {
    const RegionList &regions = graph_.hostReads.at(handle).regions;
    std::vector<T> host(regions.numElements);
    playCopyPlan(gpuTransferPlan(regions, graph_.buffers, arenaBase(), addressOf(host.data()),
                                 false));
    return host;
  }

  // Sequences of compute sets and copies.
  void runStep(std::uint32_t index) {
    const Step &step = graph_.steps[index];
    switch (step.kind) {
    case StepKind::Sequence:
      for (std::uint32_t child : step.children)
        runStep(child);
      return;
    case StepKind::Execute:
      return execute(step.index);
    case StepKind::Copy:
      return playCopyPlan(gpuCopyPlan(graph_.copies[step.index], graph_.buffers, arenaBase(),
                                      temporaryBase()));
    case StepKind::Nop:
      return;
    default:
      FAIL("the table runner runs sequences of compute sets and copies only");
    }
  }

private:
  // Block b of a launch runs its tile record's vertices in order; a MultiVertex on every worker.
  void execute(std::uint32_t c) {
    const GpuComputeSetTables &t = tables_[c];
    const auto *fields =
        reinterpret_cast<const FieldDesc *>(pointerAt(tableBase(c) + t.fieldsOffset));
    for (const GpuLaunch &launch : t.launches) {
      const auto *records =
          reinterpret_cast<const GpuTileRecord *>(pointerAt(tableBase(c) + launch.tilesOffset));
      const auto *vertices = reinterpret_cast<const GpuVertexRecord *>(
          pointerAt(tableBase(c) + launch.verticesOffset));
      const auto &classes = graph_.libraries[launch.library]->vertexTypes();
      for (std::size_t b = 0; b < launch.tiles.size(); ++b)
        for (unsigned v = records[b].begin; v < records[b].end; ++v) {
          const VertexTypeInfo &info = classes.at(vertices[v].type);
          const unsigned workers = info.isMultiVertex ? graph_.target.numWorkerContexts : 1;
          for (unsigned w = 0; w < workers; ++w)
            REQUIRE(info.entry(fields + vertices[v].firstField, w, workers) != 0);
        }
    }
  }

  const CompiledGraph &graph_;
  std::vector<std::uint8_t> arena_, temporary_;
  std::vector<std::uint32_t> typeIndices_;
  std::vector<std::vector<std::uint8_t>> tableMemory_;
  std::vector<GpuComputeSetTables> tables_;
};

// A graph with two codelet libraries, Vertex and MultiVertex, 2-D fields and non-contiguous
// fields (gathered and scattered), plus a strided copy.
struct MixedProgram {
  static constexpr std::size_t R = 6, C = 5;
  Graph g{Target::createGeneric(4)};
  Sequence program;

  MixedProgram() {
    g.addCodelets(progtest::kCodelets);
    g.addCodelets(aspen::test::codelet("graph_fields.cpp"));
    Tensor m = g.addVariable(FLOAT, {R, C}, "m");
    for (unsigned r = 0; r < R; ++r)
      g.setTileMapping(m[r], r % 4);
    Tensor outS = g.addVariable(FLOAT, {R, C}, "outS");
    g.setTileMapping(outS, 0);
    Tensor sq = g.addVariable(FLOAT, {C}, "sq");
    g.setTileMapping(sq, 1);
    Tensor sums = g.addVariable(FLOAT, {3}, "sums");
    g.setTileMapping(sums, 2);
    Tensor fk = g.addVariable(FLOAT, {}, "fk");
    g.setTileMapping(fk, 3);
    Tensor mt = g.addVariable(FLOAT, {C, R}, "mt");
    g.setTileMapping(mt, 2);

    ComputeSet cs = g.addComputeSet("mixed");
    for (unsigned j = 0; j < C; ++j) {
      VertexRef v = g.addVertex(cs, "Scale", {{"in", m.transpose()[j]},
                                              {"out", outS.slice(j, j + 1, 1).flatten()}});
      g.setInitialValue(v["factor"], 2.0f + float(j));
      g.setInitialValue(v["offset"], 0.5f);
      g.setTileMapping(v, j % 4);
    }
    g.setTileMapping(g.addVertex(cs, "SquareMulti", {{"in", m[1]}, {"out", sq}}), 1);
    VertexRef rows = g.addVertex(cs, "SumRows");
    g.connect(rows["rows"], {m[0], m.transpose()[1], m[4].reverse(0)});
    g.connect(rows["sums"], sums);
    g.setTileMapping(rows, 2);
    VertexRef kinds = g.addVertex(cs, "FieldKinds", {{"in", m[2]}, {"out", fk}});
    g.connect(kinds["rows"], {m[3], m.transpose()[4]});
    g.setInitialValue(kinds["small"], static_cast<unsigned char>(3));
    g.setInitialValue(kinds["scale"], 0.5f);
    g.setTileMapping(kinds, 1); // tile 1 runs vertices of both libraries
    program = Sequence({Execute(cs), Copy(m.transpose(), mt)});
    for (auto [name, t] : std::vector<std::pair<std::string, Tensor>>{
             {"m", m}, {"outS", outS}, {"sq", sq}, {"sums", sums}, {"fk", fk}, {"mt", mt}})
      progtest::hostAccess(g, name, t);
  }
};

} // namespace

TEST_CASE("GPU launch tables run a program exactly as the CPU executor does",
          "[correctness][gpu_lowering]") {
  MixedProgram p;
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> dist(-4, 4);
  std::vector<float> m(MixedProgram::R * MixedProgram::C);
  for (float &x : m)
    x = dist(rng);

  Engine reference(p.g, p.program);
  reference.load(Device::createModelDevice(p.g.getTarget()));
  progtest::writeIn(reference, "m", m);
  reference.run();

  const auto compiled = compile(p.g.state(), ArrayRef<Program>(&p.program, 1), {});
  TableRunner gpu(*compiled);
  gpu.write("m", m.data());
  gpu.runStep(compiled->programs[0]);

  for (auto [name, n] : std::vector<std::pair<std::string, std::size_t>>{
           {"outS", 30}, {"sq", 5}, {"sums", 3}, {"fk", 1}, {"mt", 30}, {"m", 30}}) {
    INFO("tensor " << name);
    const auto expected = progtest::readBack<float>(reference, name, n);
    const auto actual = gpu.read<float>(name + "-read");
    REQUIRE(actual.size() == n);
    for (std::size_t i = 0; i < n; ++i)
      REQUIRE(std::memcmp(&actual[i], &expected[i], sizeof(float)) == 0);
  }
  // And against values worked out independently, in double precision.
  const auto outS = gpu.read<float>("outS-read");
  for (std::size_t r = 0; r < MixedProgram::R; ++r)
    for (std::size_t j = 0; j < MixedProgram::C; ++j)
      REQUIRE(outS[r * MixedProgram::C + j] ==
              Approx(double(m[r * MixedProgram::C + j]) * (2.0 + double(j)) + 0.5).epsilon(1e-6));
  const auto mt = gpu.read<float>("mt-read");
  for (std::size_t r = 0; r < MixedProgram::R; ++r)
    for (std::size_t j = 0; j < MixedProgram::C; ++j)
      REQUIRE(mt[j * MixedProgram::R + r] == m[r * MixedProgram::C + j]);
}

TEST_CASE("GPU launch tables place every field and vertex as compiled",
          "[correctness][gpu_lowering]") {
  MixedProgram p;
  const auto compiled = compile(p.g.state(), ArrayRef<Program>(&p.program, 1), {});
  TableRunner gpu(*compiled);
  REQUIRE(compiled->libraries.size() == 2);
  const auto typeIndices = gpuVertexTypeIndices(*compiled);
  for (std::uint32_t c = 0; c < compiled->computeSets.size(); ++c) {
    const CompiledComputeSet &cs = compiled->computeSets[c];
    const GpuComputeSetTables &t = gpu.tables(c);
    const std::uint64_t tableBase = gpu.tableBase(c);
    INFO("compute set " << cs.name);

    // Every field: the compiled descriptor's arena offset and size; 2-D fields point at their
    // edges in the table's nested region, and each edge at its arena offset.
    auto checkDesc = [&](const FieldDesc &d, const DescTemplate &tpl) {
      REQUIRE(d.size == tpl.size);
      switch (tpl.base) {
      case DescTemplate::Arena:
        REQUIRE(addressOf(d.data) - gpu.arenaBase() ==
                compiled->buffers[tpl.buffer].offset + tpl.offset);
        break;
      case DescTemplate::Nested:
        REQUIRE(addressOf(d.data) ==
                tableBase + t.nestedOffset + tpl.offset * sizeof(FieldDesc));
        break;
      case DescTemplate::Null:
        REQUIRE(d.data == nullptr);
        break;
      }
    };
    const auto *fields = reinterpret_cast<const FieldDesc *>(pointerAt(tableBase + t.fieldsOffset));
    const auto *nested = reinterpret_cast<const FieldDesc *>(pointerAt(tableBase + t.nestedOffset));
    for (std::size_t f = 0; f < cs.fields.size(); ++f)
      checkDesc(fields[f], cs.fields[f]);
    for (std::size_t f = 0; f < cs.nested.size(); ++f)
      checkDesc(nested[f], cs.nested[f]);

    // Every vertex once, in the launch of its library, with its class and fields; each tile
    // record covers vertices of one tile in the order they were added to that tile.
    std::vector<int> seen(cs.vertices.size(), 0);
    for (const GpuLaunch &launch : t.launches) {
      std::uint32_t next = 0;
      for (const GpuTileRecord &record : launch.tiles) {
        REQUIRE(record.begin == next);
        REQUIRE(record.end > record.begin);
        next = record.end;
        for (std::uint32_t i = record.begin; i < record.end; ++i) {
          const std::uint32_t v = launch.computeSetVertex[i];
          ++seen[v];
          const CompiledVertex &vertex = cs.vertices[v];
          REQUIRE(vertex.tile == record.tile);
          REQUIRE(compiled->vertexTypes[vertex.type].library == launch.library);
          REQUIRE(launch.vertices[i].type == typeIndices[vertex.type]);
          const auto &classes = compiled->libraries[launch.library]->vertexTypes();
          REQUIRE(classes[launch.vertices[i].type].name == compiled->vertexTypes[vertex.type].name);
          REQUIRE(launch.vertices[i].firstField == vertex.firstField);
          if (i > record.begin)
            REQUIRE(launch.computeSetVertex[i - 1] < v);
        }
      }
      REQUIRE(next == launch.vertices.size());
    }
    REQUIRE(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  }
  // Both libraries are used by "mixed", and tile 1 has vertices of both.
  REQUIRE(gpu.tables(0).launches.size() == 2);
  // Its non-contiguous edges are gathered by Copy steps of their own.
  REQUIRE(std::any_of(compiled->copies.begin(), compiled->copies.end(),
                      [](const CopyPlan &p) { return p.rearranges; }));
}

TEST_CASE("GPU copy plans move every element like an element-wise copy",
          "[correctness][gpu_lowering]") {
  std::mt19937 rng(99);
  const std::vector<Buffer> buffers = {{BufferKind::Variable, "a", 4096, 0},
                                       {BufferKind::Variable, "b", 4096, 4096}};
  for (int trial = 0; trial < 200; ++trial) {
    INFO("trial " << trial);
    const std::uint32_t elementBytes = std::vector<std::uint32_t>{1, 2, 4, 8, 12}[rng() % 5];
    // Random runs of the same total length: contiguous, strided, reversed, single elements.
    const std::uint64_t n = 1 + rng() % 40;
    auto randomRegions = [&](std::uint32_t buffer) {
      RegionList regions;
      regions.elementBytes = elementBytes;
      regions.numElements = n;
      std::uint64_t left = n;
      std::int64_t offset = std::int64_t(rng() % 64) * elementBytes;
      while (left) {
        const std::uint64_t count = std::min<std::uint64_t>(left, 1 + rng() % 12);
        const int shape = int(rng() % 3);
        const std::int64_t stride = shape == 0 ? elementBytes
                                  : shape == 1 ? 3 * std::int64_t(elementBytes)
                                               : -std::int64_t(elementBytes);
        const std::int64_t first = stride < 0 ? offset + std::int64_t(count - 1) * elementBytes
                                              : offset;
        regions.runs.push_back({buffer, first, stride, count});
        offset += std::int64_t(count) * std::abs(stride) + std::int64_t(rng() % 3) * elementBytes;
        left -= count;
      }
      return regions;
    };
    CopyPlan plan{randomRegions(0), randomRegions(rng() % 2), false};
    plan.throughTemporary = plan.dst.runs[0].buffer == 0; // same buffer: may overlap

    std::vector<std::uint8_t> arena(8192), temporary(n * elementBytes);
    for (auto &b : arena)
      b = std::uint8_t(rng());
    // Element-wise reference: element i of src, read before anything is written.
    auto elementAddress = [&](const RegionList &r, std::uint64_t i) {
      for (const ByteRun &run : r.runs) {
        if (i < run.count)
          return buffers[run.buffer].offset +
                 std::uint64_t(run.offset + run.stride * std::int64_t(i));
        i -= run.count;
      }
      FAIL("element outside the region list");
      return std::uint64_t(0);
    };
    std::vector<std::uint8_t> expected = arena;
    for (std::uint64_t i = 0; i < n; ++i)
      std::memcpy(&expected[elementAddress(plan.dst, i)], &arena[elementAddress(plan.src, i)],
                  elementBytes);
    if (!plan.throughTemporary) {
      // Without a temporary, src and dst must not overlap: keep only such trials.
      std::vector<int> written(arena.size(), 0);
      bool overlaps = false;
      for (std::uint64_t i = 0; i < n; ++i)
        for (std::uint32_t b = 0; b < elementBytes; ++b)
          written[elementAddress(plan.dst, i) + b] = 1;
      for (std::uint64_t i = 0; i < n; ++i)
        for (std::uint32_t b = 0; b < elementBytes; ++b)
          overlaps |= written[elementAddress(plan.src, i) + b] != 0;
      if (overlaps)
        continue;
    }
    const GpuCopyPlan gpuPlan =
        gpuCopyPlan(plan, buffers, addressOf(arena.data()), addressOf(temporary.data()));
    REQUIRE(gpuPlan.stages.size() == (plan.throughTemporary ? 2u : 1u));
    playCopyPlan(gpuPlan);
    REQUIRE(arena == expected);
  }
}

TEST_CASE("GPU copy plans merge contiguous stretches into memcpys and cut long strided runs",
          "[correctness][gpu_lowering]") {
  const std::vector<Buffer> buffers = {{BufferKind::Variable, "a", 1 << 22, 0},
                                       {BufferKind::Variable, "b", 1 << 22, 1 << 22}};
  // Two adjacent contiguous runs to two adjacent contiguous runs: one memcpy.
  RegionList src{{{0, 0, 4, 100}, {0, 400, 4, 50}}, 4, 150};
  RegionList dst{{{1, 0, 4, 30}, {1, 120, 4, 120}}, 4, 150};
  GpuCopyPlan plan = gpuCopyPlan({src, dst, false}, buffers, 0x1000000, 0);
  REQUIRE(plan.stages.size() == 1);
  REQUIRE(plan.stages[0].segments.empty());
  REQUIRE(plan.stages[0].memcpys.size() == 1);
  CHECK(plan.stages[0].memcpys[0].bytes == 600);
  CHECK(plan.stages[0].memcpys[0].src == 0x1000000);
  CHECK(plan.stages[0].memcpys[0].dst == 0x1000000 + (1 << 22));

  // A strided run of 10000 elements: kernel segments of at most 4096 elements, 3 of them.
  RegionList column{{{0, 0, 64, 10000}}, 4, 10000};
  RegionList packed{{{1, 0, 4, 10000}}, 4, 10000};
  plan = gpuCopyPlan({column, packed, false}, buffers, 0, 0);
  REQUIRE(plan.stages[0].memcpys.empty());
  REQUIRE(plan.stages[0].segments.size() == 3);
  CHECK(plan.stages[0].segments[1].src == 4096 * 64);
  CHECK(plan.stages[0].segments[2].count == 10000 - 2 * 4096);

  // Short contiguous pieces among others stay in the kernel; a long one becomes a memcpy.
  RegionList mixedSrc{{{0, 0, 4, 16}, {0, 1000, 8, 4}, {0, 100000, 4, 20000}}, 4, 20020};
  RegionList mixedDst{{{1, 0, 4, 20020}}, 4, 20020};
  plan = gpuCopyPlan({mixedSrc, mixedDst, false}, buffers, 0, 0);
  REQUIRE(plan.stages[0].memcpys.size() == 1);
  CHECK(plan.stages[0].memcpys[0].bytes == 80000);
  CHECK(plan.stages[0].segments.size() == 2);
}
