#include "OptionParsing.hpp"
#include "support/Logging.hpp"

#include <aspen/Error.hpp>

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace aspen::detail {

OptionSpec &OptionSpec::add(std::string key, std::string allowed,
                            std::function<bool(const std::string &)> read) {
  entries_[std::move(key)] = Entry{std::move(allowed), std::move(read)};
  return *this;
}

OptionSpec &OptionSpec::boolean(std::string key, bool &target) {
  return add(std::move(key), "true or false", [&target](const std::string &v) {
    if (v == "true" || v == "1")
      target = true;
    else if (v == "false" || v == "0")
      target = false;
    else
      return false;
    return true;
  });
}

OptionSpec &OptionSpec::unsignedInteger(std::string key, unsigned &target, unsigned min,
                                        unsigned max) {
  return add(std::move(key), fmt::format("an integer in [{}, {}]", min, max),
             [&target, min, max](const std::string &v) {
               unsigned long long x = 0;
               const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
               if (ec != std::errc() || end != v.data() + v.size() || x < min || x > max)
                 return false;
               target = static_cast<unsigned>(x);
               return true;
             });
}

OptionSpec &OptionSpec::number(std::string key, double &target, double min, double max) {
  return add(std::move(key), fmt::format("a number in [{}, {}]", min, max),
             [&target, min, max](const std::string &v) {
               try {
                 std::size_t used = 0;
                 const double x = std::stod(v, &used);
                 if (used != v.size() || !std::isfinite(x) || x < min || x > max)
                   return false;
                 target = x;
                 return true;
               } catch (const std::exception &) {
                 return false;
               }
             });
}

OptionSpec &OptionSpec::ignored(std::string key) {
  return add(std::move(key), "any value", [](const std::string &) { return true; });
}

void OptionSpec::parse(const OptionFlags &options, bool unknownIsError) const {
  for (const auto &[key, value] : options) {
    const auto it = entries_.find(key);
    if (it == entries_.end()) {
      if (unknownIsError) {
        std::string known;
        for (const auto &[k, e] : entries_)
          known += (known.empty() ? "" : ", ") + k;
        throw invalid_option(fmt::format("{} option '{}' is not known; the known options are: {}",
                                         owner_, key, known));
      }
      logger().warn("{} option '{}' (= '{}') is not used by Aspen and is ignored", owner_, key,
                    value);
      continue;
    }
    if (!it->second.read(value))
      throw invalid_option(fmt::format("{} option '{}': value '{}' is not allowed; expected {}",
                                       owner_, key, value, it->second.allowed));
  }
}

} // namespace aspen::detail
