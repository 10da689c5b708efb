#include "support/Json.hpp"

#include <aspen/Error.hpp>
#include <aspen/OptionFlags.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>

namespace aspen {

void OptionFlags::set(StringRef key, StringRef value) {
  for (auto &[k, v] : options_)
    if (k == key) {
      v = std::string(value);
      return;
    }
  options_.emplace_back(std::string(key), std::string(value));
}

const std::string *OptionFlags::find(StringRef key) const {
  for (const auto &[k, v] : options_)
    if (k == key)
      return &v;
  return nullptr;
}

const std::string &OptionFlags::at(StringRef key) const {
  if (const auto *v = find(key))
    return *v;
  throw invalid_option(fmt::format("option '{}' is not set", key));
}

void OptionFlags::remove(StringRef key) {
  std::erase_if(options_, [&](const value_type &kv) { return kv.first == key; });
}

namespace {
namespace json = support::json;

// The members of the JSON object `text`, read from `source`, set into flags (all or none).
void readOptionsObject(std::string_view text, const std::string &source, OptionFlags &flags) {
  const json::Value root = json::parse(text, source);
  if (!root.isObject())
    throw invalid_option(fmt::format("{} = {}: must be a JSON object of options", source, text));
  OptionFlags read = flags;
  for (const auto &[key, value] : root.asObject()) {
    if (value.isString())
      read.set(key, value.asString());
    else if (value.isNumber())
      read.set(key, value.numberText());
    else if (value.isBool())
      read.set(key, value.asBool() ? "true" : "false");
    else
      throw invalid_option(fmt::format("{}: option '{}' = {} must be a string, a number or a "
                                       "boolean",
                                       source, key, value.write()));
  }
  flags = std::move(read);
}
} // namespace

void readJSON(StringRef string, OptionFlags &flags) {
  readOptionsObject(string, "readJSON", flags);
}

void readJSON(std::istream &stream, OptionFlags &flags) {
  const std::string text{std::istreambuf_iterator<char>(stream), std::istreambuf_iterator<char>()};
  if (stream.bad())
    throw invalid_option("readJSON: the stream could not be read");
  readOptionsObject(text, "readJSON (stream)", flags);
}

void readJSONFromEnv(StringRef envVarName, OptionFlags &flags) {
  const std::string name(envVarName);
  const char *text = std::getenv(name.c_str());
  if (!text || !*text)
    return;
  readOptionsObject(text, "environment variable " + name, flags);
}

std::ostream &operator<<(std::ostream &os, const OptionFlags &flags) {
  os << '{';
  bool first = true;
  for (const auto &[k, v] : flags) {
    os << (first ? "" : ", ") << '"' << k << "\": \"" << v << '"';
    first = false;
  }
  return os << '}';
}

} // namespace aspen
