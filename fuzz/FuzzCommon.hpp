// What every libFuzzer harness shares: reading numbers out of the fuzzer's bytes, and the rule
// that bad input may raise aspen::error and nothing else. Another exception (internal_error is a
// std::logic_error, not an aspen::error), a failed check or a sanitizer report is a finding.
#pragma once

#include <aspen/Error.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

namespace aspen::fuzz {

// A finding: print it and abort, which libFuzzer records with the input that caused it.
[[noreturn]] inline void fail(const std::string &what) {
  std::fprintf(stderr, "aspen fuzz finding: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

inline void check(bool ok, const std::string &what) {
  if (!ok)
    fail(what);
}

// Runs `body`; an aspen::error is an accepted refusal (returns false), any other exception is a
// finding.
template <class F> bool refusedOrDone(F &&body) {
  try {
    body();
    return true;
  } catch (const aspen::error &) {
    return false;
  } catch (const std::exception &e) {
    fail(std::string("an exception that is not an aspen::error: ") + e.what());
  } catch (...) {
    fail("an exception that is not a std::exception");
  }
}

// Consumes the fuzzer's bytes from the front; past the end every read gives 0.
class Bytes {
public:
  Bytes(const std::uint8_t *data, std::size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  std::size_t left() const { return empty() ? 0 : size_ - pos_; }
  std::uint8_t byte() { return empty() ? 0 : data_[pos_++]; }
  // A number in [0, bound) (bound > 0), from one or two bytes.
  unsigned below(unsigned bound) {
    unsigned v = byte();
    if (bound > 256)
      v = v << 8 | byte();
    return v % bound;
  }
  bool flag() { return byte() & 1; }
  // The rest of the input as text.
  std::string_view rest() {
    std::string_view r(reinterpret_cast<const char *>(data_) + pos_, left());
    pos_ = size_;
    return r;
  }

private:
  const std::uint8_t *data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

} // namespace aspen::fuzz
