// poplin::matMulGroupedReportPlan: the plan of a grouped product [G,M,K] . [G,K,N] as text, like
// matMulReportPlan's (here G 3, M 4, K 5, N 6 in float); shapes of another rank raise
// poplar::shape_error naming them.
#include "ModelGraph.hpp"

#include <poplar/Graph.hpp>
#include <poplar/IPUModel.hpp>
#include <poplin/MatMul.hpp>

#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

int main() {
  ModelGraph model(16);
  poplar::Graph &graph = model.graph;
  poplin::matmul::PlanningCache cache;
  std::ostringstream report;
  poplin::matMulGroupedReportPlan(report, graph, poplar::FLOAT, poplar::FLOAT, {3, 4, 5},
                                  {3, 5, 6}, {}, &cache);
  bool ok = report.str().find("G 3 x M 4 x K 5 x N 6") != std::string::npos &&
            report.str().find("float inputs") != std::string::npos;
  std::string message;
  try {
    std::ostringstream unused;
    poplin::matMulGroupedReportPlan(unused, graph, poplar::FLOAT, poplar::FLOAT, {4, 5}, {5, 6});
  } catch (const poplar::shape_error &e) {
    message = e.what();
  }
  ok = ok && message.find("[4,5]") != std::string::npos &&
       message.find("rank 3") != std::string::npos;
  std::cout << (ok ? "matmul_grouped_report_plan ok"
                   : "matmul_grouped_report_plan FAILED: " + report.str() + message)
            << "\n";
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
