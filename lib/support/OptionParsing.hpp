// OptionSpec: the known keys of one option set (an Engine's, a builder's) and how each value is
// read. Unknown keys and bad values raise invalid_option naming the owner, the key, the value
// and what is allowed.
#pragma once

#include <aspen/OptionFlags.hpp>

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace aspen::detail {

class OptionSpec {
public:
  // `owner` names the option set in messages ("Engine", "lstm", ...).
  explicit OptionSpec(std::string owner) : owner_(std::move(owner)) {}

  // A value read by `read`, which returns false for a bad value; `allowed` describes the
  // accepted values in messages.
  OptionSpec &add(std::string key, std::string allowed, std::function<bool(const std::string &)> read);
  OptionSpec &boolean(std::string key, bool &target);
  OptionSpec &unsignedInteger(std::string key, unsigned &target, unsigned min = 0,
                              unsigned max = ~0u);
  OptionSpec &number(std::string key, double &target, double min, double max);
  template <class T>
  OptionSpec &enumeration(std::string key, T &target, std::vector<std::pair<std::string, T>> values) {
    std::string allowed;
    for (const auto &[name, value] : values)
      allowed += (allowed.empty() ? "" : ", ") + name;
    return add(std::move(key), "one of " + allowed,
               [&target, values](const std::string &v) {
                 for (const auto &[name, value] : values)
                   if (name == v) {
                     target = value;
                     return true;
                   }
                 return false;
               });
  }
  // Keys accepted and ignored (for example Poplar options with no meaning here).
  OptionSpec &ignored(std::string key);

  // Reads every option. When unknownIsError is false, unknown keys are logged as warnings.
  void parse(const OptionFlags &options, bool unknownIsError = true) const;
  bool knows(const std::string &key) const { return entries_.count(key) != 0; }
  // The known keys that start with `prefix`, sorted.
  std::vector<std::string> keysWithPrefix(const std::string &prefix) const {
    std::vector<std::string> keys;
    for (const auto &[key, entry] : entries_)
      if (key.rfind(prefix, 0) == 0)
        keys.push_back(key);
    return keys;
  }

private:
  struct Entry {
    std::string allowed;
    std::function<bool(const std::string &)> read;
  };
  std::string owner_;
  std::map<std::string, Entry> entries_;
};

} // namespace aspen::detail
