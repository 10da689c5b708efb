// Executable: a compiled graph and its programs, and compileGraph, which makes one. Its own header
// so that the compiler, which implements serialisation, needs nothing of the engine's.
#pragma once

#include <aspen/ArrayRef.hpp>
#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>
#include <aspen/OptionFlags.hpp>
#include <aspen/Program.hpp>
#include <aspen/ProgressFunc.hpp>

#include <iosfwd>
#include <memory>

namespace aspen {

namespace detail {
struct CompiledGraph;
} // namespace detail

// A compiled graph and its programs, independent of the Graph it came from; serialisable.
class ASPEN_API Executable {
public:
  Executable(Executable &&) noexcept;
  Executable &operator=(Executable &&) noexcept;
  ~Executable();

  void serialize(std::ostream &out) const;
  // Raises serialization_error when the stream is not an Aspen executable of this version.
  static Executable deserialize(std::istream &in);

  explicit Executable(std::unique_ptr<detail::CompiledGraph> compiled);
  const detail::CompiledGraph &compiled() const { return *compiled_; }
  // Out of line: CompiledGraph is incomplete here.
  std::unique_ptr<detail::CompiledGraph> release();

private:
  std::unique_ptr<detail::CompiledGraph> compiled_;
};

ASPEN_API Executable compileGraph(const Graph &graph, ArrayRef<program::Program> programs,
                                  const OptionFlags &options = {}, ProgressFunc progress = {});

} // namespace aspen
