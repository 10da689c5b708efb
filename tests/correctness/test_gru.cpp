// The GRU beyond what gru_layer checks against its host model: results do not depend on shards
// or code reuse (bit for bit) or on the weight-update cadence (within rounding), the
// realTimeSteps overloads equal lengths given through params, an AUGRU with zero attention is
// the GRU, gruWU equals the weight update of gruBwdWithWU, and the FLOP counts are the
// documented ones.
#include "test_nn_harness.hpp"

// The layer drivers' double-precision reference library (its host step reversal) and the GRU's
// double model (the activation clip's reference).
#include "rnnref/Gru.hpp"
#include "rnnref/Common.hpp"

#include <aspen/nn/Gru.hpp>

#include <sstream>
#include <tuple>

using namespace aspen;
using namespace nntest;
namespace gru = aspen::nn::gru;

namespace {

struct GruRun {
  Values output, inputGrad, stateGrad, wiGrad, woGrad, bGrad, attGrad;
};

enum class Lengths { None, InParams, RealTimeSteps };

struct Case {
  std::size_t T = 5, B = 3, I = 3, H = 4;
  Type type = FLOAT;
  unsigned tiles = 4, threads = 3;
  nn::NonLinearityType activation = nn::NonLinearityType::TANH;
  bool randomAttention = false; // else the attention is zero
  bool resetAfter = false;
  OptionFlags options;
  Lengths lengths = Lengths::None;
  bool augru = false;
  bool separateWU = false; // gruBwd + gruWU instead of gruBwdWithWU
  // The sequences (in, dy, att) are written and the results (out, dx, datt) read with each row's
  // steps reversed on the host (rnnref::reverseRowSteps, the drivers' model's): with the option
  // direction reverse, the forward layer's run.
  bool reverseOnHost = false;
  // The engine runs `runs` times, each after writing every input again: run r's data is data
  // set firstData + r (seeds 40 + 1000 (firstData + r) on). The last run's results return.
  unsigned runs = 1, firstData = 0;
  double activationClip = 0; // params.activationClip's threshold (0: none)
};

// The tensors of a training step's graph.
struct StepGraph {
  gru::GruParams params;
  Tensor lengths, in, init, att, out, dy, dx, dAtt, d0;
  gru::GruWeights w, dw;
};

// The forward pass the case asks for: its parameters, tensors and call.
StepGraph buildForward(Harness &h, const Case &c, Tensor &inter) {
  const std::size_t T = c.T, B = c.B, I = c.I, H = c.H;
  Tensor lengths;
  if (c.lengths != Lengths::None) {
    lengths = h.graph.addVariable(UNSIGNED_INT, {B}, "lengths");
    h.graph.setTileMapping(lengths, 0);
    h.graph.createHostWrite("lengths", lengths);
  }
  StepGraph s{c.lengths == Lengths::InParams ? gru::GruParams(c.type, B, T, lengths, {I, H})
                                             : gru::GruParams(c.type, B, T, {I, H})};
  gru::GruParams &params = s.params;
  s.lengths = lengths;
  params.resetAfter = c.resetAfter;
  params.activation = c.activation;
  params.activationClip = {c.activationClip > 0, c.activationClip};
  params.cellOrder = {gru::BASIC_GRU_CELL_CANDIDATE, gru::BASIC_GRU_CELL_RESET_GATE,
                      gru::BASIC_GRU_CELL_UPDATE_GATE};
  const bool real = c.lengths == Lengths::RealTimeSteps;
  s.in = gru::createInput(h.graph, params, "in", c.options);
  s.init = gru::createInitialState(h.graph, params, "init", c.options);
  s.w = gru::createWeights(h.graph, params, "w", c.options);
  s.att = gru::createAttention(h.graph, params, "att", c.options);
  if (c.augru)
    s.out = real ? gru::auGruFwd(h.graph, params, s.init, s.in, lengths, s.w, &inter, s.att,
                                 h.prog, "fwd", c.options)
                 : gru::auGruFwd(h.graph, params, s.init, s.in, s.w, &inter, s.att, h.prog,
                                 "fwd", c.options);
  else
    s.out = real ? gru::gruFwd(h.graph, params, s.init, s.in, lengths, s.w, &inter, h.prog,
                               "fwd", c.options)
                 : gru::gruFwd(h.graph, params, s.init, s.in, s.w, &inter, h.prog, "fwd",
                               c.options);
  s.dy = h.graph.clone(s.out, "dy");
  return s;
}

// The backward pass and weight update the case asks for, into s.
void buildBackward(Harness &h, const Case &c, const Tensor &inter, StepGraph &s) {
  const gru::GruParams &params = s.params;
  const bool real = c.lengths == Lengths::RealTimeSteps;
  Tensor bwdInter;
  if (c.separateWU && c.augru) {
    s.d0 = gru::auGruBwd(h.graph, params, h.prog, s.init, inter, s.w, s.in, s.out, s.dy, &s.dx,
                         &bwdInter, s.att, &s.dAtt, "bwd", c.options);
    s.dw = gru::auGruWU(h.graph, params, h.prog, s.init, inter, bwdInter, s.w, s.in, s.out, "wu",
                        c.options);
  } else if (c.separateWU) {
    s.d0 = gru::gruBwd(h.graph, params, h.prog, s.init, inter, s.w, s.in, s.out, s.dy, &s.dx,
                       &bwdInter, "bwd", c.options);
    s.dw = gru::gruWU(h.graph, params, h.prog, s.init, inter, bwdInter, s.w, s.in, s.out, "wu",
                      c.options);
  } else if (c.augru) {
    s.d0 = real ? gru::auGruBwdWithWU(h.graph, params, h.prog, s.init, inter, s.w, s.in,
                                      s.lengths, s.out, s.dy, &s.dx, s.dw, s.att, &s.dAtt, "bwd",
                                      c.options)
                : gru::auGruBwdWithWU(h.graph, params, h.prog, s.init, inter, s.w, s.in, s.out,
                                      s.dy, &s.dx, s.dw, s.att, &s.dAtt, "bwd", c.options);
  } else {
    s.d0 = real ? gru::gruBwdWithWU(h.graph, params, h.prog, s.init, inter, s.w, s.in, s.lengths,
                                    s.out, s.dy, &s.dx, s.dw, "bwd", c.options)
                : gru::gruBwdWithWU(h.graph, params, h.prog, s.init, inter, s.w, s.in, s.out,
                                    s.dy, &s.dx, s.dw, "bwd", c.options);
  }
}

// The rows' lengths the case writes (empty: T for every row).
std::vector<unsigned> rowLengthsOf(const Case &c) {
  if (c.lengths == Lengths::None)
    return {};
  std::vector<unsigned> rowLengths{4, 0, 5};
  for (std::size_t b = rowLengths.size(); b < c.B; ++b)
    rowLengths.push_back(static_cast<unsigned>(b % (c.T + 1)));
  rowLengths.resize(c.B);
  return rowLengths;
}

GruRun trainingStep(const Case &c) {
  const std::size_t T = c.T, B = c.B;
  Harness h(Target::createGeneric(c.tiles));
  Tensor inter;
  StepGraph s = buildForward(h, c, inter);
  buildBackward(h, c, inter, s);
  const std::pair<const char *, Tensor> writes[] = {
      {"in", s.in}, {"h0", s.init}, {"wi", s.w.inputWeights}, {"wo", s.w.outputWeights},
      {"b", s.w.biases}, {"dy", s.dy}, {"att", s.att}};
  for (const auto &[name, t] : writes)
    h.graph.createHostWrite(name, t);
  std::vector<std::pair<const char *, Tensor>> reads{{"out", s.out},  {"dx", s.dx},
                                                     {"dh0", s.d0},   {"dwi", s.dw.inputWeights},
                                                     {"dwo", s.dw.outputWeights},
                                                     {"db", s.dw.biases}};
  if (s.dAtt.valid())
    reads.emplace_back("datt", s.dAtt);
  for (const auto &[name, t] : reads)
    h.graph.createHostRead(name, t);
  Engine e(h.graph, h.prog, {{"aspen.cpu.threads", std::to_string(c.threads)},
                                {"aspen.cpu.inlineElements", "0"}});
  e.load(aspen::test::deviceFor(h.graph.getTarget()));
  const std::vector<unsigned> rowLengths = rowLengthsOf(c);
  const auto hostOrder = [&](const std::string &name, const Values &v) {
    const bool sequence = name == "in" || name == "dy" || name == "out" || name == "dx";
    const bool rows = name == "att" || name == "datt";
    if (!c.reverseOnHost || !(sequence || rows) || v.empty())
      return v;
    return rnnref::reverseRowSteps(v, rowLengths, T, B, rows);
  };
  for (unsigned run = 0; run < c.runs; ++run) {
    unsigned seed = 40 + 1000 * (c.firstData + run);
    for (const auto &[name, t] : writes) {
      // The attention stays zero (AUGRU with a = 0 is the GRU) unless asked otherwise.
      const bool att = std::string(name) == "att";
      const Values v = hostOrder(
          name, att && !c.randomAttention
                    ? Values(t.numElements(), 0.0)
                    : randomValues(t.numElements(), att ? 0.0 : -1.0, 1.0, seed++));
      Harness::write(e, name, c.type, v);
    }
    if (c.lengths != Lengths::None)
      e.writeTensor("lengths", rowLengths.data(), rowLengths.data() + rowLengths.size());
    e.run();
  }
  std::map<std::string, Values> r;
  for (const auto &[name, t] : reads)
    r[name] = hostOrder(name, Harness::read(e, name, c.type, t.numElements()));
  return {r["out"], r["dx"], r["dh0"], r["dwi"], r["dwo"], r["db"], r["datt"]};
}

// The training step trainingStep(c) computes (one run, tanh, lengths none or in params), from
// the same data rounded to the type, through the double-precision model
// (tools/rnnref/Gru.hpp).
GruRun referenceStep(const Case &c) {
  gruref::GruModel m;
  m.T = c.T, m.B = c.B, m.I = c.I, m.H = c.H;
  m.cellOrder = {gruref::kCandidate, gruref::kReset, gruref::kUpdate}; // trainingStep's order
  m.resetAfter = c.resetAfter;
  m.activationClip = c.activationClip;
  if (c.lengths != Lengths::None)
    m.timeSteps = {4, 0, 5};
  unsigned seed = 40 + 1000 * c.firstData;
  const auto next = [&](std::size_t n, double lo) {
    const Values v = randomValues(n, lo, 1.0, seed++);
    return c.type == HALF ? widen(convert<half>(v)) : widen(convert<float>(v));
  };
  gruref::GruData d;
  d.input = next(c.T * c.B * c.I, -1.0);
  d.initialOutput = next(c.B * c.H, -1.0);
  d.inputWeights = next(3 * c.I * c.H, -1.0);
  d.outputWeights = next(3 * c.H * c.H, -1.0);
  d.biases = next(m.biasesSize(), -1.0);
  const Values dy = next(m.outputSize(), -1.0);
  if (c.augru)
    d.attention = c.randomAttention ? next(c.B * c.T, 0.0) : Values(c.B * c.T, 0.0);
  const gruref::GruForward f = gruref::forward(m, d);
  const gruref::GruGrads g = gruref::backward(m, d, f, dy);
  return {f.output,           g.inputGrad,        g.initialOutputGrad, g.inputWeightsGrad,
          g.outputWeightsGrad, g.biasesGrad,       g.attentionGrad};
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

// The fused loops pack the weights once (program::Cached) and again only when they are written:
// an engine run again on new weights gives the bits of a fresh engine run on them, forward and
// backward, in both forms and the AUGRU. Stale packed weights would give the first data set's
// products.
TEST_CASE("the fused GRU packs its weights again when they are written again",
          "[correctness][gru]") {
  Case c;
  c.B = 5;
  c.H = 21;
  c.options = {{"stepMethod", "fused"}};
  c.resetAfter = GENERATE(false, true);
  c.augru = GENERATE(false, true);
  c.randomAttention = c.augru;
  INFO("resetAfter " << c.resetAfter << ", AUGRU " << c.augru);
  const GruRun first = trainingStep(c);
  Case second = c;
  second.firstData = 1;
  const GruRun fresh = trainingStep(second);
  Case again = c;
  again.runs = 2;
  const GruRun reused = trainingStep(again);
  requireSame(reused, fresh);
  CHECK(sameValues(reused.attGrad, fresh.attGrad));
  CHECK_FALSE(sameValues(first.output, fresh.output));
  CHECK_FALSE(sameValues(first.inputGrad, fresh.inputGrad));
}

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

// direction reverse: each row runs from its own last step back to step 0, which is the forward
// layer run on the rows' steps reversed (on the host here, so the reversal is checked too):
// the same bits, sequences, state and weight gradients, through every entry point and loop form.
TEST_CASE("a reverse GRU is the forward GRU on each row's steps reversed, bit for bit",
          "[correctness][gru]") {
  struct Variant {
    const char *what;
    Lengths lengths;
    bool augru, separateWU, resetAfter;
    OptionFlags options;
  };
  const Variant variants[] = {
      {"lengths in params", Lengths::InParams, false, false, false, {}},
      {"every row T steps", Lengths::None, false, false, true, {}},
      {"AUGRU", Lengths::InParams, true, false, true, {}},
      {"auGruBwd + auGruWU", Lengths::InParams, true, true, false, {}},
      {"gruBwd + gruWU", Lengths::InParams, false, true, false, {}},
      {"product then cell, 3 shards", Lengths::InParams, false, false, true,
       {{"stepMethod", "productThenCell"}, {"numShards", "3"}}},
      {"persistent", Lengths::InParams, false, false, false, {{"rnnPersistentKernel", "true"}}},
  };
  for (const Variant &v : variants) {
    INFO(v.what);
    Case forward;
    forward.lengths = v.lengths;
    forward.augru = v.augru;
    forward.randomAttention = v.augru;
    forward.separateWU = v.separateWU;
    forward.resetAfter = v.resetAfter;
    forward.options = v.options;
    Case reverse = forward;
    reverse.options.set("direction", "reverse");
    reverse.reverseOnHost = true;
    const GruRun a = trainingStep(forward), b = trainingStep(reverse);
    CHECK(a.output != Values(a.output.size(), 0.0)); // the layer ran
    requireSame(b, a);
    CHECK(sameValues(b.attGrad, a.attGrad));
  }
  {
    INFO("realTimeSteps: refused in reverse (the weight update could not pair the steps)");
    Case c;
    c.lengths = Lengths::RealTimeSteps;
    c.options = {{"direction", "reverse"}};
    CHECK_THROWS_WITH(trainingStep(c), Catch::Matchers::Contains("gru::gruFwd: direction reverse "
                                                                 "takes the lengths in params"));
  }
  // The option's values: bidirectional is two calls, and anything else is refused by name.
  for (const char *bad : {"bidirectional", "backward"}) {
    Harness h(Target::createGeneric(2));
    gru::GruParams params(FLOAT, 2, 3, {2, 2});
    CHECK_THROWS_WITH(gru::createInput(h.graph, params, "in", {{"direction", bad}}),
                      Catch::Matchers::Contains("direction") &&
                          Catch::Matchers::Contains("forward or reverse"));
  }
}

// The fused forward loop (stepMethod fused: Wo packed once a run, the products fused with the
// cells, one compute set a step with resetAfter, two without) against the product-then-cell
// steps, on a shape whose blocks of 16 units and rows have tails (H = 37: 16 + 16 + 5 units;
// B = 11 rows: on the host a pass of 8 and one of 3, which AVX2 and the baseline take as 4, 4
// and 3).
// The absolute bound of the fused and persistent forms against product-then-cell (see the
// fused test's comment for the measurements).
namespace {
double floatOrHalfAbs(const Case &c) { return c.type == FLOAT ? (c.augru ? 4e-4 : 1e-5) : 4e-3; }
} // namespace

TEST_CASE("the fused GRU steps give the product-then-cell results within rounding, and the same "
          "bits on any split of tiles, threads and shards",
          "[correctness][gru]") {
  Case c;
  c.T = 5;
  c.B = 11;
  c.H = 37;
  c.type = GENERATE(FLOAT, HALF);
  c.resetAfter = GENERATE(false, true);
  c.lengths = GENERATE(Lengths::None, Lengths::InParams);
  c.augru = GENERATE(false, true);
  c.randomAttention = c.augru;
  c.activation = c.augru ? nn::NonLinearityType::GELU : nn::NonLinearityType::TANH;
  INFO(c.type.toString() << ", resetAfter " << c.resetAfter << ", lengths "
                         << (c.lengths != Lengths::None) << ", AUGRU (GELU) " << c.augru);
  c.options = {{"stepMethod", "productThenCell"}};
  const GruRun reference = trainingStep(c);
  c.options = {{"stepMethod", "fused"}};
  const GruRun fused = trainingStep(c);
  // Sums of 37 products in another order (with FMA on AVX hosts): float within a few ulp a
  // step, grown by 5 steps forward and back (the AUGRU with GELU grows it most: 1.3e-5
  // absolute in dh0 of 11 rows, 5e-6 in dWo and 6e-5 relative in d(attention) measured with
  // OpenBLAS's own kernels for the CPU, 2e-4 in dh0 with its Haswell kernels on AMD Zen 5
  // (OPENBLAS_CORETYPE=Haswell, set on such machines), with weights in [-1, 1], so
  // pre-activations of 3 and more; against gru_layer's double model the fused and the unfused
  // forms are off by as much as each other); half rounds each product to half before the cell,
  // as both forms do. A wrong gate, unit or step is off by 1e-1 and more.
  const double abs = floatOrHalfAbs(c), rel = c.type == FLOAT ? 1e-4 : 1e-2;
  requireClose(fused.output, reference.output, abs, rel, "output");
  requireClose(fused.inputGrad, reference.inputGrad, abs, rel, "dx");
  requireClose(fused.stateGrad, reference.stateGrad, abs, rel, "dh0");
  requireClose(fused.wiGrad, reference.wiGrad, abs, rel, "dWi");
  requireClose(fused.woGrad, reference.woGrad, abs, rel, "dWo");
  requireClose(fused.bGrad, reference.bGrad, abs, rel, "db");
  if (c.augru)
    requireClose(fused.attGrad, reference.attGrad, abs, rel, "d(attention)");
  CHECK(fused.output != Values(fused.output.size(), 0.0)); // the layer ran
  CHECK(fused.woGrad != Values(fused.woGrad.size(), 0.0));
  // Each forward output is one worker's sum in one order: other tiles, threads and shards
  // (two shards: steps 0-2 and 3-4, one starting at an odd step) give the same forward bits.
  for (const auto &[tiles, threads, shards] :
       {std::tuple{1u, 1u, "1"}, std::tuple{3u, 2u, "2"}, std::tuple{16u, 3u, "3"}}) {
    INFO(tiles << " tiles, " << threads << " threads, " << shards << " shards");
    Case split = c;
    split.tiles = tiles;
    split.threads = threads;
    split.options = {{"stepMethod", "fused"}, {"numShards", shards}};
    CHECK(sameValues(trainingStep(split).output, fused.output));
  }
}

// The persistent loops (rnnPersistentKernel true: each loop one co-resident launch,
// GruPersistentFwd and GruPersistentBwd, two exchanges a step without resetAfter) against the
// per-step path, in both forms and the AUGRU, forward and backward; and bit for bit against
// themselves on other launch shapes and host threads.
TEST_CASE("the persistent GRU loops give the per-step results within rounding, and the same "
          "bits on any launch shape and host threads",
          "[correctness][gru][persistent]") {
  Case c;
  c.T = 5;
  c.B = 11;
  c.H = 37;
  c.type = GENERATE(FLOAT, HALF);
  c.resetAfter = GENERATE(false, true);
  c.lengths = GENERATE(Lengths::None, Lengths::InParams);
  c.augru = GENERATE(false, true);
  c.randomAttention = c.augru;
  c.activation = c.augru ? nn::NonLinearityType::GELU : nn::NonLinearityType::TANH;
  INFO(c.type.toString() << ", resetAfter " << c.resetAfter << ", lengths "
                         << (c.lengths != Lengths::None) << ", AUGRU (GELU) " << c.augru);
  c.options = {{"stepMethod", "productThenCell"}};
  const GruRun reference = trainingStep(c);
  c.options = {{"rnnPersistentKernel", "true"}};
  const GruRun persistent = trainingStep(c);
  // Bounds as the fused step's: the recurrent sums of 37 products in another order.
  const double abs = floatOrHalfAbs(c), rel = c.type == FLOAT ? 1e-4 : 1e-2;
  requireClose(persistent.output, reference.output, abs, rel, "output");
  requireClose(persistent.inputGrad, reference.inputGrad, abs, rel, "dx");
  requireClose(persistent.stateGrad, reference.stateGrad, abs, rel, "dh0");
  requireClose(persistent.woGrad, reference.woGrad, abs, rel, "dWo");
  requireClose(persistent.bGrad, reference.bGrad, abs, rel, "db");
  if (c.augru)
    requireClose(persistent.attGrad, reference.attGrad, abs, rel, "d(attention)");
  CHECK(persistent.output != Values(persistent.output.size(), 0.0));
  for (const auto &[blocks, threads, hostThreads] :
       {std::tuple{1u, 32u, 1u}, std::tuple{5u, 3u, 2u}, std::tuple{37u, 64u, 3u},
        std::tuple{50u, 1u, 2u}}) {
    INFO(blocks << " blocks of " << threads << " threads on " << hostThreads << " host threads");
    Case shaped = c;
    shaped.threads = hostThreads;
    shaped.options = {{"rnnPersistentKernel", "true"},
                      {"rnnPersistentBlocks", std::to_string(blocks)},
                      {"rnnPersistentThreadsPerBlock", std::to_string(threads)}};
    const GruRun r = trainingStep(shaped);
    CHECK(sameValues(r.output, persistent.output));
    // The backward's gate gradients and dh0 too; the weight gradients are library products
    // planned per engine, d(attention) a reduction over units: both the same here as well.
    CHECK(sameValues(r.stateGrad, persistent.stateGrad));
    CHECK(sameValues(r.woGrad, persistent.woGrad));
    CHECK(sameValues(r.attGrad, persistent.attGrad));
  }
}

// The tensor variant (rnnPersistentArithmetic tensor: the recurrent products by
// Block::mmaF16) in half against the per-step path, both forms and the AUGRU, forward and
// backward; the same bits on other host threads for one launch, within rounding across
// launches (which split the products' k slices differently).
TEST_CASE("the persistent GRU loops' tensor variant gives the per-step results within rounding",
          "[correctness][gru][persistent]") {
  Case c;
  c.T = 5;
  c.B = 11;
  c.H = 37;
  c.type = HALF;
  c.resetAfter = GENERATE(false, true);
  c.lengths = GENERATE(Lengths::None, Lengths::InParams);
  c.augru = GENERATE(false, true);
  c.randomAttention = c.augru;
  c.activation = c.augru ? nn::NonLinearityType::GELU : nn::NonLinearityType::TANH;
  INFO("resetAfter " << c.resetAfter << ", lengths " << (c.lengths != Lengths::None)
                     << ", AUGRU (GELU) " << c.augru);
  c.options = {{"stepMethod", "productThenCell"}};
  const GruRun reference = trainingStep(c);
  const double abs = floatOrHalfAbs(c), rel = 1e-2;
  auto close = [&](const GruRun &got) {
    requireClose(got.output, reference.output, abs, rel, "output");
    requireClose(got.inputGrad, reference.inputGrad, abs, rel, "dx");
    requireClose(got.stateGrad, reference.stateGrad, abs, rel, "dh0");
    requireClose(got.woGrad, reference.woGrad, abs, rel, "dWo");
    requireClose(got.bGrad, reference.bGrad, abs, rel, "db");
    if (c.augru)
      requireClose(got.attGrad, reference.attGrad, abs, rel, "d(attention)");
  };
  for (const auto &[blocks, threads] :
       {std::pair{0u, 0u}, std::pair{1u, 32u}, std::pair{1u, 64u}, std::pair{5u, 128u},
        std::pair{37u, 32u}}) {
    // One block of one warp holds 21 fragments of its first product (12 in registers) and 9
    // of the candidate's or reset's (4): the rest staged in shared memory.
    INFO(blocks << " blocks of " << threads << " threads (0: the builder's)");
    Case shaped = c;
    shaped.options = {{"rnnPersistentKernel", "true"},
                      {"rnnPersistentArithmetic", "tensor"},
                      {"rnnPersistentBlocks", std::to_string(blocks)},
                      {"rnnPersistentThreadsPerBlock", std::to_string(threads)}};
    shaped.threads = 1;
    const GruRun one = trainingStep(shaped);
    close(one);
    CHECK(one.output != Values(one.output.size(), 0.0));
    shaped.threads = 2;
    const GruRun two = trainingStep(shaped);
    CHECK(sameValues(two.output, one.output));
    CHECK(sameValues(two.stateGrad, one.stateGrad));
    CHECK(sameValues(two.woGrad, one.woGrad));
  }
}

// Inference with the final output alone, fused against product-then-cell (the scratch
// intermediates of one step, the final h copied out of its buffer).
TEST_CASE("the fused GRU loop keeps the final output alone in inference", "[correctness][gru]") {
  const std::size_t T = 6, B = 2, I = 3, H = 20;
  const bool resetAfter = GENERATE(false, true);
  INFO("resetAfter " << resetAfter);
  auto run = [&](const char *stepMethod, const char *shards) {
    Harness h(Target::createGeneric(2));
    gru::GruParams params(FLOAT, B, T, {I, H});
    params.resetAfter = resetAfter;
    params.outputFullSequence = false;
    const OptionFlags options{{"inferenceOnly", "true"}, {"stepMethod", stepMethod},
                              {"numShards", shards}};
    Tensor in = gru::createInput(h.graph, params, "in", options);
    Tensor init = gru::createInitialState(h.graph, params, "init", options);
    gru::GruWeights w = gru::createWeights(h.graph, params, "w", options);
    Tensor out = gru::gruFwd(h.graph, params, init, in, w, nullptr, h.prog, "fwd", options);
    REQUIRE(out.shape() == std::vector<std::size_t>{B, H});
    const std::pair<const char *, Tensor> writes[] = {{"in", in}, {"h0", init},
                                                      {"wi", w.inputWeights},
                                                      {"wo", w.outputWeights}, {"b", w.biases}};
    for (const auto &[name, t] : writes)
      h.graph.createHostWrite(name, t);
    h.output("out", out);
    Engine e(h.graph, h.prog);
    e.load(aspen::test::deviceFor(h.graph.getTarget()));
    unsigned seed = 90;
    for (const auto &[name, t] : writes) {
      const auto v = convert<float>(randomValues(t.numElements(), -1.0, 1.0, seed++));
      e.writeTensor(name, v.data(), v.data() + v.size());
    }
    e.run();
    std::vector<float> v(B * H);
    e.readTensor("out", v.data(), v.data() + v.size());
    return widen(v);
  };
  const Values reference = run("productThenCell", "1");
  const Values fused = run("fused", "1");
  requireClose(fused, reference, 2e-6, 2e-5, "final output");
  CHECK(fused != Values(B * H, 0.0));
  CHECK(sameValues(run("fused", "4"), fused));
}

TEST_CASE("stepMethod auto fuses the GRU's steps for small batches on the CPU targets",
          "[correctness][gru]") {
  // The compiled graph's vertex types (the profile summary lists them) include the fused
  // step's exactly when the steps are fused.
  auto fusedOn = [](const Target &target, std::size_t batch, const OptionFlags &options = {},
                    std::size_t H = 8, std::size_t T = 3) {
    Graph graph(target);
    nn::addCodelets(graph);
    gru::GruParams params(FLOAT, batch, T, {4, H});
    Tensor in = gru::createInput(graph, params, "in", options);
    Tensor init = gru::createInitialState(graph, params, "init", options);
    gru::GruWeights w = gru::createWeights(graph, params, "w", options);
    program::Sequence prog;
    gru::gruFwd(graph, params, init, in, w, nullptr, prog, "fwd", options);
    Engine e(graph, prog);
    std::ostringstream summary;
    e.printProfileSummary(summary);
    const bool fused = summary.str().find("GruFusedFwd") != std::string::npos;
    CHECK(fused == (summary.str().find("GruCellA") == std::string::npos));
    return fused;
  };
  const OptionFlags inference{{"inferenceOnly", "true"}};
  CHECK(fusedOn(Target::createGeneric(2), 2, inference));
  CHECK(fusedOn(Target::createModel("ipu2", 16), 4, inference));
  CHECK(fusedOn(Target::createGeneric(2), 16, inference));
  CHECK(fusedOn(Target::createGeneric(2), 64, inference));
  CHECK_FALSE(fusedOn(Target::createGeneric(2), 65, inference));
  // One row: in inference always (the packing runs once for fixed weights); otherwise when
  // enough steps pay for packing every run (T >= 3 H^2 x 1.1 ns / 30 us: 8 at H = 256).
  const Target roomy = Target::createGeneric(2, 1, std::size_t(64) << 20);
  CHECK(fusedOn(roomy, 1, inference, 256, 7));
  CHECK(fusedOn(roomy, 1, inference, 512, 20));
  CHECK(fusedOn(roomy, 1, {}, 256, 8));
  CHECK_FALSE(fusedOn(roomy, 1, {}, 256, 7));
  // On a GPU target the persistent kernel is off here: the per-step path's choice is tested.
  OptionFlags gpuInference = inference;
  gpuInference.set("rnnPersistentKernel", "false");
  CHECK_FALSE(fusedOn(Target::createModel("h200"), 2, gpuInference));
  CHECK(fusedOn(Target::createModel("h200"), 2,
                {{"inferenceOnly", "true"}, {"stepMethod", "fused"},
                 {"rnnPersistentKernel", "false"}}));
  CHECK_FALSE(fusedOn(Target::createGeneric(2), 2,
                      {{"inferenceOnly", "true"}, {"stepMethod", "productThenCell"}}));
}

TEST_CASE("the GRU's and AUGRU's backward loops are fused where every step's gate gradients "
          "are kept",
          "[correctness][gru]") {
  auto fusedBwd = [](bool resetAfter, bool augru, const OptionFlags &options) {
    Graph graph(Target::createGeneric(2));
    nn::addCodelets(graph);
    gru::GruParams params(FLOAT, 2, 4, {3, 8});
    params.resetAfter = resetAfter;
    Tensor in = gru::createInput(graph, params, "in", options);
    Tensor init = gru::createInitialState(graph, params, "init", options);
    gru::GruWeights w = gru::createWeights(graph, params, "w", options);
    Tensor att = gru::createAttention(graph, params, "att", options);
    program::Sequence prog;
    Tensor inter, dx, dAtt;
    gru::GruWeights dw;
    if (augru) {
      Tensor out = gru::auGruFwd(graph, params, init, in, w, &inter, att, prog, "fwd", options);
      gru::auGruBwdWithWU(graph, params, prog, init, inter, w, in, out, graph.clone(out, "dy"),
                          &dx, dw, att, &dAtt, "bwd", options);
    } else {
      Tensor out = gru::gruFwd(graph, params, init, in, w, &inter, prog, "fwd", options);
      gru::gruBwdWithWU(graph, params, prog, init, inter, w, in, out, graph.clone(out, "dy"),
                        &dx, dw, "bwd", options);
    }
    Engine e(graph, prog);
    std::ostringstream summary;
    e.printProfileSummary(summary);
    const bool fused = summary.str().find("GruFusedBwd") != std::string::npos;
    CHECK(fused == (summary.str().find("aspen::nn::GruBwd") == std::string::npos));
    return fused;
  };
  CHECK(fusedBwd(true, false, {}));
  CHECK(fusedBwd(true, false, {{"numShards", "2"}}));
  CHECK(fusedBwd(false, false, {})); // two compute sets a step (phases 1 and 2)
  CHECK(fusedBwd(false, true, {}));  // the AUGRU: d(a) summed over the blocks after the loop
  CHECK(fusedBwd(true, true, {}));
  // The weight update interleaved (only a window of gate gradients kept): the unfused loop.
  CHECK_FALSE(fusedBwd(true, false, {{"rnnStepsPerWU", "1"}}));
  CHECK_FALSE(fusedBwd(true, false, {{"stepMethod", "productThenCell"}}));
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

TEST_CASE("ONNX's activation clip on the GRU and AUGRU (activationClip) matches the "
          "double-precision model",
          "[correctness][gru][clip]") {
  for (bool resetAfter : {false, true})
    for (bool augru : {false, true})
      for (const OptionFlags &options :
           {OptionFlags{}, OptionFlags{{"numShards", "3"}, {"rnnCodeReuse", "true"}},
            OptionFlags{{"rnnStepsPerWU", "2"}}}) {
        for (bool separateWU : {false, true}) {
          INFO("resetAfter " << resetAfter << ", AUGRU " << augru << ", separate WU "
                             << separateWU << ", options " << options.size());
          Case c;
          c.resetAfter = resetAfter;
          c.augru = augru;
          c.randomAttention = augru;
          c.separateWU = separateWU;
          c.lengths = Lengths::InParams;
          c.options = options;
          c.activationClip = 0.4; // clips about half of this data's pre-activations
          const GruRun got = trainingStep(c), want = referenceStep(c);
          requireClose(got.output, want.output, 1e-5, 1e-4, "output");
          requireClose(got.inputGrad, want.inputGrad, 1e-5, 1e-4, "dx");
          requireClose(got.stateGrad, want.stateGrad, 1e-5, 1e-4, "dh0");
          requireClose(got.wiGrad, want.wiGrad, 1e-5, 1e-4, "dWi");
          requireClose(got.woGrad, want.woGrad, 1e-5, 1e-4, "dWo");
          requireClose(got.bGrad, want.bGrad, 1e-5, 1e-4, "db");
          if (augru && !separateWU)
            requireClose(got.attGrad, want.attGrad, 1e-5, 1e-4, "d(attention)");
        }
      }
  SECTION("reverse, half") {
    Case c;
    c.resetAfter = true;
    c.lengths = Lengths::InParams;
    c.activationClip = 0.4;
    c.type = HALF;
    const GruRun got = trainingStep(c), want = referenceStep(c);
    requireClose(got.output, want.output, 2e-2, 2e-2, "output");
    requireClose(got.woGrad, want.woGrad, 2e-2, 2e-2, "dWo");
    Case r = c;
    r.type = FLOAT;
    r.options = {{"direction", "reverse"}};
    r.reverseOnHost = true;
    const GruRun gotR = trainingStep(r), wantR = referenceStep(r);
    requireClose(gotR.output, wantR.output, 1e-5, 1e-4, "output (reverse)");
    requireClose(gotR.inputGrad, wantR.inputGrad, 1e-5, 1e-4, "dx (reverse)");
    requireClose(gotR.woGrad, wantR.woGrad, 1e-5, 1e-4, "dWo (reverse)");
  }
  SECTION("a threshold beyond every input changes nothing, bit for bit") {
    Case plain;
    plain.lengths = Lengths::InParams;
    Case wide = plain;
    wide.activationClip = 1e6;
    requireSame(trainingStep(wide), trainingStep(plain));
  }
}
