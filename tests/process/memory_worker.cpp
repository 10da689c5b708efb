// A process with a bounded address space (RLIMIT_AS) that runs out of host memory on purpose,
// for test_resource_limits.cpp: while building a graph, while compiling one and while loading
// one. Each must end in an aspen::graph_memory_allocation_error, after which the process frees
// what it built and compiles and runs a small graph correctly.
//
// Usage: aspen_memory_worker CODELET_FILE ADDRESS_SPACE_BYTES
// Prints one line per stage ("build: <message>", "compile: ...", "load: ...") and "ok" at the
// end; exits 0 then. Another exception (std::bad_alloc escaping, say) prints it and exits 4.
#include "OneVertex.hpp"

#include <aspen/Error.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <sys/resource.h>

using namespace aspen;

namespace {

// x += 1 by one AddOne vertex, run and read back: the process still works.
bool smallGraphRuns(const char *codelets) {
  return test::runOneVertex(codelets, "AddOne", "x", UNSIGNED_INT, 41u) == 42;
}

// Adds compute sets of AddOne vertices (each on its own element) until memory runs out, or
// until `most` vertices; returns how many it added.
std::size_t build(Graph &g, std::size_t most, program::Sequence *prog = nullptr) {
  Tensor x = g.addVariable(UNSIGNED_INT, {1 << 16}, "x");
  g.setTileMapping(x, 0);
  std::size_t vertices = 0;
  try {
    while (vertices < most) {
      ComputeSet cs = g.addComputeSet("cs");
      if (prog)
        prog->add(program::Execute(cs));
      for (unsigned i = 0; i < (1u << 16) && vertices < most; ++i, ++vertices) {
        VertexRef v = g.addVertex(cs, "AddOne");
        g.connect(v["x"], x[i]);
        g.setTileMapping(v, 0);
      }
    }
  } catch (const graph_memory_allocation_error &e) {
    std::printf("build: %s (after %zu vertices)\n", e.what(), vertices);
  }
  return vertices;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 3)
    return 2;
  const char *codelets = argv[1];
  return test::exitCodeOf([&] {
    // The codelets are compiled before the limit: the compiler is a process of its own.
    if (!smallGraphRuns(codelets))
      return 1;
    const rlim_t limit = std::strtoull(argv[2], nullptr, 10);
    const rlimit r{limit, limit};
    if (setrlimit(RLIMIT_AS, &r) != 0)
      return 2;

    std::size_t reached = 0;
    {
      auto g = std::make_unique<Graph>(Target::createGeneric(2));
      g->addCodelets(codelets);
      reached = build(*g, ~std::size_t(0));
    } // the full graph is freed here
    {
      // Half as many vertices fit; compiling them may not.
      Graph g(Target::createGeneric(2));
      g.addCodelets(codelets);
      program::Sequence prog;
      build(g, reached / 2, &prog);
      try {
        Executable exe = compileGraph(g, {prog});
        std::printf("compile: fits\n");
      } catch (const graph_memory_allocation_error &e) {
        std::printf("compile: %s\n", e.what());
      }
    }

    {
      // A variable larger than what is left: building it is cheap, loading it is not.
      Graph g(Target::createGeneric(64, 6, std::size_t(1) << 30));
      Tensor big =
          g.addVariable(FLOAT, {std::size_t(limit / 4)}, VariableMappingMethod::LINEAR, "big");
      g.createHostWrite("big", big);
      Engine e(g, program::Sequence{});
      try {
        e.load(Device::createCPUDevice());
        std::printf("load: no error\n");
      } catch (const graph_memory_allocation_error &e) {
        std::printf("load: %s\n", e.what());
      }
    }
    if (!smallGraphRuns(codelets))
      return 1;
    std::printf("ok\n");
    return 0;
  });
}
