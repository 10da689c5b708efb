// What a stack of recurrent layers in one call is built from (RnnLoop.hpp): the wave loop that
// runs several fused layers' steps in one compute set a step (layer l at step t beside layer
// l + 1 at step t - 1; both directions of a layer at the same step), the counter-based dropout
// between layers, and a layer's final output state taken from its output sequence.
#include "RnnStackBuilder.hpp"

#include <aspen/Error.hpp>
#include <aspen/util/VertexTemplates.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace aspen::nn::rnn {

namespace detail {

using program::Copy;
using program::Repeat;
using program::Sequence;

namespace {

Tensor unsignedValue(Graph &graph, unsigned value, const DebugContext &debug) {
  Tensor t = graph.addConstant<unsigned>(UNSIGNED_INT, {1}, value, debug);
  graph.setTileMapping(t, 0);
  return t;
}

std::uint64_t mix(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The columns [begin, end) of a [.., W] row one dropout vertex takes: at least 32, at most one
// chunk a tile.
std::vector<std::pair<std::size_t, std::size_t>> columnChunks(const Target &target,
                                                               std::size_t W) {
  const std::size_t n = std::max<std::size_t>(
      1, std::min<std::size_t>(target.getNumTiles(), (W + 31) / 32));
  std::vector<std::pair<std::size_t, std::size_t>> chunks;
  for (std::size_t j = 0; j < n; ++j)
    chunks.emplace_back(j * W / n, (j + 1) * W / n);
  return chunks;
}

} // namespace

Tensor lengthsOf(Graph &graph, const RnnParams &params, const DebugContext &debug) {
  return params.varTimeSteps.valid()
             ? params.varTimeSteps
             : unsignedValue(graph, static_cast<unsigned>(params.maxTimeSteps), debug);
}

std::uint64_t dropoutKey(std::uint64_t seed, unsigned layer) {
  return mix(seed ^ ((std::uint64_t(layer) + 1) * 0xD1B54A32D192ED03ull));
}

void addDropout(Graph &graph, ComputeSet cs, const RnnParams &params, const Tensor &in,
                const Tensor &out, const Dropout &dropout, const Tensor &time, bool reversed,
                const Tensor &lengths) {
  const std::size_t T = params.maxTimeSteps, B = params.batchSize, W = in.dim(2);
  // keep <=> (mix(key + i) >> 11) * 2^-53 >= rate <=> (mix(key + i) >> 11) >= ceil(rate 2^53):
  // rate * 2^53 is exact in a double.
  const auto threshold = static_cast<std::uint64_t>(std::ceil(dropout.rate * 0x1.0p53));
  const std::string type = util::templateVertex("aspen::nn::RnnDropout", in.elementType());
  const auto chunks = columnChunks(graph.getTarget(), W);
  for (std::size_t j = 0; j < chunks.size(); ++j) {
    const auto [c0, c1] = chunks[j];
    std::vector<Tensor> from, to;
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t b = 0; b < B; ++b) {
        from.push_back(in[t][b].slice(c0, c1));
        to.push_back(out[t][b].slice(c0, c1));
      }
    VertexRef v = graph.addVertex(cs, type);
    graph.setTileMapping(v, static_cast<unsigned>(j % graph.getTarget().getNumTiles()));
    graph.connect(v["time"], time.valid() ? time : lengths.slice(0, 1));
    graph.connect(v["lengths"], lengths);
    graph.connect(v["in"], from);
    graph.connect(v["out"], to);
    graph.setInitialValue(v["batch"], static_cast<unsigned>(B));
    graph.setInitialValue(v["width"], static_cast<unsigned>(W));
    graph.setInitialValue(v["firstColumn"], static_cast<unsigned>(c0));
    graph.setInitialValue(v["keyLo"], static_cast<unsigned>(dropout.key & 0xFFFFFFFFu));
    graph.setInitialValue(v["keyHi"], static_cast<unsigned>(dropout.key >> 32));
    graph.setInitialValue(v["thresholdLo"], static_cast<unsigned>(threshold & 0xFFFFFFFFu));
    graph.setInitialValue(v["thresholdHi"], static_cast<unsigned>(threshold >> 32));
    graph.setInitialValue(v["scale"], static_cast<float>(1.0 / (1.0 - dropout.rate)));
    graph.setInitialValue(v["oneStep"], time.valid());
    graph.setInitialValue(v["reversed"], reversed);
  }
}

namespace {

// A compute set in prog of one `name` vertex a batch row (RnnFinalState, RnnLastStepGrad): the
// lengths, the row's steps of seq as "seq", its row index and the direction; connect(v, b)
// adds the rest.
void addLastStepVertices(Graph &graph, const RnnParams &params, const char *name,
                         const Tensor &seq, bool reverse,
                         const std::function<void(VertexRef, std::size_t)> &connect,
                         Sequence &prog, const DebugContext &debug) {
  ComputeSet cs = graph.addComputeSet({debug, name});
  const Tensor lengths = lengthsOf(graph, params, {debug, "lengths"});
  const std::string type =
      util::templateVertex(std::string("aspen::nn::") + name, seq.elementType());
  for (std::size_t b = 0; b < params.batchSize; ++b) {
    std::vector<Tensor> steps;
    for (std::size_t t = 0; t < params.maxTimeSteps; ++t)
      steps.push_back(seq[t][b]);
    VertexRef v = graph.addVertex(cs, type);
    graph.connect(v["lengths"], lengths);
    graph.connect(v["seq"], steps);
    graph.setInitialValue(v["row"], static_cast<unsigned>(b));
    graph.setInitialValue(v["reverse"], reverse);
    graph.setTileMapping(v, static_cast<unsigned>(b % graph.getTarget().getNumTiles()));
    connect(v, b);
  }
  prog.add(program::Execute(cs));
}

} // namespace

Tensor finalOutputState(Graph &graph, const RnnParams &params, const Tensor &seq,
                        const Tensor &init, bool reverse, Sequence &prog,
                        const DebugContext &debug) {
  Tensor out = graph.clone(init, {debug, "finalOutput"});
  addLastStepVertices(
      graph, params, "RnnFinalState", seq, reverse,
      [&](VertexRef v, std::size_t b) {
        graph.connect(v["init"], init[b]);
        graph.connect(v["out"], out[b]);
      },
      prog, debug);
  return out;
}

std::pair<Tensor, Tensor> foldFinalStateGrad(Graph &graph, const RnnParams &params,
                                             const Tensor &dy, const Tensor &grad, bool reverse,
                                             Sequence &prog, const DebugContext &debug) {
  Tensor folded = graph.clone(dy, {debug, "outputGrad"});
  prog.add(Copy(dy, folded));
  Tensor rest = graph.clone(grad, {debug, "initialStateGrad"});
  addLastStepVertices(
      graph, params, "RnnLastStepGrad", folded, reverse,
      [&](VertexRef v, std::size_t b) {
        graph.connect(v["grad"], grad[b]);
        graph.connect(v["rest"], rest[b]);
      },
      prog, debug);
  return {folded, rest};
}

void waveLoop(Graph &graph, const RnnParams &params, const std::vector<WaveLane> &lanes,
              Sequence &prog, const DebugContext &debug) {
  const std::size_t T = params.maxTimeSteps;
  const Tensor lengths = lengthsOf(graph, params, {debug, "lengths"});
  std::vector<FusedClock> clocks;
  std::set<std::size_t> bounds;
  for (std::size_t l = 0; l < lanes.size(); ++l) {
    FusedClock clock;
    clock.time = graph.addVariable(UNSIGNED_INT, {2}, {debug, fmt::format("time{}", l)});
    graph.setTileMapping(clock.time, 0);
    prog.add(Copy(unsignedValue(graph, 0, {debug, "zero"}), clock.time.slice(0, 1)));
    clock.lengths = lengths;
    clocks.push_back(clock);
    bounds.insert(lanes[l].offset);
    bounds.insert(lanes[l].offset + T);
  }
  // Between two consecutive bounds the same lanes run: a segment of waves, played as
  // fusedLoop plays a shard (pairs of even and odd waves in a Repeat).
  const std::vector<std::size_t> b(bounds.begin(), bounds.end());
  for (std::size_t s = 0; s + 1 < b.size(); ++s) {
    const std::size_t first = b[s], end = b[s + 1];
    std::vector<std::size_t> active;
    for (std::size_t l = 0; l < lanes.size(); ++l)
      if (lanes[l].offset <= first && first < lanes[l].offset + T)
        active.push_back(l);
    if (active.empty())
      continue;
    unsigned phases = 1;
    for (const std::size_t l : active)
      phases = std::max(phases, lanes[l].phases);
    auto wave = [&](unsigned q) { // the segment's waves of parity q
      Sequence s;
      for (unsigned k = 0; k < phases; ++k) {
        ComputeSet cs = graph.addComputeSet(
            {debug, fmt::format("waves{}{}Phase{}", first, q ? "Odd" : "Even", k)});
        // The last lane's vertices first: a lane that read what another writes in the same
        // wave (a scheduling error) would then read stale values on one thread, not by chance.
        for (auto it = active.rbegin(); it != active.rend(); ++it) {
          const WaveLane &lane = lanes[*it];
          const unsigned p = (q + 2 - lane.offset % 2) % 2; // the parity of the lane's step
          if (k < lane.phases)
            lane.addStep(cs, k, clocks[*it], p);
          if (k + 1 == lane.phases)
            addClockVertex(graph, cs, clocks[*it], p);
        }
        s.add(program::Execute(cs));
      }
      return s;
    };
    const Sequence even = wave(0), odd = wave(1);
    std::size_t w = first;
    if (w % 2 == 1) {
      prog.add(odd);
      ++w;
    }
    if (const std::size_t pairs = (end - w) / 2; pairs > 0) {
      prog.add(Repeat(static_cast<unsigned>(pairs), Sequence{even, odd},
                      {debug, fmt::format("waves{}", first)}));
      w += 2 * pairs;
    }
    if (w < end)
      prog.add(even);
  }
}

StackOptions parseStackOptions(const OptionFlags &options, const std::string &what) {
  StackOptions s;
  aspen::detail::OptionSpec spec(what);
  spec.unsignedInteger("numLayers", s.numLayers, 1);
  spec.add("direction", "forward, reverse or bidirectional", [&s](const std::string &v) {
    s.bidirectional = v == "bidirectional";
    s.reverse = v == "reverse";
    return v == "forward" || s.reverse || s.bidirectional;
  });
  spec.add("dropout", "a number in [0, 1)", [&s](const std::string &v) {
    try {
      std::size_t used = 0;
      const double x = std::stod(v, &used);
      s.dropout = x;
      return used == v.size() && x >= 0.0 && x < 1.0;
    } catch (const std::exception &) {
      return false;
    }
  });
  spec.add("dropoutSeed", "an unsigned 64-bit integer", [&s](const std::string &v) {
    if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos)
      return false;
    try {
      s.seed = std::stoull(v);
      return true;
    } catch (const std::exception &) {
      return false;
    }
  });
  spec.enumeration("stackSchedule", s.schedule,
                   {{"auto", StackSchedule::Auto},
                    {"wavefront", StackSchedule::Wavefront},
                    {"layerByLayer", StackSchedule::LayerByLayer}});
  OptionFlags own;
  for (const auto &[key, value] : options)
    (spec.knows(key) ? own : s.layer).set(key, value);
  spec.parse(own);
  return s;
}

void checkStackTensor(const Tensor &t, const std::vector<std::size_t> &shape, Type type,
                      const std::string &what) {
  if (!t.valid() || t.shape() != shape)
    throw shape_error(fmt::format("{} must have shape {{{}}}, not {}", what,
                                  fmt::join(shape, ","),
                                  t.valid() ? t.shapeToString() : "an invalid tensor"));
  if (t.elementType() != type)
    throw type_error(fmt::format("{} must be of type {}, not {}", what, type.toString(),
                                 t.elementType().toString()));
}

Tensor stackStateTensor(Graph &graph, const RnnParams &params, std::size_t n, std::size_t size,
                        const DebugContext &debug) {
  RnnParams p = params;
  p.layerSizes[1] = size;
  return createInitialState(graph, p, true, static_cast<unsigned>(n), 1, debug);
}

void addDropoutLane(Graph &graph, const RnnParams &params, const Tensor &produced,
                    const Tensor &dropped, const Dropout &dropout, bool reversed,
                    const Tensor &lengths, StackLanes &lanes) {
  lanes.lanes.push_back(
      {lanes.next, 1,
       [&graph, params, produced, dropped, dropout, reversed, lengths](
           ComputeSet cs, unsigned, const FusedClock &clock, unsigned p) {
         addDropout(graph, cs, params, produced, dropped, dropout, clock.time.slice(p, p + 1),
                    reversed, lengths);
       }});
}

} // namespace detail

Tensor dropoutSequence(Graph &graph, const RnnParams &params, const Tensor &seq, double rate,
                       std::uint64_t seed, unsigned layer, program::Sequence &prog,
                       const DebugContext &debug) {
  const std::string what = "rnn::dropoutSequence";
  const std::size_t T = params.maxTimeSteps, B = params.batchSize;
  if (!seq.valid() || seq.rank() != 3 || seq.dim(0) != T || seq.dim(1) != B)
    throw shape_error(fmt::format("{}: the sequence must have shape {{{},{},W}}, not {}", what, T,
                                  B, seq.valid() ? seq.shapeToString() : "an invalid tensor"));
  if (seq.elementType() != FLOAT && seq.elementType() != HALF)
    throw type_error(fmt::format("{}: the sequence must be FLOAT or HALF, not {}", what,
                                 seq.elementType().toString()));
  if (!(rate >= 0.0 && rate < 1.0))
    throw invalid_option(fmt::format("{}: the rate {} is not in [0, 1)", what, rate));
  Tensor out = graph.clone(seq, {debug, "dropped"});
  if (rate == 0.0 || seq.numElements() == 0) {
    prog.add(program::Copy(seq, out));
    return out;
  }
  ComputeSet cs = graph.addComputeSet({debug, "dropout"});
  detail::addDropout(graph, cs, params, seq, out, {rate, detail::dropoutKey(seed, layer)},
                     Tensor(), false, detail::lengthsOf(graph, params, {debug, "lengths"}));
  prog.add(program::Execute(cs));
  return out;
}

} // namespace aspen::nn::rnn
