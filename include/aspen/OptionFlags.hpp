// OptionFlags: string key/value options, brace-initialisable and iterable in insertion order.
// Setting an existing key replaces its value.
#pragma once

#include <aspen/ArrayRef.hpp>
#include <aspen/Export.hpp>
#include <aspen/ProfileValue.hpp>

#include <initializer_list>
#include <istream>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace aspen {

class ASPEN_API OptionFlags {
public:
  using value_type = std::pair<std::string, std::string>;
  using const_iterator = std::vector<value_type>::const_iterator;
  using initializer_list = std::initializer_list<value_type>;

  OptionFlags() = default;
  OptionFlags(initializer_list options) { set(options); }

  void set(initializer_list options) {
    for (const auto &[key, value] : options)
      set(key, value);
  }
  void set(StringRef key, StringRef value);
  // The value of key; throws invalid_option naming the key when it is not set.
  const std::string &at(StringRef key) const;
  const std::string *find(StringRef key) const;
  bool contains(StringRef key) const { return find(key) != nullptr; }
  void remove(StringRef key);
  void clear() { options_.clear(); }
  bool empty() const { return options_.empty(); }
  std::size_t size() const { return options_.size(); }
  const_iterator begin() const { return options_.begin(); }
  const_iterator end() const { return options_.end(); }

  friend bool operator==(const OptionFlags &a, const OptionFlags &b) {
    return a.options_ == b.options_;
  }
  friend bool operator!=(const OptionFlags &a, const OptionFlags &b) { return !(a == b); }
  friend ASPEN_API std::ostream &operator<<(std::ostream &os, const OptionFlags &flags);

private:
  std::vector<value_type> options_;
};

// The options as a ProfileValue map from each key to its value (Poplar's getAsProfileValue).
inline ProfileValue getAsProfileValue(const OptionFlags &flags) {
  ProfileValue::Map map;
  for (const auto &[key, value] : flags)
    map.insert_or_assign(key, value);
  return map;
}

// Poplar's readers of options written as one JSON object, {"key": value, ...}: each member sets
// its key (replacing a value already there), a string value as it is, a number as its text
// ("0.6", "1e-3") and a boolean as "true" or "false". Text that is not such an object (bad JSON,
// another kind of value, a member whose value is an object, an array or null) raises
// invalid_option naming the source and what was wrong; flags is then left unchanged.
ASPEN_API void readJSON(StringRef string, OptionFlags &flags);
ASPEN_API void readJSON(std::istream &stream, OptionFlags &flags);
// The JSON object in environment variable `envVarName`; nothing when it is unset or empty.
ASPEN_API void readJSONFromEnv(StringRef envVarName, OptionFlags &flags);

} // namespace aspen
