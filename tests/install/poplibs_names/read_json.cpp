// poplar::readJSON, as PopLibs' tools read --matmul-options and similar flags: one JSON object
// whose members set options (strings as they are, numbers as their text, booleans as
// true/false), from a string, a stream or an environment variable. Anything else raises
// poplar::invalid_option naming what was wrong and leaves the flags as they were.
#include <poplar/OptionFlags.hpp>
#include <poplar/exceptions.hpp>

#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

namespace {
// The message of the invalid_option that reading `text` raises ("" when none).
std::string refusal(const std::string &text, poplar::OptionFlags &flags) {
  try {
    poplar::readJSON(text, flags);
  } catch (const poplar::invalid_option &e) {
    return e.what();
  }
  return "";
}
} // namespace

int main() {
  poplar::OptionFlags flags{{"availableMemoryProportion", "1.0"}, {"keep", "me"}};
  poplar::readJSON(std::string(R"({"availableMemoryProportion": 0.6, "partialsType": "half",
                                   "fullyConnectedPass": "TRAINING_BWD", "use128BitConvUnitLoad":
                                   true, "tiny": 1e-3})"),
                   flags);
  const poplar::OptionFlags expected{{"availableMemoryProportion", "0.6"},
                                     {"keep", "me"},
                                     {"partialsType", "half"},
                                     {"fullyConnectedPass", "TRAINING_BWD"},
                                     {"use128BitConvUnitLoad", "true"},
                                     {"tiny", "1e-3"}};
  bool ok = flags == expected;

  std::stringstream stream(R"({"partialsType": "float"})");
  poplar::readJSON(stream, flags);
  ok = ok && flags.at("partialsType") == "float";

  setenv("NAMES_READ_JSON_TEST", R"({"fromEnv": false})", 1);
  poplar::readJSONFromEnv("NAMES_READ_JSON_TEST", flags);
  unsetenv("NAMES_UNSET_VARIABLE");
  poplar::readJSONFromEnv("NAMES_UNSET_VARIABLE", flags); // unset: nothing
  ok = ok && flags.at("fromEnv") == "false" && flags.size() == expected.size() + 1;

  const poplar::OptionFlags before = flags;
  const std::string nested = refusal(R"({"a": "1", "planConstraints": {"method": "AMP"}})", flags);
  const std::string notObject = refusal("[1, 2]", flags);
  const std::string badJson = refusal(R"({"a": 1,})", flags);
  ok = ok && nested.find("planConstraints") != std::string::npos &&
       nested.find("a string, a number or a boolean") != std::string::npos &&
       notObject.find("a JSON object of options") != std::string::npos && !badJson.empty() &&
       flags == before;
  std::cout << (ok ? "read_json ok"
                   : "read_json FAILED: " + nested + " / " + notObject + " / " + badJson)
            << "\n";
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
