// dist::World: the launch read from mpirun's (OpenMPI), PMI's and torchrun's variables; each
// rank's default share of a replicated graph; and an engine that would spread its replicas over
// a launch that cannot carry them (torchrun: no MPI) says so and what to do, rather than running
// a wrong share.
#include <aspen/Collectives.hpp>
#include <aspen/Device.hpp>
#include <aspen/Distributed.hpp>
#include <aspen/Engine.hpp>
#include <aspen/Error.hpp>
#include <aspen/Graph.hpp>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

using namespace aspen;

namespace {

const char *const kLaunchVariables[] = {
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_SIZE", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS",
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"};

// Clears every launch variable, sets `values`, and puts back what was there at the end.
class Launch {
public:
  explicit Launch(const std::map<std::string, std::string> &values) {
    for (const char *name : kLaunchVariables) {
      if (const char *old = std::getenv(name))
        saved_[name] = old;
      unsetenv(name);
    }
    for (const auto &[name, value] : values)
      setenv(name.c_str(), value.c_str(), 1);
  }
  ~Launch() {
    for (const char *name : kLaunchVariables) {
      const auto it = saved_.find(name);
      if (it == saved_.end())
        unsetenv(name);
      else
        setenv(name, it->second.c_str(), 1);
    }
  }

private:
  std::map<std::string, std::string> saved_;
};

void requireMessage(const std::function<void()> &f, const std::vector<std::string> &parts) {
  try {
    f();
    FAIL("no error");
  } catch (const error &e) {
    for (const std::string &part : parts) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(part) != std::string::npos);
    }
  }
}

} // namespace

TEST_CASE("dist::World reads the launch from mpirun's, PMI's and torchrun's variables",
          "[world]") {
  {
    const Launch none({});
    const dist::World w = dist::World::fromEnvironment();
    CHECK(w.rank() == 0);
    CHECK(w.size() == 1);
    CHECK(w.launcher().empty());
    CHECK_FALSE(w.hasMpi());
  }
  {
    const Launch ompi({{"OMPI_COMM_WORLD_RANK", "3"},
                       {"OMPI_COMM_WORLD_SIZE", "4"},
                       {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                       {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
    const dist::World w = dist::World::fromEnvironment();
    CHECK(w.rank() == 3);
    CHECK(w.size() == 4);
    CHECK(w.localRank() == 1);
    CHECK(w.localSize() == 2);
    CHECK(w.launcher() == "mpirun");
    CHECK(w.instanceIndex() == 3);
    CHECK(w.numInstances() == 4);
    CHECK(w.hasMpi() == dist::mpiBuilt());
    // Rank 3 of 4 runs the last two of 8 replicas.
    CHECK(w.localReplicas(8) == 2);
    CHECK(w.firstReplica(8) == 6);
    requireMessage([&] { (void)w.localReplicas(6); }, {"6 ways does not divide", "4 ranks"});
  }
  {
    const Launch pmi({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}});
    const dist::World w = dist::World::fromEnvironment();
    CHECK(w.rank() == 1);
    CHECK(w.size() == 2);
    CHECK(w.localRank() == 0);
    CHECK(w.localSize() == 1);
    CHECK(w.launcher() == "pmi");
  }
  {
    const Launch torchrun({{"RANK", "1"},
                           {"WORLD_SIZE", "2"},
                           {"LOCAL_RANK", "1"},
                           {"LOCAL_WORLD_SIZE", "2"}});
    const dist::World w = dist::World::fromEnvironment();
    CHECK(w.rank() == 1);
    CHECK(w.launcher() == "torchrun");
    CHECK_FALSE(w.hasMpi());
  }
}

TEST_CASE("dist::World refuses launch variables that are not a rank of the size", "[world]") {
  {
    const Launch bad({{"OMPI_COMM_WORLD_RANK", "two"}, {"OMPI_COMM_WORLD_SIZE", "4"}});
    requireMessage([] { dist::World::fromEnvironment(); },
                   {"OMPI_COMM_WORLD_RANK", "'two'", "not a whole number"});
  }
  {
    const Launch past({{"RANK", "2"}, {"WORLD_SIZE", "2"}});
    requireMessage([] { dist::World::fromEnvironment(); },
                   {"RANK = 2 is not a rank of WORLD_SIZE = 2"});
  }
  {
    const Launch local({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}, {"MPI_LOCALRANKID", "5"},
                        {"MPI_LOCALNRANKS", "2"}});
    requireMessage([] { dist::World::fromEnvironment(); }, {"MPI_LOCALRANKID = 5"});
  }
}

TEST_CASE("an engine whose replicas a launch without MPI would spread refuses, naming the "
          "launch and the way out",
          "[world]") {
  const Launch torchrun({{"RANK", "0"}, {"WORLD_SIZE", "2"}});
  Graph graph(Target::createGeneric(1), replication_factor(2));
  Tensor x = graph.addVariable(FLOAT, {4}, "x");
  graph.setTileMapping(x, 0);
  program::Sequence prog;
  collectives::allReduceInPlaceCrossReplica(graph, x, collectives::CollectiveOperator::ADD, prog);
  graph.createHostWrite("x", x);
  graph.createHostRead("x", x);
  requireMessage([&] { Engine e(graph, prog); },
                 {"rank 0 of 2 launched by torchrun", "aspen.collectives.transport=threads"});
  // Every replica in this process: the sum of both replicas' x.
  Engine e(graph, prog, {{"aspen.collectives.transport", "threads"}});
  e.load(Device::createCPUDevice());
  const std::vector<float> a{1, 2, 3, 4}, b{10, 20, 30, 40};
  e.writeTensor("x", 0, a.data(), a.data() + 4);
  e.writeTensor("x", 1, b.data(), b.data() + 4);
  e.run(0);
  std::vector<float> sum(4);
  e.readTensor("x", 1, sum.data(), sum.data() + 4);
  CHECK(sum == std::vector<float>{11, 22, 33, 44});
  // A graph of one replica is each process's own: nothing to spread.
  Graph single(Target::createGeneric(1));
  Tensor y = single.addVariable(FLOAT, {1}, "y");
  single.setTileMapping(y, 0);
  CHECK_NOTHROW(Engine(single, program::Sequence()));
  requireMessage(
      [&] { Engine bad(graph, prog, {{"aspen.collectives.transport", "carrier-pigeon"}}); },
      {"aspen.collectives.transport", "carrier-pigeon"});
  // Only the CUDA executor with NCCL runs collectives itself.
  Engine onDevice(graph, prog, {{"aspen.collectives.transport", "threads"},
                                {"aspen.collectives.onDevice", "true"}});
  requireMessage([&] { onDevice.load(Device::createCPUDevice()); },
                 {"aspen.collectives.onDevice is true", "cannot run its collectives itself"});
}

TEST_CASE("an MPI launch whose transport cannot be loaded says which file, why and what to do",
          "[world]") {
  // libaspen opens the MPI transport (libaspen_mpi.so) only for an engine over MPI; here it
  // points at a file that is not there. (A launch faked by its variables: nothing starts MPI.)
  const Launch mpirun({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                       {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  const char *old = std::getenv("ASPEN_MPI_PLUGIN");
  const std::string saved = old ? old : "";
  setenv("ASPEN_MPI_PLUGIN", "/nonexistent/libaspen_mpi.so", 1);
  Graph graph(Target::createGeneric(1), replication_factor(2));
  Tensor x = graph.addVariable(FLOAT, {4}, "x");
  graph.setTileMapping(x, 0);
  program::Sequence prog;
  collectives::allReduceInPlaceCrossReplica(graph, x, collectives::CollectiveOperator::ADD, prog);
  if (dist::mpiBuilt())
    requireMessage([&] { Engine e(graph, prog); },
                   {"spread over the ranks of an MPI launch", "/nonexistent/libaspen_mpi.so",
                    "cannot be loaded", "ASPEN_MPI_PLUGIN"});
  else
    requireMessage([&] { Engine e(graph, prog); }, {"built without MPI"});
  // Every replica in this process needs no MPI.
  CHECK_NOTHROW(Engine(graph, prog, {{"aspen.collectives.transport", "threads"}}));
  if (old)
    setenv("ASPEN_MPI_PLUGIN", saved.c_str(), 1);
  else
    unsetenv("ASPEN_MPI_PLUGIN");
}
