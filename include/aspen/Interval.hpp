// Interval: a half-open range [begin, end) of element indices.
#pragma once

#include <cstddef>
#include <ostream>

namespace aspen {

class Interval {
public:
  constexpr Interval() noexcept = default;
  constexpr Interval(std::size_t begin, std::size_t end) noexcept : begin_(begin), end_(end) {}
  constexpr std::size_t begin() const noexcept { return begin_; }
  constexpr std::size_t end() const noexcept { return end_; }
  constexpr std::size_t size() const noexcept { return end_ - begin_; }
  // Spelled out (not defaulted) so that C++17 code can include the public headers.
  friend constexpr bool operator==(const Interval &a, const Interval &b) {
    return a.begin_ == b.begin_ && a.end_ == b.end_;
  }
  friend constexpr bool operator!=(const Interval &a, const Interval &b) { return !(a == b); }
  friend constexpr bool operator<(const Interval &a, const Interval &b) {
    return a.begin_ != b.begin_ ? a.begin_ < b.begin_ : a.end_ < b.end_;
  }
  friend constexpr bool operator>(const Interval &a, const Interval &b) { return b < a; }
  friend constexpr bool operator<=(const Interval &a, const Interval &b) { return !(b < a); }
  friend constexpr bool operator>=(const Interval &a, const Interval &b) { return !(a < b); }
  friend std::ostream &operator<<(std::ostream &os, const Interval &i) {
    return os << '[' << i.begin_ << ',' << i.end_ << ')';
  }

private:
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
};

} // namespace aspen
