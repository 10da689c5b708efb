#include <aspen/Error.hpp>
#include <aspen/OptionFlags.hpp>

#include <fmt/format.h>

#include <algorithm>

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
