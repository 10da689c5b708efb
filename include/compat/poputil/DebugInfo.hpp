// PopLibs' <poputil/DebugInfo.hpp>: the debug information a PopLibs operation records.
//
//   poputil::toProfileValue(x)  x as a poplar::ProfileValue, for the types PopLibs gives one:
//       int, unsigned int, unsigned long, bool and float as numbers and booleans, a Type by its
//       name, a Tensor as {"shape": "[2, 3]", "type": "float"}, a ComputeSet as its id,
//       OptionFlags as a map of its values (getAsProfileValue), a Copy program as
//       "program::Copy", a pointer as its target ("<nullptr>" for none), a vector as a map from
//       "0", "1", ... to its elements; <popops/ElementWise.hpp> adds the operation kinds. A
//       program specialises it, in namespace poputil, for its own types.
//   poputil::ArgType            a name and a ProfileValue.
//   poputil::OpDebugInfo        a poplar::DebugInfo of layer "poplibs" that records "api" and,
//       with add(name, args), a map of the arguments under `name`.
//   poputil::PoplibsOpDebugInfo records its arguments under "args" and the calling function's
//       name as "api"; addOutputs records "outputs", addOutput a single "output".
//   DI_ARGS(a, b, ...)          {{"a", toProfileValue(a)}, {"b", toProfileValue(b)}, ...}, for
//       one to sixteen arguments.
// Like every DebugInfo in Aspen, the values stay in the object (DebugInfo::getValue); no
// debug-information file is written.
#pragma once

#include <poplar/DebugContext.hpp>
#include <poplar/GraphElements.hpp>
#include <poplar/OptionFlags.hpp>
#include <poplar/ProfileValue.hpp>
#include <poplar/Program.hpp>
#include <poplar/Tensor.hpp>
#include <poplar/Type.hpp>
#include <poputil/Namespace.hpp>

#include <string>
#include <utility>
#include <vector>

namespace poputil {

template <typename T> poplar::ProfileValue toProfileValue(const T &t);

template <> inline poplar::ProfileValue toProfileValue(const int &v) { return v; }
template <> inline poplar::ProfileValue toProfileValue(const unsigned int &v) { return v; }
template <> inline poplar::ProfileValue toProfileValue(const unsigned long &v) { return v; }
template <> inline poplar::ProfileValue toProfileValue(const bool &v) { return v; }
template <> inline poplar::ProfileValue toProfileValue(const float &v) { return v; }
template <> inline poplar::ProfileValue toProfileValue(const poplar::ComputeSet &cs) {
  return cs.getId();
}
template <> inline poplar::ProfileValue toProfileValue(const poplar::OptionFlags &flags) {
  return poplar::getAsProfileValue(flags);
}
template <> inline poplar::ProfileValue toProfileValue(const poplar::program::Copy &) {
  return "program::Copy";
}
template <> inline poplar::ProfileValue toProfileValue(const poplar::Type &t) {
  return t.toString();
}
template <> inline poplar::ProfileValue toProfileValue(const poplar::Tensor &t) {
  if (!t.valid())
    return "<invalid tensor>";
  std::string shape = "[";
  for (std::size_t d : t.shape())
    shape += (shape.size() > 1 ? ", " : "") + std::to_string(d);
  return poplar::ProfileValue::Map{{"shape", shape + "]"}, {"type", t.elementType().toString()}};
}

template <typename T> poplar::ProfileValue toProfileValue(const T *t) {
  return t ? toProfileValue(*t) : poplar::ProfileValue("<nullptr>");
}

template <typename T> poplar::ProfileValue toProfileValue(const std::vector<T> &values) {
  poplar::ProfileValue::Map map;
  for (std::size_t i = 0; i < values.size(); ++i)
    map.emplace(std::to_string(i), toProfileValue(values[i]));
  return map;
}
// vector<bool>'s elements are proxies, not bools: its own specialisation of the vector form.
template <> inline poplar::ProfileValue toProfileValue(const std::vector<bool> &values) {
  poplar::ProfileValue::Map map;
  for (std::size_t i = 0; i < values.size(); ++i)
    map.emplace(std::to_string(i), static_cast<bool>(values[i]));
  return map;
}

class ArgType {
public:
  std::string n;
  poplar::ProfileValue pv;

  ArgType(const std::string &name, const poplar::ProfileValue &value) : n(name), pv(value) {}
  ArgType(const std::pair<std::string, const poplar::ProfileValue> &p) : n(p.first), pv(p.second) {}
};

class OpDebugInfo : public poplar::DebugInfo {
public:
  OpDebugInfo(const poplar::DebugContext &debugContext, std::string api)
      : poplar::DebugInfo(debugContext, "poplibs") {
    setValue("api", std::move(api));
  }
  OpDebugInfo(const OpDebugInfo &) = delete;
  OpDebugInfo &operator=(const OpDebugInfo &) = delete;
  ~OpDebugInfo() override = default;

  // The arguments as one map under `name` (nothing when there are none).
  void add(const std::string &name, const std::vector<ArgType> &args) {
    if (args.empty())
      return;
    poplar::ProfileValue::Map map;
    for (const ArgType &arg : args)
      map.emplace(arg.n, arg.pv);
    setValue(name, std::move(map));
  }
};

class PoplibsOpDebugInfo : public OpDebugInfo {
public:
#if defined(__GNUC__) || defined(__clang__)
  PoplibsOpDebugInfo(const poplar::DebugContext &debugContext,
                     const std::vector<ArgType> &args = {},
                     const std::string &api = __builtin_FUNCTION())
#else
  PoplibsOpDebugInfo(const poplar::DebugContext &debugContext,
                     const std::vector<ArgType> &args = {}, const std::string &api = "")
#endif
      : OpDebugInfo(debugContext, api) {
    add("args", args);
  }
  PoplibsOpDebugInfo(const PoplibsOpDebugInfo &) = delete;
  PoplibsOpDebugInfo &operator=(const PoplibsOpDebugInfo &) = delete;
  ~PoplibsOpDebugInfo() override = default;

  void addOutputs(const std::vector<ArgType> &outputs) { add("outputs", outputs); }
  void addOutput(const poplar::Tensor &output) { setValue("output", toProfileValue(output)); }
};

} // namespace poputil

// DI_ARGS(a, b, c): each argument's spelling paired with its toProfileValue. The count picks
// the expansion (ASPEN_DI_PAIRS_n), each of which adds one pair to the next smaller one.
#define DI_STR(S) #S
#define DI_XSTR(S) DI_STR(S)
#define ASPEN_DI_COUNT(...)                                                                    \
  ASPEN_DI_COUNT_AT(__VA_ARGS__, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define ASPEN_DI_COUNT_AT(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, \
                          n, ...)                                                              \
  n
#define ASPEN_DI_JOIN(a, b) ASPEN_DI_JOIN_NOW(a, b)
#define ASPEN_DI_JOIN_NOW(a, b) a##b
#define ASPEN_DI_PAIR(x)                                                                       \
  { DI_XSTR(x), poputil::toProfileValue(x) }
#define ASPEN_DI_PAIRS_1(x) ASPEN_DI_PAIR(x)
#define ASPEN_DI_PAIRS_2(x, ...) ASPEN_DI_PAIR(x), ASPEN_DI_PAIRS_1(__VA_ARGS__)
#define ASPEN_DI_PAIRS_3(x, ...) ASPEN_DI_PAIR(x), ASPEN_DI_PAIRS_2(__VA_ARGS__)
#define ASPEN_DI_PAIRS_4(x, ...) ASPEN_DI_PAIR(x), ASPEN_DI_PAIRS_3(__VA_ARGS__)
#define ASPEN_DI_PAIRS_5(x, ...) ASPEN_DI_PAIR(x), ASPEN_DI_PAIRS_4(__VA_ARGS__)
#define ASPEN_DI_PAIRS_6(x, ...) ASPEN_DI_PAIR(x), ASPEN_DI_PAIRS_5(__VA_ARGS__)
#define ASPEN_DI_PAIRS_7(x, ...) ASPEN_DI_PAIR(x), ASPEN_DI_PAIRS_6(__VA_ARGS__)
#define ASPEN_DI_PAIRS_8(x, ...) ASPEN_DI_PAIR(x), ASPEN_DI_PAIRS_7(__VA_ARGS__)
#define ASPEN_DI_PAIRS_9(x, ...) ASPEN_DI_PAIR(x), ASPEN_DI_PAIRS_8(__VA_ARGS__)
#define ASPEN_DI_PAIRS_10(x, ...) ASPEN_DI_PAIR(x), ASPEN_DI_PAIRS_9(__VA_ARGS__)
#define ASPEN_DI_PAIRS_11(x, ...) ASPEN_DI_PAIR(x), ASPEN_DI_PAIRS_10(__VA_ARGS__)
#define ASPEN_DI_PAIRS_12(x, ...) ASPEN_DI_PAIR(x), ASPEN_DI_PAIRS_11(__VA_ARGS__)
#define ASPEN_DI_PAIRS_13(x, ...) ASPEN_DI_PAIR(x), ASPEN_DI_PAIRS_12(__VA_ARGS__)
#define ASPEN_DI_PAIRS_14(x, ...) ASPEN_DI_PAIR(x), ASPEN_DI_PAIRS_13(__VA_ARGS__)
#define ASPEN_DI_PAIRS_15(x, ...) ASPEN_DI_PAIR(x), ASPEN_DI_PAIRS_14(__VA_ARGS__)
#define ASPEN_DI_PAIRS_16(x, ...) ASPEN_DI_PAIR(x), ASPEN_DI_PAIRS_15(__VA_ARGS__)
#define DI_ARGS(...)                                                                           \
  { ASPEN_DI_JOIN(ASPEN_DI_PAIRS_, ASPEN_DI_COUNT(__VA_ARGS__))(__VA_ARGS__) }
