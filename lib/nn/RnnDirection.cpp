// The recurrent layers' direction option and the step reversal a reverse layer is built on
// (RnnLoop.hpp).
#include "RnnLoop.hpp"

#include "support/OptionParsing.hpp"

#include <aspen/Error.hpp>
#include <aspen/util/TileMapping.hpp>
#include <aspen/util/VertexTemplates.hpp>

#include <fmt/format.h>

namespace aspen::nn::rnn::detail {

void addDirectionOption(aspen::detail::OptionSpec &spec, bool &reverse) {
  spec.add("direction",
           "forward or reverse (bidirectional is lstm::lstmStackFwd's; a single layer is one "
           "call of each direction, their "
           "outputs concatenated: docs/recurrent.md)",
           [&reverse](const std::string &v) {
             if (v != "forward" && v != "reverse")
               return false;
             reverse = v == "reverse";
             return true;
           });
}

Tensor reverseSteps(Graph &graph, const RnnParams &params, const Tensor &seq,
                    program::Sequence &prog, const DebugContext &debug) {
  const std::size_t T = params.maxTimeSteps, B = params.batchSize;
  if (seq.rank() < 2 || seq.dim(0) != T || seq.dim(1) != B)
    throw shape_error(fmt::format("{}: a sequence to reverse must have shape {{{},{},...}}, not "
                                  "{}",
                                  debug.getPathName(), T, B, seq.shapeToString()));
  Tensor out = graph.clone(seq, {debug, "reversed"});
  const Tensor &lengths = params.varTimeSteps;
  if (!lengths.valid()) {
    prog.add(program::Copy(seq.reverse(0), out));
    return out;
  }
  if (lengths.rank() != 1 || (lengths.dim(0) != B && lengths.dim(0) != 1))
    throw shape_error(fmt::format("{}: the sequence lengths must have shape {{{}}} or {{1}}, not "
                                  "{}",
                                  debug.getPathName(), B, lengths.shapeToString()));
  ComputeSet cs = graph.addComputeSet({debug, "reverseSteps"});
  const std::string type = util::templateVertex("aspen::nn::ReverseSteps", seq.elementType());
  for (std::size_t b = 0; b < B; ++b) {
    // One vertex per tile and contiguous region of the row's first step, listing that region
    // in every step (each step is laid out as the first: mapSteps).
    const Tensor length = lengths.dim(0) == 1 ? lengths : lengths.slice(b, b + 1);
    const auto tiles = util::getTileContiguousRegions(graph, out[0][b].flatten());
    for (unsigned tile = 0; tile < tiles.size(); ++tile)
      for (const Interval &region : tiles[tile]) {
        std::vector<Tensor> from, to;
        for (std::size_t t = 0; t < T; ++t) {
          from.push_back(seq[t][b].flatten().slice(region));
          to.push_back(out[t][b].flatten().slice(region));
        }
        VertexRef v = graph.addVertex(cs, type);
        graph.connect(v["length"], length);
        graph.connect(v["in"], from);
        graph.connect(v["out"], to);
        graph.setTileMapping(v, tile);
      }
  }
  prog.add(program::Execute(cs));
  return out;
}

Tensor reverseRowSteps(Graph &graph, const RnnParams &params, const Tensor &rows,
                       program::Sequence &prog, const DebugContext &debug) {
  if (rows.rank() != 2)
    throw shape_error(fmt::format("{}: a [B, T] tensor to reverse has rank 2, not {}",
                                  debug.getPathName(), rows.rank()));
  return reverseSteps(graph, params, rows.transpose().expand({2}), prog, debug)
      .squeeze({2})
      .transpose();
}

} // namespace aspen::nn::rnn::detail
