// <poputil/DebugInfo.hpp> as PopLibs' operations use it: PoplibsOpDebugInfo records its
// arguments (DI_ARGS) under "args" and the calling function as "api", addOutput records the
// result, and the DebugInfo names sub-operations under its path ({di, "suffix"}). A program
// specialises toProfileValue for its own type in namespace poputil. Asking a ProfileValue for
// another kind than it holds raises poplar::type_error; serializeToJSON writes one as JSON.
#include "ModelGraph.hpp"

#include <poplar/Graph.hpp>
#include <poplar/IPUModel.hpp>
#include <poputil/DebugInfo.hpp>

#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

struct Window {
  unsigned size;
};
namespace poputil {
template <> poplar::ProfileValue toProfileValue(const Window &w) {
  return poplar::ProfileValue::Map{{"size", w.size}};
}
} // namespace poputil

namespace {
bool recordOp(poplar::Graph &graph, const poplar::Tensor &in, unsigned steps, bool inPlace,
              const Window &window, const poplar::OptionFlags &options,
              const poplar::DebugContext &debugContext) {
  poputil::PoplibsOpDebugInfo di(debugContext, DI_ARGS(in, steps, inPlace, window, options));
  poplar::Tensor out = graph.addVariable(poplar::HALF, {4}, {di, "out"});
  di.addOutput(out);
  const poplar::ProfileValue &args = *di.getValue("args");
  bool ok = di.getValue("api")->asString() == "recordOp" && di.getPathName() == "layer" &&
            di.getLayer() == "poplibs" && args.size() == 5;
  ok = ok && args["in"]["shape"].asString() == "[2, 3]" && args["in"]["type"].asString() == "float";
  ok = ok && args["steps"].asDouble() == 7 && args["inPlace"].asBool() &&
       args["window"]["size"].asDouble() == 3 &&
       args["options"]["availableMemoryProportion"].asString() == "0.5";
  ok = ok && (*di.getValue("output"))["shape"].asString() == "[4]" &&
       out.getDebugStr().find("layer/out") != std::string::npos;
  ok = ok && !di.setValue("api", "again") && di.getValue("api")->asString() == "recordOp";
  std::ostringstream json;
  poplar::serializeToJSON(json, args["in"]);
  ok = ok && json.str() == R"({"shape":"[2, 3]","type":"float"})";
  return ok;
}
} // namespace

int main() {
  ModelGraph model(1);
  poplar::Graph &graph = model.graph;
  poplar::Tensor in = graph.addVariable(poplar::FLOAT, {2, 3}, "in");
  bool ok = recordOp(graph, in, 7, true, Window{3}, {{"availableMemoryProportion", "0.5"}},
                     "layer");
  poplar::DebugInfo first("a", "mine"), second("b", "mine");
  ok = ok && second.getId() > first.getId() &&
       poplar::DebugContext(first, "child").getPathName() == "a/child";
  const std::vector<unsigned> sizes{4, 5};
  const poplar::ProfileValue listed = poputil::toProfileValue(sizes);
  ok = ok && listed["1"].asDouble() == 5 && poputil::toProfileValue<Window>(nullptr).asString() ==
                                                "<nullptr>";
  bool refused = false;
  try {
    listed["0"].asString();
  } catch (const poplar::type_error &) {
    refused = true;
  }
  ok = ok && refused;
  std::cout << (ok ? "debug_info ok" : "debug_info FAILED") << "\n";
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
