// 64-bit FNV-1a (Fowler-Noll-Vo) hashing of length-prefixed pieces.
#include "ContentHash.hpp"

namespace aspen::detail {

void ContentHash::mix(const unsigned char *p, std::size_t n) {
  constexpr std::uint64_t kPrime = 0x100000001b3ull;
  for (std::size_t i = 0; i < n; ++i) {
    state_ ^= p[i];
    state_ *= kPrime;
  }
}

ContentHash &ContentHash::add(std::string_view bytes) {
  unsigned char length[8];
  for (unsigned i = 0; i < 8; ++i)
    length[i] = static_cast<unsigned char>(static_cast<std::uint64_t>(bytes.size()) >> (8 * i));
  mix(length, sizeof length);
  mix(reinterpret_cast<const unsigned char *>(bytes.data()), bytes.size());
  return *this;
}

std::string ContentHash::hex() const {
  static const char kDigits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (unsigned i = 0; i < 16; ++i)
    out[15 - i] = kDigits[(state_ >> (4 * i)) & 0xf];
  return out;
}

} // namespace aspen::detail
