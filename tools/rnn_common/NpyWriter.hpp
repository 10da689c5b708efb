// Writes NumPy .npy files (format version 1.0) of float32 for lstm_layer's and gru_layer's
// --save-tensors, and escapes strings for their JSON manifest. Plain C++17, header-only.
//
// Layout: the magic "\x93NUMPY", version bytes 1 0, a little-endian uint16 header length, then
// the header -- a Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (..), }
// padded with spaces and ended by '\n' so that magic + length + header is a multiple of 64
// bytes -- then the values as little-endian IEEE float32 in C (row-major) order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace npy {

inline constexpr std::size_t kAlignment = 64;
inline constexpr std::size_t kPreambleBytes = 10; // magic (6), version (2), header length (2)

// The header dict, padded and ended with '\n'; its length makes the preamble plus header a
// multiple of kAlignment. A 1-D shape prints as "(n,)", a 0-D one as "()".
inline std::string headerFor(const std::vector<std::size_t> &shape) {
  std::string dims;
  for (std::size_t k = 0; k < shape.size(); ++k)
    dims += (k ? ", " : "") + std::to_string(shape[k]);
  if (shape.size() == 1)
    dims += ",";
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  const std::size_t unpadded = kPreambleBytes + header.size() + 1; // + '\n'
  header.append((kAlignment - unpadded % kAlignment) % kAlignment, ' ');
  header += '\n';
  return header;
}

// The whole file's bytes.
inline std::string encode(const std::vector<float> &values, const std::vector<std::size_t> &shape) {
  std::size_t count = 1;
  for (std::size_t n : shape)
    count *= n;
  if (count != values.size())
    throw std::invalid_argument("npy::encode: the shape holds " + std::to_string(count) +
                                " elements but there are " + std::to_string(values.size()));
  const std::string header = headerFor(shape);
  if (header.size() > 0xffff)
    throw std::invalid_argument("npy::encode: a header of " + std::to_string(header.size()) +
                                " bytes does not fit version 1.0");
  std::string bytes = "\x93NUMPY";
  bytes += '\x01';
  bytes += '\x00';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  bytes.reserve(bytes.size() + 4 * values.size());
  for (float v : values) {
    std::uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    for (int shift = 0; shift < 32; shift += 8) // little-endian whatever the host
      bytes += static_cast<char>((bits >> shift) & 0xff);
  }
  return bytes;
}

// Writes `values` (row-major, product(shape) of them) as float32 to `path`; throws
// std::runtime_error naming the path when it cannot be opened or written.
inline void write(const std::string &path, const std::vector<float> &values,
                  const std::vector<std::size_t> &shape) {
  const std::string bytes = encode(values, shape);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    throw std::runtime_error("cannot open '" + path + "' for writing");
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out)
    throw std::runtime_error("cannot write '" + path + "'");
}

// Doubles are rounded to float32.
inline void write(const std::string &path, const std::vector<double> &values,
                  const std::vector<std::size_t> &shape) {
  write(path, std::vector<float>(values.begin(), values.end()), shape);
}

// `s` as the inside of a JSON string literal: quote, backslash and control characters escaped.
inline std::string jsonEscape(const std::string &s) {
  std::string out;
  for (unsigned char ch : s) {
    switch (ch) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    default:
      if (ch < 0x20) {
        static const char hex[] = "0123456789abcdef";
        out += "\\u00";
        out += hex[ch >> 4];
        out += hex[ch & 0xf];
      } else {
        out += static_cast<char>(ch);
      }
    }
  }
  return out;
}

} // namespace npy
