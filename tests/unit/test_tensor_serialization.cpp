// Graph::serializeTensors / deserializeTensors (Aspen's JSON tensor document) and readJSON:
// views come back element for element, and every malformed input is a user error that says
// what is wrong.
#include <aspen/Error.hpp>
#include <aspen/Graph.hpp>
#include <aspen/OptionFlags.hpp>

#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <utility>
#include <vector>

using namespace aspen;

namespace {
// (variable's index among the graph's variables, flat element) for each element of t.
std::vector<std::pair<unsigned, std::size_t>> elementsOf(const Tensor &t) {
  std::vector<std::pair<unsigned, std::size_t>> result;
  for (const VariableInterval &run : t.getVarRegions())
    for (std::size_t i = run.interval.begin(); i < run.interval.end(); ++i)
      result.emplace_back(run.var.id, i);
  return result;
}

std::vector<Tensor> roundTrip(const Graph &from, Graph &to, const std::vector<Tensor> &tensors) {
  std::stringstream document;
  from.serializeTensors(document, tensors, SerializationFormat::JSON);
  return to.deserializeTensors(document, SerializationFormat::JSON);
}

std::vector<Tensor> read(Graph &graph, const std::string &document) {
  std::istringstream in(document);
  return graph.deserializeTensors(in, SerializationFormat::Binary);
}
} // namespace

TEST_CASE("serialised views come back as the same views of new variables",
          "[unit][serialization]") {
  const Target target = Target::createGeneric(4);
  Graph graph(target);
  Tensor a = graph.addVariable(FLOAT, {4, 2}, "a");
  Tensor b = graph.addVariable(INT, {3}, "b");
  graph.setTileMapping(a, 2);
  graph.setTileMapping(b.slice(0, 1), 0);
  graph.setTileMapping(b.slice(1, 3), 3);
  const std::vector<Tensor> tensors{
      a.subSample(2, 0),                                    // rows 0 and 2
      a.dimShuffle({1, 0}).reverse(1),                      // strided backwards
      concat(b.reverse(0), a.flatten().slice(3, 5).reinterpret(INT)), // two variables
      b.slice(1, 2).broadcast(4, 0).reshape({2, 2}),        // one element four times
      b.slice(0, 0)};                                       // no elements
  Graph other(target);
  Tensor unrelated = other.addVariable(HALF, {5}, "unrelated"); // ids differ from the writer's
  other.setTileMapping(unrelated, 0);
  const std::vector<Tensor> back = roundTrip(graph, other, tensors);
  REQUIRE(back.size() == tensors.size());
  // Variables are numbered in the order the tensors first reach them: a then b, after
  // `unrelated`, so a -> 1 and b -> 2.
  const auto renumber = [](std::vector<std::pair<unsigned, std::size_t>> e) {
    for (auto &[var, i] : e)
      var += 1;
    return e;
  };
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    INFO("tensor " << i);
    REQUIRE(back[i].shape() == tensors[i].shape());
    REQUIRE(back[i].elementType() == tensors[i].elementType());
    if (i < 4)
      REQUIRE(elementsOf(back[i]) == renumber(elementsOf(tensors[i])));
  }
  REQUIRE(back[4].numElements() == 0);
  REQUIRE(back[0].containsAliases() == false);
  REQUIRE(back[3].containsAliases());
  const Tensor newB = other.getVariable(VariableRef{2});
  REQUIRE(newB.getDebugStr().find("'b'") != std::string::npos);
  const TileToTensorMapping mapping = other.getTileMapping(newB);
  REQUIRE(mapping[0] == std::vector<Interval>{{0, 1}});
  REQUIRE(mapping[3] == std::vector<Interval>{{1, 3}});
}

TEST_CASE("tensors that cannot be serialised, and documents that are not Aspen's, are refused",
          "[unit][serialization][error]") {
  Graph graph(Target::createGeneric(2));
  Tensor v = graph.addVariable(FLOAT, {2}, "v");
  graph.setTileMapping(v, 0);
  std::ostringstream out;
  REQUIRE_THROWS_AS(graph.serializeTensors(out, {Tensor()}, SerializationFormat::JSON),
                    serialization_error);
  Tensor c = graph.addConstant(FLOAT, {1}, 2.0f, "c");
  REQUIRE_THROWS_WITH(graph.serializeTensors(out, {concat(v, c)}, SerializationFormat::JSON),
                      Catch::Contains("tensor 0") && Catch::Contains("constants"));
  Graph stranger(Target::createGeneric(2));
  Tensor s = stranger.addVariable(FLOAT, {2}, "s");
  REQUIRE_THROWS_AS(graph.serializeTensors(out, {s}, SerializationFormat::JSON), error);

  const std::string header = R"({"format": "aspen.tensors", "version": 1, )";
  const std::string oneVariable =
      R"("variables": [{"name": "v", "type": "float", "shape": [2], "mapping": [[0, 0, 2]]}], )";
  REQUIRE_THROWS_WITH(read(graph, "\x0a\x1b binary"), Catch::Contains("not Aspen's JSON") &&
                                                          Catch::Contains("Poplar's tensor files"));
  REQUIRE_THROWS_WITH(read(graph, R"({"format": "poplar", "version": 1})"),
                      Catch::Contains("\"aspen.tensors\""));
  REQUIRE_THROWS_WITH(read(graph, R"({"format": "aspen.tensors", "version": 2})"),
                      Catch::Contains("version 1"));
  REQUIRE_THROWS_WITH(
      read(graph, header + R"("variables": [{"name": "v", "type": "double", "shape": [2],
                                              "mapping": []}], "tensors": []})"),
      Catch::Contains("variable 0 type") && Catch::Contains("element type"));
  REQUIRE_THROWS_AS(
      read(graph, header + R"("variables": [{"name": "v", "type": "float", "shape": [2],
                                              "mapping": [[7, 0, 2]]}], "tensors": []})"),
      invalid_tile_mapping);
  REQUIRE_THROWS_WITH(
      read(graph, header + oneVariable +
                      R"("tensors": [{"type": "float", "shape": [2], "regions": [[1, 0, 4, 2]]}]})"),
      Catch::Contains("tensor 0 region") && Catch::Contains("below 1"));
  REQUIRE_THROWS_WITH(
      read(graph, header + oneVariable +
                      R"("tensors": [{"type": "float", "shape": [3], "regions": [[0, 0, 4, 3]]}]})"),
      Catch::Contains("reaches outside"));
  REQUIRE_THROWS_WITH(
      read(graph, header + oneVariable +
                      R"("tensors": [{"type": "float", "shape": [3], "regions": [[0, 0, 4, 2]]}]})"),
      Catch::Contains("2 elements for shape {3}"));
  REQUIRE_THROWS_WITH(
      read(graph, header + oneVariable +
                      R"("tensors": [{"type": "float", "shape": [1], "regions": [[0, 2, 4, 1]]}]})"),
      Catch::Contains("whole float elements"));
}

TEST_CASE("readJSON sets options from one JSON object, or none of them", "[unit][options]") {
  OptionFlags flags{{"a", "1"}};
  readJSON(R"({"a": 2.50, "b": "text", "c": false})", flags);
  REQUIRE(flags == OptionFlags{{"a", "2.50"}, {"b", "text"}, {"c", "false"}});
  std::istringstream stream(R"({"d": -3})");
  readJSON(stream, flags);
  REQUIRE(flags.at("d") == "-3");
  const OptionFlags before = flags;
  REQUIRE_THROWS_WITH(readJSON(R"({"e": "1", "f": null})", flags),
                      Catch::Contains("option 'f' = null"));
  REQUIRE_THROWS_WITH(readJSON(R"("text")", flags), Catch::Contains("a JSON object of options"));
  REQUIRE_THROWS_AS(readJSON("{", flags), invalid_option);
  REQUIRE(flags == before);
  REQUIRE(getAsProfileValue(flags)["b"].asString() == "text");
}
