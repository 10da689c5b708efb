// Misuse of the matmul planner: bad option keys and values, impossible or contradicting plan
// constraints, bad shapes and types, and problems that fit no split. Each raises its aspen::error
// subclass with a message naming the option or operand, the rule and the values.
#include <aspen/Error.hpp>
#include <aspen/linalg/MatMulPlan.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace aspen;
using namespace aspen::linalg;

namespace {

MatMulParams square(std::size_t n, Type in = FLOAT, Type out = FLOAT) {
  return {in, out, {n, n}, {n, n}};
}

// Plans and returns the message of the expected error type; fails when none is raised.
template <class E>
std::string messageOf(const Target &t, const MatMulParams &p, const OptionFlags &o) {
  try {
    planMatMul(t, p, o);
  } catch (const E &e) {
    return e.what();
  }
  FAIL("no error of the expected type");
  return {};
}

void checkWords(const std::string &message, const std::vector<std::string> &words) {
  INFO(message);
  for (const auto &w : words)
    CHECK(message.find(w) != std::string::npos);
}

const Target ipu2 = Target::createModel("ipu2");

} // namespace

TEST_CASE("matmul options: unknown keys and bad values name the key and the allowed values",
          "[matmul][plan]") {
  checkWords(messageOf<invalid_option>(ipu2, square(8), {{"partialType", "float"}}),
             {"partialType", "partialsType", "availableMemoryProportion"});
  checkWords(messageOf<invalid_option>(ipu2, square(8), {{"partialsType", "double"}}),
             {"partialsType", "double", "float", "half"});
  for (const char *bad : {"0", "1.5", "-0.1", "abc", "0.5x"})
    checkWords(messageOf<invalid_option>(ipu2, square(8), {{"availableMemoryProportion", bad}}),
               {"availableMemoryProportion", bad, "(0, 1]"});
  checkWords(messageOf<invalid_option>(ipu2, square(8), {{"fullyConnectedPass", "TRAINING"}}),
             {"fullyConnectedPass", "TRAINING", "INFERENCE_FWD", "TRAINING_WU"});
  checkWords(messageOf<invalid_option>(ipu2, square(8), {{"inputRHSIsPreArranged", "maybe"}}),
             {"inputRHSIsPreArranged", "maybe", "true or false"});
  checkWords(messageOf<invalid_option>(ipu2, square(8), {{"partialsType", "half"}}),
             {"partialsType", "half", "FLOAT inputs"});
}

TEST_CASE("matmul plan constraints that are malformed or cannot hold name the key path",
          "[matmul][plan]") {
  const MatMulParams p{FLOAT, FLOAT, {100, 64}, {64, 4096}};
  auto constrained = [&](const std::string &json) {
    return messageOf<invalid_option>(ipu2, p, {{"planConstraints", json}});
  };
  checkWords(constrained(R"({"partition": {"m": 4096}})"),
             {"planConstraints.partition.m = 4096", "M is 100"});
  checkWords(constrained(R"({"partition": {"x": 2}})"),
             {"planConstraints.partition.x", "unknown key", "groups, m, k, n"});
  checkWords(constrained(R"({"serial": {"groups": 2}})"),
             {"planConstraints.serial.groups", "unknown key"});
  checkWords(constrained(R"({"tiles": 2})"),
             {"planConstraints.tiles", "unknown key", "partition, serial and partialsType"});
  checkWords(constrained(R"({"tilesUsed": 2})"),
             {"planConstraints.tilesUsed", "derived", "constraintsJson"});
  checkWords(constrained(R"({"partition": {"m": 2.5}})"),
             {"planConstraints.partition.m = 2.5", "positive integer"});
  checkWords(constrained(R"({"partition": {"m": "4"}})"),
             {"planConstraints.partition.m", "positive integer"});
  checkWords(constrained(R"({"partition": {"m": -1}})"),
             {"planConstraints.partition.m = -1", "positive integer"});
  checkWords(constrained(R"({"serial": {"k": 0}})"),
             {"planConstraints.serial.k = 0", "positive integer"});
  checkWords(constrained(R"({"partition": 4})"), {"planConstraints.partition = 4", "object"});
  checkWords(constrained(R"([1])"), {"planConstraints", "object"});
  checkWords(constrained(R"({"partialsType": "double"})"),
             {"planConstraints.partialsType", "\"float\" or \"half\""});
  checkWords(constrained(R"({"partition": {"m": 3, "k": 1)"),
             {"planConstraints", "invalid JSON", "offset 29"});
  // More tiles than the target has.
  checkWords(constrained(R"({"partition": {"m": 100, "n": 20}})"),
             {"planConstraints.partition", "m = 100 * n = 20 = 2000", "1472 tiles"});
  // Partition and serial counts whose chunks would leave one empty: 100 rows in 3 * 17 chunks
  // of 2 rows need only 50 chunks.
  checkWords(constrained(R"({"partition": {"m": 3}, "serial": {"m": 17}})"),
             {"planConstraints.partition.m = 3", "planConstraints.serial.m = 17", "contradict",
              "M is 100"});
  // Counts that leave an empty chunk however the other count is chosen: 100 rows in 45 parts
  // of 3 rows need only 34 chunks, and 90 (2 steps) or more have the same problem.
  checkWords(constrained(R"({"partition": {"m": 45}})"),
             {"planConstraints.partition.m = 45", "M is 100", "empty"});
  checkWords(constrained(R"({"serial": {"m": 45}})"),
             {"planConstraints.serial.m = 45", "M is 100", "empty"});
  checkWords(messageOf<invalid_option>(ipu2, {FLOAT, FLOAT, {10, 4, 4}, {10, 4, 4}},
                                       {{"planConstraints", R"({"partition": {"groups": 6}})"}}),
             {"planConstraints.partition.groups = 6", "G is 10", "empty"});
  // A contradiction with the flat option.
  checkWords(messageOf<invalid_option>(
                 ipu2, square(8, HALF, HALF),
                 {{"partialsType", "float"}, {"planConstraints", R"({"partialsType": "half"})"}}),
             {"planConstraints.partialsType", "contradicts", "partialsType"});
  // Pins whose working set cannot fit: 8192^3 float on one tile in one step.
  checkWords(messageOf<invalid_option>(
                 ipu2, square(8192),
                 {{"planConstraints", R"({"partition": {"groups": 1, "m": 1, "k": 1, "n": 1},
                                         "serial": {"m": 1, "k": 1, "n": 1}})"}}),
             {"planConstraints", "no plan with these pins fits", "bytes per tile"});
  // Half partials pinned for float inputs.
  checkWords(constrained(R"({"partialsType": "half"})"), {"partialsType", "half"});
}

TEST_CASE("matmul parameters with bad shapes raise shape_error naming both operands",
          "[matmul][plan]") {
  checkWords(messageOf<shape_error>(ipu2, {FLOAT, FLOAT, {4, 5}, {6, 7}}, {}),
             {"A [4,5]", "B [6,7]", "inner dimensions differ"});
  checkWords(messageOf<shape_error>(ipu2, {FLOAT, FLOAT, {4}, {4}}, {}), {"rank 2", "rank 3"});
  checkWords(messageOf<shape_error>(ipu2, {FLOAT, FLOAT, {1, 2, 3, 4}, {1, 2, 4, 3}}, {}),
             {"rank 2", "rank 3"});
  checkWords(messageOf<shape_error>(ipu2, {FLOAT, FLOAT, {2, 4, 5}, {5, 6}}, {}),
             {"A [2,4,5]", "B [5,6]", "rank"});
  checkWords(messageOf<shape_error>(ipu2, {FLOAT, FLOAT, {2, 4, 5}, {3, 5, 6}}, {}),
             {"group counts differ", "2", "3"});
  checkWords(messageOf<shape_error>(ipu2, {FLOAT, FLOAT, {0, 5}, {5, 6}}, {}),
             {"A [0,5]", "at least 1"});
}

TEST_CASE("matmul parameters with bad types raise type_error", "[matmul][plan]") {
  checkWords(messageOf<type_error>(ipu2, square(4, INT, FLOAT), {}),
             {"input type int", "float or half"});
  checkWords(messageOf<type_error>(ipu2, square(4, FLOAT, UNSIGNED_INT), {}),
             {"output type unsigned int", "float or half"});
}

TEST_CASE("a matmul whose smallest blocks exceed a tile raises graph_memory_allocation_error",
          "[matmul][plan]") {
  // 16 bytes per tile x 0.6 = 9 bytes; a 1x1x1 float block needs 12.
  checkWords(messageOf<graph_memory_allocation_error>(Target::createGeneric(2, 6, 16),
                                                      square(3), {}),
             {"A [3,3]", "B [3,3]", "12 bytes", "9 bytes", "availableMemoryProportion"});
}
