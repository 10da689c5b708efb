// The strict JSON reader (lib/support/Json.cpp) and the matmul planner's "planConstraints"
// option, which is read with it. Checked: a text that parses writes back to JSON that parses to
// an equal value, and writing that value again gives the same text; a planConstraints text the
// planner accepts yields a plan that honours every pin it sets.
#include "FuzzCommon.hpp"

#include "support/Json.hpp"

#include <aspen/Target.hpp>
#include <aspen/linalg/MatMulPlan.hpp>

namespace {

namespace json = aspen::support::json;

// The pin `key` of `constraints` (an object), when it is an integer.
std::optional<std::uint64_t> pin(const json::Value &constraints, std::string_view group,
                                 std::string_view key) {
  const json::Value *g = constraints.find(group);
  if (!g || !g->isObject())
    return std::nullopt;
  const json::Value *v = g->find(key);
  return v && v->isNumber() ? v->asUnsigned() : std::nullopt;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  using namespace aspen;
  fuzz::Bytes in(data, size);
  const unsigned m = 1 + in.below(64), k = 1 + in.below(64), n = 1 + in.below(64);
  const bool half = in.flag();
  const std::string text(in.rest());

  json::Value value;
  if (fuzz::refusedOrDone([&] { value = json::parse(text, "fuzz input"); })) {
    const std::string written = value.write();
    json::Value again;
    if (!fuzz::refusedOrDone([&] { again = json::parse(written, "written"); }))
      fuzz::fail("the writer's JSON does not parse: " + written);
    fuzz::check(again == value, "JSON changes through write and parse: " + written);
    fuzz::check(again.write() == written, "writing one value twice differs: " + written);
  }

  static const Target target = Target::createGeneric(16);
  linalg::MatMulParams params;
  params.inputType = half ? HALF : FLOAT;
  params.outputType = params.inputType;
  params.aShape = {m, k};
  params.bShape = {k, n};
  linalg::MatMulPlan plan;
  if (!fuzz::refusedOrDone([&] {
        plan = linalg::planMatMul(target, params, {{"planConstraints", text}});
      }))
    return 0;
  // Accepted: the text is a JSON object (or empty), and the plan keeps its pins.
  if (value.isObject()) {
    const std::pair<const char *, std::size_t> partition[] = {{"groups", plan.partition.groups},
                                                              {"m", plan.partition.m},
                                                              {"k", plan.partition.k},
                                                              {"n", plan.partition.n}};
    for (const auto &[key, actual] : partition)
      if (auto p = pin(value, "partition", key))
        fuzz::check(*p == actual, std::string("the plan ignores partition.") + key + " in " + text);
    const std::pair<const char *, std::size_t> serial[] = {
        {"m", plan.serial.m}, {"k", plan.serial.k}, {"n", plan.serial.n}};
    for (const auto &[key, actual] : serial)
      if (auto p = pin(value, "serial", key))
        fuzz::check(*p == actual, std::string("the plan ignores serial.") + key + " in " + text);
  }
  fuzz::check(plan.partition.product() >= 1 && plan.tilesUsed <= target.getNumTiles(),
              "a plan outside the target: " + plan.toString());
  return 0;
}
