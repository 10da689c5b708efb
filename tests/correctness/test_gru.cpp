// The GRU beyond what gru_layer checks against its host model: results do not depend on shards
// or code reuse (bit for bit) or on the weight-update cadence (within rounding), the
// realTimeSteps overloads equal lengths given through params, an AUGRU with zero attention is
// the GRU, gruWU equals the weight update of gruBwdWithWU, and the FLOP counts are the
// documented ones.
#include "test_nn_harness.hpp"

#include <aspen/nn/Gru.hpp>

using namespace aspen;
using namespace nntest;
namespace gru = aspen::nn::gru;

namespace {

struct GruRun {
  Values output, inputGrad, stateGrad, wiGrad, woGrad, bGrad, attGrad;
};

enum class Lengths { None, InParams, RealTimeSteps };

struct Case {
  bool resetAfter = false;
  OptionFlags options;
  Lengths lengths = Lengths::None;
  bool augru = false;
  bool separateWU = false; // gruBwd + gruWU instead of gruBwdWithWU
};

GruRun trainingStep(const Case &c) {
  const std::size_t T = 5, B = 3, I = 3, H = 4;
  Harness h(Target::createGeneric(4));
  Tensor lengths;
  if (c.lengths != Lengths::None) {
    lengths = h.graph.addVariable(UNSIGNED_INT, {B}, "lengths");
    h.graph.setTileMapping(lengths, 0);
    h.graph.createHostWrite("lengths", lengths);
  }
  gru::GruParams params = c.lengths == Lengths::InParams
                              ? gru::GruParams(FLOAT, B, T, lengths, {I, H})
                              : gru::GruParams(FLOAT, B, T, {I, H});
  params.resetAfter = c.resetAfter;
  params.cellOrder = {gru::BASIC_GRU_CELL_CANDIDATE, gru::BASIC_GRU_CELL_RESET_GATE,
                      gru::BASIC_GRU_CELL_UPDATE_GATE};
  const bool real = c.lengths == Lengths::RealTimeSteps;
  Tensor in = gru::createInput(h.graph, params, "in", c.options);
  Tensor init = gru::createInitialState(h.graph, params, "init", c.options);
  gru::GruWeights w = gru::createWeights(h.graph, params, "w", c.options);
  Tensor att = gru::createAttention(h.graph, params, "att", c.options);
  Tensor inter;
  Tensor out;
  if (c.augru)
    out = real ? gru::auGruFwd(h.graph, params, init, in, lengths, w, &inter, att, h.prog, "fwd",
                               c.options)
               : gru::auGruFwd(h.graph, params, init, in, w, &inter, att, h.prog, "fwd",
                               c.options);
  else
    out = real ? gru::gruFwd(h.graph, params, init, in, lengths, w, &inter, h.prog, "fwd",
                             c.options)
               : gru::gruFwd(h.graph, params, init, in, w, &inter, h.prog, "fwd", c.options);
  Tensor dy = h.graph.clone(out, "dy");
  Tensor dx, dAtt, bwdInter;
  gru::GruWeights dw;
  Tensor d0;
  if (c.separateWU) {
    d0 = gru::gruBwd(h.graph, params, h.prog, init, inter, w, in, out, dy, &dx, &bwdInter, "bwd",
                     c.options);
    dw = gru::gruWU(h.graph, params, h.prog, init, inter, bwdInter, w, in, out, "wu", c.options);
  } else if (c.augru) {
    d0 = real ? gru::auGruBwdWithWU(h.graph, params, h.prog, init, inter, w, in, lengths, out, dy,
                                    &dx, dw, att, &dAtt, "bwd", c.options)
              : gru::auGruBwdWithWU(h.graph, params, h.prog, init, inter, w, in, out, dy, &dx, dw,
                                    att, &dAtt, "bwd", c.options);
  } else {
    d0 = real ? gru::gruBwdWithWU(h.graph, params, h.prog, init, inter, w, in, lengths, out, dy,
                                  &dx, dw, "bwd", c.options)
              : gru::gruBwdWithWU(h.graph, params, h.prog, init, inter, w, in, out, dy, &dx, dw,
                                  "bwd", c.options);
  }
  const std::pair<const char *, Tensor> writes[] = {{"in", in}, {"h0", init},
                                                    {"wi", w.inputWeights},
                                                    {"wo", w.outputWeights},
                                                    {"b", w.biases},
                                                    {"dy", dy},
                                                    {"att", att}};
  for (const auto &[name, t] : writes)
    h.graph.createHostWrite(name, t);
  std::vector<std::pair<const char *, Tensor>> reads{{"out", out},  {"dx", dx},
                                                     {"dh0", d0},   {"dwi", dw.inputWeights},
                                                     {"dwo", dw.outputWeights},
                                                     {"db", dw.biases}};
  if (dAtt.valid())
    reads.emplace_back("datt", dAtt);
  for (const auto &[name, t] : reads)
    h.graph.createHostRead(name, t);
  Engine e(h.graph, h.prog, {{"aspen.cpu.threads", "3"}});
  e.load(aspen::test::deviceFor(h.graph.getTarget()));
  unsigned seed = 40;
  for (const auto &[name, t] : writes) {
    // The attention stays zero (AUGRU with a = 0 is the GRU) unless asked otherwise.
    const bool zero = std::string(name) == "att";
    const auto v = convert<float>(zero ? Values(t.numElements(), 0.0)
                                       : randomValues(t.numElements(), -1.0, 1.0, seed++));
    e.writeTensor(name, v.data(), v.data() + v.size());
  }
  if (c.lengths != Lengths::None) {
    const std::vector<unsigned> l{4, 0, 5};
    e.writeTensor("lengths", l.data(), l.data() + l.size());
  }
  e.run();
  std::map<std::string, Values> r;
  for (const auto &[name, t] : reads) {
    std::vector<float> v(t.numElements());
    e.readTensor(name, v.data(), v.data() + v.size());
    r[name] = widen(v);
  }
  return {r["out"], r["dx"], r["dh0"], r["dwi"], r["dwo"], r["db"], r["datt"]};
}

void requireSame(const GruRun &a, const GruRun &b) {
  CHECK(sameValues(a.output, b.output));
  CHECK(sameValues(a.inputGrad, b.inputGrad));
  CHECK(sameValues(a.stateGrad, b.stateGrad));
  CHECK(sameValues(a.wiGrad, b.wiGrad));
  CHECK(sameValues(a.woGrad, b.woGrad));
  CHECK(sameValues(a.bGrad, b.bGrad));
}

} // namespace

TEST_CASE("GRU results do not depend on shards, code reuse, the form of the lengths or the API",
          "[correctness][gru]") {
  const bool resetAfter = GENERATE(false, true);
  INFO("resetAfter " << resetAfter);
  Case base;
  base.resetAfter = resetAfter;
  base.lengths = Lengths::InParams;
  const GruRun ref = trainingStep(base);
  CHECK(ref.output != Values(ref.output.size(), 0.0)); // the layer ran
  for (const char *shards : {"3", "5"})
    for (const char *reuse : {"false", "true"}) {
      INFO("numShards " << shards << ", rnnCodeReuse " << reuse);
      Case c = base;
      c.options = {{"numShards", shards}, {"rnnCodeReuse", reuse}};
      requireSame(trainingStep(c), ref);
    }
  {
    INFO("realTimeSteps overloads");
    Case c = base;
    c.lengths = Lengths::RealTimeSteps;
    requireSame(trainingStep(c), ref);
  }
  {
    INFO("an AUGRU with zero attention is the GRU");
    Case c = base;
    c.augru = true;
    const GruRun r = trainingStep(c);
    requireSame(r, ref);
    CHECK(r.attGrad.size() == 3 * 5);
    // and with the weight update interleaved, the same attention gradient.
    c.options = {{"rnnStepsPerWU", "2"}};
    const GruRun ri = trainingStep(c);
    CHECK(sameValues(ri.attGrad, r.attGrad));
    requireClose(ri.woGrad, r.woGrad, 1e-6, 1e-5, "dWo (AUGRU, interleaved)");
  }
  for (const char *k : {"1", "2", "5"})
    for (const char *shards : {"1", "3"}) {
      // The weight update every k steps (5 = T: one pass) and the input gradient step by step:
      // other groupings of the same sums, equal within rounding.
      INFO("rnnStepsPerWU " << k << ", numShards " << shards);
      Case c = base;
      c.options = {{"rnnStepsPerWU", k}, {"numShards", shards}};
      const GruRun r = trainingStep(c);
      CHECK(sameValues(r.output, ref.output));
      CHECK(sameValues(r.stateGrad, ref.stateGrad));
      requireClose(r.inputGrad, ref.inputGrad, 1e-6, 1e-5, "dx");
      requireClose(r.wiGrad, ref.wiGrad, 1e-6, 1e-5, "dWi");
      requireClose(r.woGrad, ref.woGrad, 1e-6, 1e-5, "dWo");
      requireClose(r.bGrad, ref.bGrad, 1e-6, 1e-5, "db");
    }
  {
    INFO("gruBwd + gruWU give gruBwdWithWU's weight gradients");
    Case c = base;
    c.separateWU = true;
    requireSame(trainingStep(c), ref);
  }
}

TEST_CASE("GRU FLOP counts are the documented ones", "[correctness][gru]") {
  gru::GruParams p(FLOAT, 2, 3, {5, 7}); // T B = 6, I = 5, H = 7
  CHECK(gru::getBasicGruCellFwdFlops(p) == 6u * (2 * 21 * 12 + 21 + 28));
  CHECK(gru::getBasicGruCellBwdFlops(p) == 6u * (2 * 21 * 12 + 70));
  CHECK(gru::getBasicGruCellWuFlops(p) == 6u * (2 * 21 * 12 + 21));
  p.resetAfter = true;
  p.calcInputGradients = false;
  CHECK(gru::getBasicGruCellWuFlops(p) == 6u * (2 * 21 * 12 + 42));
  CHECK(gru::getBasicGruCellBwdFlops(p) == 6u * (2 * 21 * 7 + 70));
}
