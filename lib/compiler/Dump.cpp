#include "Dump.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace aspen::detail {

namespace {

const char *enumName(BufferKind kind) { return bufferKindName(kind); }
const char *enumName(StepKind kind) { return stepKindName(kind); }
const char *enumName(KernelKind kind) { return kernelKindName(kind); }
const char *enumName(DescTemplate::Base base) {
  static constexpr const char *names[] = {"null", "arena", "nested"}; // in Base's order
  return base <= DescTemplate::Nested ? names[base] : "?";
}

template <class T> struct IsVector : std::false_type {};
template <class T> struct IsVector<std::vector<T>> : std::true_type {};

// Values on one line; lists of structures one item a line below their member.
class Printer {
public:
  explicit Printer(std::ostream &out) : out_(out) {}

  template <class T> void member(const char *name, const T &value, int depth) {
    fmt::print(out_, "{:{}}{}: ", "", 2 * depth, name);
    if constexpr (IsVector<T>::value) {
      using Item = typename T::value_type;
      if constexpr (Members<Item>::described) {
        fmt::print(out_, "{} items\n", value.size());
        for (std::size_t i = 0; i < value.size() && i < kDumpItems; ++i) {
          fmt::print(out_, "{:{}}[{}] ", "", 2 * depth + 2, i);
          inline_(value[i]);
          out_ << '\n';
        }
        if (value.size() > kDumpItems)
          fmt::print(out_, "{:{}}... ({} more)\n", "", 2 * depth + 2, value.size() - kDumpItems);
        return;
      }
    }
    if constexpr (std::is_same_v<T, std::map<std::string, HostHandle, std::less<>>>) {
      fmt::print(out_, "{} items\n", value.size());
      for (const auto &[key, handle] : value) {
        fmt::print(out_, "{:{}}'{}' ", "", 2 * depth + 2, key);
        inline_(handle);
        out_ << '\n';
      }
    } else {
      inline_(value);
      out_ << '\n';
    }
  }

private:
  template <class T> void inline_(const T &v) {
    if constexpr (Members<T>::described) {
      out_ << '{';
      bool first = true;
      Members<T>::apply(v, [&](const char *name, const auto &m) {
        fmt::print(out_, "{}{}: ", first ? "" : ", ", name);
        first = false;
        inline_(m);
      });
      out_ << '}';
    } else if constexpr (std::is_same_v<T, std::vector<std::uint8_t>>) {
      fmt::print(out_, "<{} bytes>", v.size());
    } else if constexpr (IsVector<T>::value) {
      out_ << '[';
      for (std::size_t i = 0; i < v.size() && i < kDumpItems; ++i) {
        out_ << (i ? ", " : "");
        inline_(v[i]);
      }
      if (v.size() > kDumpItems)
        fmt::print(out_, ", ... ({} in all)", v.size());
      out_ << ']';
    } else if constexpr (std::is_same_v<T, std::string>) {
      fmt::print(out_, "\"{}\"", v);
    } else if constexpr (std::is_same_v<T, Type>) {
      out_ << v.toString();
    } else if constexpr (std::is_same_v<T, bool>) {
      out_ << (v ? "true" : "false");
    } else if constexpr (std::is_enum_v<T>) {
      out_ << enumName(v);
    } else if constexpr (std::is_same_v<T, std::shared_ptr<const CodeletLibrary>>) {
      fmt::print(out_, "codelets of '{}'", v->sourceName());
    } else {
      out_ << v;
    }
  }

  std::ostream &out_;
};

void dumpSteps(const CompiledGraph &graph, std::uint32_t step, int depth, std::ostream &out) {
  const Step &s = graph.steps[step];
  fmt::print(out, "{:{}}{} #{}", "", 2 * depth, stepKindName(s.kind), step);
  if (!s.name.empty())
    fmt::print(out, " '{}'", s.name);
  if (stepKindInfo(s.kind).payload != StepPayload::None)
    fmt::print(out, " index {}", s.index);
  if (s.kind == StepKind::Repeat)
    fmt::print(out, " count {}", s.count);
  fmt::print(out, "\n");
  // The steps of a function calling itself form a cycle: stop at a depth no program reaches.
  if (depth > 64)
    return;
  for (std::uint32_t child : s.children)
    dumpSteps(graph, child, depth + 1, out);
}

} // namespace

void dumpCompiledGraph(const CompiledGraph &graph, std::ostream &out) {
  Printer printer(out);
  Members<CompiledGraph>::apply(
      graph, [&](const char *name, const auto &member) { printer.member(name, member, 0); });
  for (std::size_t p = 0; p < graph.programs.size(); ++p) {
    fmt::print(out, "program {}:\n", p);
    dumpSteps(graph, graph.programs[p], 1, out);
  }
}

} // namespace aspen::detail
