#include "PrintTensor.hpp"

#include <aspen/HalfFloat.hpp>

#include <cstring>
#include <fmt/format.h>

namespace aspen::detail {

namespace {

template <class T> T load(const std::uint8_t *p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

void appendElement(std::string &out, Type type, const std::uint8_t *p) {
  switch (type.id()) {
  case TypeId::Float: out += fmt::format("{:.7f}", load<float>(p)); return;
  case TypeId::Half: out += fmt::format("{:.7f}", float(load<half>(p))); return;
  case TypeId::Int: out += fmt::format("{}", load<int>(p)); return;
  case TypeId::UnsignedInt: out += fmt::format("{}", load<unsigned>(p)); return;
  case TypeId::Short: out += fmt::format("{}", load<short>(p)); return;
  case TypeId::UnsignedShort: out += fmt::format("{}", load<unsigned short>(p)); return;
  case TypeId::Char: out += fmt::format("{}", int(load<char>(p))); return;
  case TypeId::UnsignedChar: out += fmt::format("{}", unsigned(load<unsigned char>(p))); return;
  case TypeId::SignedChar: out += fmt::format("{}", int(load<signed char>(p))); return;
  case TypeId::Bool: out += *p ? "1" : "0"; return;
  case TypeId::LongLong: out += fmt::format("{}", load<long long>(p)); return;
  case TypeId::UnsignedLongLong: out += fmt::format("{}", load<unsigned long long>(p)); return;
  // A quarter's value needs its metadata, which a print step does not read: the code is shown.
  case TypeId::Quarter: out += fmt::format("q{:#04x}", unsigned(*p)); return;
  case TypeId::QuarterMetadataType: out += QuarterMetadata(static_cast<unsigned char>(*p & 0xbf)).toString(); return;
  case TypeId::Invalid: break;
  }
  out += "?";
}

struct Printer {
  const PrintInfo &print;
  const std::uint8_t *data;
  std::size_t elementBytes;
  std::string out;

  // Prints dimension `dim` onwards of the block starting at element `first`.
  void block(std::size_t dim, std::size_t first, unsigned indent) {
    const std::size_t n = print.shape[dim];
    std::size_t inner = 1;
    for (std::size_t d = dim + 1; d < print.shape.size(); ++d)
      inner *= print.shape[d];
    out += '[';
    if (dim + 1 == print.shape.size()) {
      for (std::size_t i = 0; i < n; ++i) {
        if (i)
          out += ' ';
        appendElement(out, print.type, data + (first + i) * elementBytes);
      }
    } else {
      out += '\n';
      for (std::size_t i = 0; i < n; ++i) {
        out.append(indent + 1, ' ');
        block(dim + 1, first + i * inner, indent + 1);
        out += '\n';
      }
      out.append(indent, ' ');
    }
    out += ']';
  }
};

} // namespace

std::string formatTensor(const PrintInfo &print, const void *data) {
  Printer printer{print, static_cast<const std::uint8_t *>(data), print.type.size(),
                  print.title + ": "};
  if (print.shape.empty())
    appendElement(printer.out, print.type, printer.data);
  else
    printer.block(0, 0, 0);
  printer.out += '\n';
  return printer.out;
}

} // namespace aspen::detail
