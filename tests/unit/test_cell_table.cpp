// The recurrent cells' table (lib/nn/CellSteps.hpp), which drives the one forward and the one
// backward step builder: each row's products multiply every gate's block of the recurrent
// weights exactly once a step, forward and backward; a phase only reads a scratch an earlier
// phase writes; and every vertex it names is a codelet for FLOAT and HALF. The builders
// themselves are proved by the layers' tests (against the double models) and by the
// comparison with the loops they replaced (docs/recurrent.md, "One implementation").
#include "nn/CellSteps.hpp"

#include <aspen/Graph.hpp>
#include <aspen/Target.hpp>
#include <aspen/nn/Codelets.hpp>
#include <aspen/util/VertexTemplates.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace aspen;
using namespace aspen::nn::rnn::detail;

namespace {

const std::vector<CellKind> kKinds{CellKind::Lstm, CellKind::GruResetBefore,
                                   CellKind::GruResetAfter, CellKind::Vanilla};

// How many of the phases' products of the recurrent weights cover each gate.
std::vector<unsigned> gateCover(const CellTable &table, const std::vector<CellPhase> &phases) {
  std::vector<unsigned> cover(table.gates, 0);
  for (const CellPhase &phase : phases) {
    if (phase.product.rhs != ProductRhs::Recurrent)
      continue;
    REQUIRE(phase.product.firstGate < phase.product.endGate);
    REQUIRE(phase.product.endGate <= table.gates);
    for (unsigned g = phase.product.firstGate; g < phase.product.endGate; ++g)
      ++cover[g];
  }
  return cover;
}

} // namespace

TEST_CASE("every cell's table row multiplies each gate's weights once a step, both ways",
          "[unit][rnn]") {
  for (CellKind kind : kKinds) {
    const CellTable &table = cellTable(kind);
    INFO(table.name << " (kind " << static_cast<unsigned>(kind) << ")");
    REQUIRE(table.gates >= 1);
    REQUIRE_FALSE(table.forward.empty());
    REQUIRE_FALSE(table.backward.empty());
    CHECK(gateCover(table, table.forward) == std::vector<unsigned>(table.gates, 1));
    CHECK(gateCover(table, table.backward) == std::vector<unsigned>(table.gates, 1));
    // The backward's last product is the gradient reaching h_{t-1}.
    CHECK(table.backward.back().product.out == ProductOut::StateGrad);
  }
}

TEST_CASE("a cell's phases read only scratches that earlier phases write", "[unit][rnn]") {
  for (CellKind kind : kKinds) {
    const CellTable &table = cellTable(kind);
    INFO(table.name);
    // Forward: a product of the scratch reads the previous phase's cell output.
    CHECK(table.forward.front().product.lhs == ProductLhs::State);
    for (std::size_t i = 0; i < table.forward.size(); ++i) {
      const CellProduct &p = table.forward[i].product;
      CHECK(p.lhs != ProductLhs::DeltaX);
      CHECK(p.lhs != ProductLhs::DeltaH);
      CHECK((p.out == ProductOut::New || p.out == ProductOut::StepOutput));
    }
    // Backward: a product into the scratch feeds a later phase.
    for (std::size_t i = 0; i < table.backward.size(); ++i) {
      const CellProduct &p = table.backward[i].product;
      CHECK(p.lhs != ProductLhs::State);
      if (p.out == ProductOut::Scratch)
        CHECK(i + 1 < table.backward.size());
    }
  }
}

TEST_CASE("every vertex the table names is a codelet for float and half", "[unit][rnn]") {
  Graph graph(Target::createGeneric(1));
  nn::addCodelets(graph);
  ComputeSet cs = graph.addComputeSet("cells");
  for (CellKind kind : kKinds)
    for (const auto *phases : {&cellTable(kind).forward, &cellTable(kind).backward})
      for (const CellPhase &phase : *phases)
        for (Type type : {FLOAT, HALF}) {
          const std::string name = util::templateVertex(phase.vertex, type);
          INFO(name);
          CHECK_NOTHROW(graph.addVertex(cs, name));
        }
}
