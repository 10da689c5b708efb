// Graph::serializeTensors / deserializeTensors with a SerializationFormat, as PopLibs'
// reduce_op --file reads its input: the tensors come back in a new graph as views of new
// variables with the written names, types, shapes and tile mappings, element for element as
// the written views (a transpose, a reversed row, a broadcast, two variables joined). A stream
// that is not Aspen's tensor document (Poplar's own files included) raises
// poplar::serialization_error, as does a tensor holding constants.
#include "ModelGraph.hpp"

#include <poplar/Graph.hpp>
#include <poplar/IPUModel.hpp>
#include <poplar/SerializationFormat.hpp>
#include <poplar/exceptions.hpp>

#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {
// Each element of t as (variable name, flat index in it).
std::vector<std::pair<std::string, std::size_t>> elements(const poplar::Graph &graph,
                                                          const poplar::Tensor &t) {
  std::vector<std::pair<std::string, std::size_t>> result;
  for (const auto &run : t.getVarRegions()) {
    const std::string described = graph.getVariable(run.var).getDebugStr(); // "'v' {2,3}"
    const std::string name = described.substr(1, described.find(' ') - 2);
    for (std::size_t i = run.interval.begin(); i < run.interval.end(); ++i)
      result.emplace_back(name, i);
  }
  return result;
}
} // namespace

int main() {
  ModelGraph model(4);
  poplar::Graph &graph = model.graph;
  poplar::Tensor v = graph.addVariable(poplar::FLOAT, {2, 3}, "v");
  poplar::Tensor w = graph.addVariable(poplar::HALF, {4}, "w");
  graph.setTileMapping(v.slice(0, 1), 1);
  graph.setTileMapping(v.slice(1, 2), 3);
  graph.setTileMapping(w, 2);
  const std::vector<poplar::Tensor> written{v.transpose(), v[1].reverse(0),
                                            v[0].slice(1, 2).broadcast(3, 0),
                                            poplar::concat(w.slice(2, 4), w.slice(0, 1))};
  std::stringstream file;
  graph.serializeTensors(file, written, poplar::SerializationFormat::Binary);

  poplar::Graph other(model.device.getTarget());
  const std::vector<poplar::Tensor> read =
      other.deserializeTensors(file, poplar::SerializationFormat::Binary);
  using E = std::vector<std::pair<std::string, std::size_t>>;
  bool ok = read.size() == 4 && read[0].shape() == std::vector<std::size_t>{3, 2} &&
            read[0].elementType() == poplar::FLOAT && read[3].elementType() == poplar::HALF;
  ok = ok && elements(other, read[0]) ==
                 E{{"v", 0}, {"v", 3}, {"v", 1}, {"v", 4}, {"v", 2}, {"v", 5}};
  ok = ok && elements(other, read[1]) == E{{"v", 5}, {"v", 4}, {"v", 3}};
  ok = ok && elements(other, read[2]) == E{{"v", 1}, {"v", 1}, {"v", 1}};
  ok = ok && elements(other, read[3]) == E{{"w", 2}, {"w", 3}, {"w", 0}};
  for (std::size_t i = 0; i < read.size(); ++i)
    ok = ok && elements(graph, written[i]) == elements(other, read[i]);
  // The variables' tile mappings: v's rows on tiles 1 and 3, w on tile 2.
  const auto vMapping = other.getTileMapping(other.getVariable(read[0].getVarRegions()[0].var));
  ok = ok && vMapping.size() == 4 && vMapping[1].size() == 1 && vMapping[1][0].begin() == 0 &&
       vMapping[1][0].end() == 3 && vMapping[3][0].begin() == 3 && vMapping[3][0].end() == 6;
  const auto wMapping = other.getTileMapping(other.getVariable(read[3].getVarRegions()[0].var));
  ok = ok && wMapping[2].size() == 1 && wMapping[2][0].end() == 4;

  std::string notOurs, constant;
  try {
    std::istringstream poplarFile(std::string("\x0a\x1b capnp", 8));
    other.deserializeTensors(poplarFile, poplar::SerializationFormat::Binary);
  } catch (const poplar::serialization_error &e) {
    notOurs = e.what();
  }
  try {
    poplar::Tensor c = graph.addConstant(poplar::FLOAT, {2}, 1.0f, "c");
    std::ostringstream unused;
    graph.serializeTensors(unused, {poplar::concat(v[0], c)}, poplar::SerializationFormat::JSON);
  } catch (const poplar::serialization_error &e) {
    constant = e.what();
  }
  ok = ok && notOurs.find("Aspen") != std::string::npos &&
       constant.find("constants") != std::string::npos;
  std::cout << (ok ? "serialize_tensors ok"
                   : "serialize_tensors FAILED: " + notOurs + " / " + constant)
            << "\n";
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
