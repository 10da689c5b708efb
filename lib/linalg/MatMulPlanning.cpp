// The public planning entry points: planMatMul with its optional cache, the graph-level
// queries of MatMul.hpp (getMatMulPlan, getMatMulSerialSplits, matMulReportPlan,
// matMulGroupedReportPlan) and preplanMatMuls.
#include "linalg/MatMulPlanner.hpp"

#include <aspen/linalg/MatMul.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <ostream>

namespace aspen::linalg {

MatMulPlan planMatMul(const Target &target, const MatMulParams &params,
                      const OptionFlags &options, PlanningCache *cache) {
  const detail::MatMulOptions parsed = detail::parseMatMulOptions(options, params);
  return cache ? detail::cachedPlan(*cache, target, params, parsed)
               : detail::planMatMul(target, params, parsed);
}

MatMulPlan getMatMulPlan(const Graph &graph, const Type &inputType, const Type &outputType,
                         const std::vector<std::size_t> &aShape,
                         const std::vector<std::size_t> &bShape, const OptionFlags &options,
                         PlanningCache *cache) {
  return planMatMul(graph.getTarget(), MatMulParams{inputType, outputType, aShape, bShape},
                    options, cache);
}

std::size_t getMatMulSerialSplits(const Graph &graph, const Type &inputType,
                                  const Type &outputType, const std::vector<std::size_t> &aShape,
                                  const std::vector<std::size_t> &bShape,
                                  const OptionFlags &options, PlanningCache *cache) {
  return getMatMulPlan(graph, inputType, outputType, aShape, bShape, options, cache)
      .serialSteps();
}

void matMulReportPlan(std::ostream &out, const Graph &graph, const Type &inputType,
                      const Type &outputType, const std::vector<std::size_t> &aShape,
                      const std::vector<std::size_t> &bShape, const OptionFlags &options,
                      PlanningCache *cache) {
  out << getMatMulPlan(graph, inputType, outputType, aShape, bShape, options, cache).toString();
}

void matMulGroupedReportPlan(std::ostream &out, const Graph &graph, const Type &inputType,
                             const Type &outputType, const std::vector<std::size_t> &aShape,
                             const std::vector<std::size_t> &bShape, const OptionFlags &options,
                             PlanningCache *cache) {
  if (aShape.size() != 3 || bShape.size() != 3)
    throw shape_error(fmt::format("matMulGroupedReportPlan: shapes A [{}] and B [{}] must both "
                                  "have rank 3 ([G,M,K] . [G,K,N])",
                                  fmt::join(aShape, ","), fmt::join(bShape, ",")));
  matMulReportPlan(out, graph, inputType, outputType, aShape, bShape, options, cache);
}

void preplanMatMuls(const std::set<MatMulPlanParams> &matmuls, PlanningCache &cache) {
  for (const auto &[target, params, options] : matmuls)
    planMatMul(*target, params, options ? *options : OptionFlags{}, &cache);
}

} // namespace aspen::linalg
