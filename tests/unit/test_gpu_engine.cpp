// What the engine decides for the CUDA executor without a GPU: the control-flow option, and
// which program subtrees are device work only (run as CUDA graphs), with and without the
// collectives among them.
#include "compiler/Compiler.hpp"
#include "engine/DeviceSubtrees.hpp"
#include "engine/EngineOptions.hpp"
#include "executors/ExecutorRegistry.hpp"
#include "executors/cpu/CpuExecutor.hpp"
#include "executors/cuda/CudaExecutorOptions.hpp"

#include <aspen/Collectives.hpp>
#include <aspen/Error.hpp>
#include <aspen/Graph.hpp>
#include <aspen/Program.hpp>

#include <catch2/catch.hpp>

using namespace aspen;
using namespace aspen::program;
using namespace aspen::detail;

TEST_CASE("aspen.cuda.controlFlow selects graph or host-driven control flow",
          "[unit][gpu_engine]") {
  auto graphs = [](const OptionFlags &options) {
    return parseEngineOptions(options).executor<CudaExecutorOptions>("cuda").graphControlFlow;
  };
  CHECK(graphs({}));
  CHECK_FALSE(graphs({{"aspen.cuda.controlFlow", "host"}}));
  CHECK(graphs({{"aspen.cuda.controlFlow", "graph"}}));
  CHECK_THROWS_AS(parseEngineOptions({{"aspen.cuda.controlFlow", "sometimes"}}), invalid_option);
  CHECK_THROWS_WITH(parseEngineOptions({{"aspen.cuda.controlFlow", "sometimes"}}),
                    Catch::Contains("aspen.cuda.controlFlow") && Catch::Contains("sometimes") &&
                        Catch::Contains("graph, host"));
}

TEST_CASE("executors register by name with their devices and option prefix",
          "[unit][gpu_engine]") {
  const auto &executors = registeredExecutors();
  REQUIRE(executors.size() == 2);
  CHECK(executors[0].name == "cpu");
  CHECK(executors[1].name == "cuda");
  CHECK(&registeredExecutorFor(DeviceKind::Cpu) == &executors[0]);
  CHECK(&registeredExecutorFor(DeviceKind::Model) == &executors[0]);
  CHECK(&registeredExecutorFor(DeviceKind::Gpu) == &executors[1]);
  CHECK(executors[0].built);
  for (const RegisteredExecutor &b : executors) {
    INFO(b.name);
    CHECK(b.optionPrefix == "aspen." + b.name + ".");
    CHECK((b.make != nullptr) == b.built);
    CHECK(!b.built == !b.missing.empty());
  }
  // Every aspen.* key belongs to an executor's prefix, and the error for an unknown one lists
  // them all, whichever executors this build has.
  CHECK_THROWS_WITH(parseEngineOptions({{"aspen.cpu.thread", "2"}}),
                    Catch::Contains("aspen.cpu.thread'") && Catch::Contains("aspen.cpu.threads") &&
                        Catch::Contains("aspen.cpu.workerOrder") &&
                        Catch::Contains("aspen.cuda.controlFlow"));
  const EngineOptions o =
      parseEngineOptions({{"aspen.cpu.threads", "3"}, {"aspen.cpu.workerOrder", "reverse"}});
  CHECK(o.executor<CpuExecutorOptions>("cpu").threads == 3);
  CHECK(o.executor<CpuExecutorOptions>("cpu").reverseWorkers);
  CHECK(o.executor<CpuExecutorOptions>("cpu").inlineElements == 16384);
  CHECK(parseEngineOptions({{"aspen.cpu.inlineElements", "0"}})
            .executor<CpuExecutorOptions>("cpu")
            .inlineElements == 0);
  CHECK_THROWS_WITH(parseEngineOptions({{"aspen.cpu.inlineElements", "-1"}}),
                    Catch::Contains("aspen.cpu.inlineElements"));
}

namespace {

// The index of the first step of `kind` found walking down from `root`.
std::uint32_t findStep(const CompiledGraph &g, std::uint32_t root, StepKind kind) {
  if (g.steps[root].kind == kind)
    return root;
  for (std::uint32_t child : g.steps[root].children)
    if (const std::uint32_t found = findStep(g, child, kind); found != ~0u)
      return found;
  return ~0u;
}

} // namespace

TEST_CASE("device-only subtrees stop at host interaction", "[unit][gpu_engine]") {
  Graph g(Target::createGeneric(2));
  Tensor x = g.addVariable(INT, {}, "x");
  g.setTileMapping(x, 0);
  Tensor flag = g.addVariable(BOOL, {}, "flag");
  g.setTileMapping(flag, 1);
  Tensor y = g.addVariable(INT, {}, "y");
  g.setTileMapping(y, 1);
  const DataStream in = g.addHostToDeviceFIFO("in", INT, 1);

  // program 0: Repeat(If(flag, Copy x->y, Repeat(Copy y->x))) then a stream copy.
  // program 1: RepeatWhileTrue whose body prints.
  Program deviceLoop = Repeat(3, If(flag, Copy(x, y), Repeat(2, Copy(y, x))));
  Program withStream = Sequence({deviceLoop, Copy(in, x)});
  Program printing = RepeatWhileTrue(Sequence(), flag, Sequence({Copy(x, y), PrintTensor(y)}));
  const std::vector<Program> programs = {withStream, printing};
  const auto compiled = compile(g.state(), ArrayRef<Program>(programs), {});
  const auto deviceOnly = deviceOnlySteps(*compiled);

  const std::uint32_t root0 = compiled->programs[0], root1 = compiled->programs[1];
  CHECK_FALSE(deviceOnly[root0]); // holds a stream copy
  const std::uint32_t repeat = findStep(*compiled, root0, StepKind::Repeat);
  REQUIRE(repeat != ~0u);
  CHECK(deviceOnly[repeat]);
  CHECK(offeredAsDeviceSubtree(*compiled, deviceOnly, repeat));
  const std::uint32_t branch = findStep(*compiled, repeat, StepKind::If);
  REQUIRE(branch != ~0u);
  CHECK(deviceOnly[branch]);
  const std::uint32_t copy = findStep(*compiled, branch, StepKind::Copy);
  REQUIRE(copy != ~0u);
  CHECK(deviceOnly[copy]);
  CHECK_FALSE(offeredAsDeviceSubtree(*compiled, deviceOnly, copy)); // runs directly
  CHECK_FALSE(deviceOnly[findStep(*compiled, root0, StepKind::StreamToTensor)]);

  CHECK_FALSE(deviceOnly[root1]); // a loop that prints needs the host every iteration
  const std::uint32_t loop = findStep(*compiled, root1, StepKind::RepeatWhileTrue);
  REQUIRE(loop != ~0u);
  CHECK_FALSE(deviceOnly[loop]);
  CHECK(deviceOnly[findStep(*compiled, loop, StepKind::Copy)]);
}

TEST_CASE("collectives join device subtrees only where no conditional node is",
          "[unit][gpu_engine]") {
  Graph g(Target::createGeneric(2), replication_factor(1));
  Tensor x = g.addVariable(FLOAT, {4}, "x");
  g.setTileMapping(x, 0);
  Tensor y = g.addVariable(FLOAT, {4}, "y");
  g.setTileMapping(y, 1);
  using collectives::CollectiveOperator;
  const auto reduced = [&] { // x -> y, y all-reduced in place, y -> x
    Sequence s({Copy(x, y)});
    collectives::allReduceInPlaceCrossReplica(g, y, CollectiveOperator::ADD, s);
    s.add(Copy(y, x));
    return s;
  };
  // program 0: a sequence with a collective; program 1: a Repeat over one; program 2: a
  // sequence holding a Repeat of copies and a collective.
  Sequence both({Repeat(2, Sequence({Copy(x, y), Copy(y, x)}))});
  collectives::allReduceInPlaceCrossReplica(g, x, CollectiveOperator::MAX, both);
  const std::vector<Program> programs = {reduced(), Repeat(3, reduced()), both};
  const auto compiled = compile(g.state(), ArrayRef<Program>(programs), {});
  const std::uint32_t root0 = compiled->programs[0], root1 = compiled->programs[1],
                      root2 = compiled->programs[2];
  const std::uint32_t kernel0 = findStep(*compiled, root0, StepKind::Kernel);
  REQUIRE(kernel0 != ~0u);

  // Through the host (the CPU executor, or a GPU without NCCL): a collective is the engine's.
  const auto onHost = deviceOnlySteps(*compiled);
  CHECK_FALSE(onHost[kernel0]);
  CHECK_FALSE(onHost[root0]);
  CHECK(onHost[findStep(*compiled, root2, StepKind::Repeat)]);

  const auto onDevice = deviceOnlySteps(*compiled, true);
  CHECK(onDevice[kernel0]);
  CHECK_FALSE(offeredAsDeviceSubtree(*compiled, onDevice, kernel0)); // alone: runs directly
  CHECK(onDevice[root0]); // copies and the collective: one graph
  CHECK(offeredAsDeviceSubtree(*compiled, onDevice, root0));
  // A Repeat over a collective would be a conditional node around NCCL's work.
  const std::uint32_t repeat1 = findStep(*compiled, root1, StepKind::Repeat);
  REQUIRE(repeat1 != ~0u);
  CHECK_FALSE(onDevice[repeat1]);
  const std::uint32_t body1 = compiled->steps[repeat1].children[0];
  CHECK(onDevice[body1]); // each iteration's sequence is still one graph
  CHECK(offeredAsDeviceSubtree(*compiled, onDevice, body1));
  // A graph may not hold both a conditional node and NCCL's work: the sequence is split.
  CHECK_FALSE(onDevice[root2]);
  const std::uint32_t repeat2 = findStep(*compiled, root2, StepKind::Repeat);
  REQUIRE(repeat2 != ~0u);
  CHECK(onDevice[repeat2]);
  CHECK(offeredAsDeviceSubtree(*compiled, onDevice, repeat2));

  // The collective an engine arrives at before such a graph.
  const auto first = firstCollectives(*compiled);
  const std::uint32_t kernelIndex = compiled->steps[kernel0].index;
  CHECK(first[root0] == kernelIndex);
  CHECK(first[kernel0] == kernelIndex);
  CHECK(first[repeat2] == kNoCollective);
  CHECK(first[root2] != kNoCollective);
  CHECK(first[root2] != kernelIndex);
  CHECK(compiled->kernels[first[root2]].collective.op ==
        std::uint32_t(CollectiveOperator::MAX));
}
