// ArrayRef<T>: a non-owning view of a contiguous list, built implicitly from a braced list, a
// std::vector or a std::array, as Poplar's parameter type is.
#pragma once

#include <array>
#include <cstddef>
#include <initializer_list>
#include <string_view>
#include <vector>

namespace aspen {

template <class T> class ArrayRef {
public:
  using value_type = T;
  using const_iterator = const T *;
  using iterator = const T *;

  constexpr ArrayRef() noexcept = default;
  constexpr ArrayRef(const T *data, std::size_t size) noexcept : data_(data), size_(size) {}
  ArrayRef(const std::vector<T> &v) noexcept : data_(v.data()), size_(v.size()) {}
  template <std::size_t N>
  constexpr ArrayRef(const std::array<T, N> &a) noexcept : data_(a.data()), size_(N) {}
  // The list lives until the end of the full expression, which covers any call it is passed to.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  constexpr ArrayRef(std::initializer_list<T> list) noexcept
      : data_(list.begin()), size_(list.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

  constexpr const T *data() const noexcept { return data_; }
  constexpr std::size_t size() const noexcept { return size_; }
  constexpr bool empty() const noexcept { return size_ == 0; }
  constexpr const T *begin() const noexcept { return data_; }
  constexpr const T *end() const noexcept { return data_ + size_; }
  constexpr const T &operator[](std::size_t i) const noexcept { return data_[i]; }
  constexpr const T &front() const noexcept { return data_[0]; }
  constexpr const T &back() const noexcept { return data_[size_ - 1]; }
  std::vector<T> vec() const { return std::vector<T>(begin(), end()); }
  operator std::vector<T>() const { return vec(); }

private:
  const T *data_ = nullptr;
  std::size_t size_ = 0;
};

// Poplar's StringRef: any string-like argument.
using StringRef = std::string_view;

} // namespace aspen
