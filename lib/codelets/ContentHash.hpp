// A 64-bit FNV-1a hash over a sequence of byte strings, for cache keys of compiled codelets.
// Each piece is hashed with its length so that ("ab", "c") and ("a", "bc") differ.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace aspen::detail {

class ContentHash {
public:
  ContentHash &add(std::string_view bytes);
  // 16 lower-case hex digits.
  std::string hex() const;
  std::uint64_t value() const { return state_; }

private:
  void mix(const unsigned char *p, std::size_t n);
  std::uint64_t state_ = 0xcbf29ce484222325ull;
};

} // namespace aspen::detail
