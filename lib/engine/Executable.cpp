// Executable and compileGraph: a compiled graph held apart from any Engine.
#include "compiler/Compiler.hpp"
#include "engine/EngineOptions.hpp"

#include <aspen/Engine.hpp>

namespace aspen {

Executable::Executable(std::unique_ptr<detail::CompiledGraph> compiled)
    : compiled_(std::move(compiled)) {}
Executable::Executable(Executable &&) noexcept = default;
Executable &Executable::operator=(Executable &&) noexcept = default;
Executable::~Executable() = default;
std::unique_ptr<detail::CompiledGraph> Executable::release() { return std::move(compiled_); }

Executable compileGraph(const Graph &graph, ArrayRef<program::Program> programs,
                        const OptionFlags &options, ProgressFunc progress) {
  const detail::EngineOptions parsed = detail::parseEngineOptions(options);
  return Executable(detail::compile(graph.state(), programs, {parsed.allowOutOfMemory}, progress));
}

} // namespace aspen
