// Running the host C++ compiler on codelet sources: preprocessing for discovery and compiling a
// generated wrapper into a shared object.
//
// The compiler is the one Aspen was built with (ASPEN_HOST_CXX), or $ASPEN_CXX. Codelets see
// Aspen's headers from $ASPEN_INCLUDE_DIR, else the source tree's include directory when it
// exists, else the installed one; Poplar's header names (include/compat, installed as
// aspen-compat) come next when present. Both steps define __ASPEN_CODELET__ and __POPC__ and add
// the codelet file's own directory to the include path.
#pragma once

#include <string>
#include <vector>

namespace aspen::detail {

struct HostCompiler {
  std::string executable;
  std::string identity;         // executable and the first line of its --version
  std::string includeDir;       // where <aspen/Vertex.hpp> is found (canonical)
  std::string compatIncludeDir; // where <poplar/Vertex.hpp> is found, or empty

  // Resolved once per process from the environment.
  static const HostCompiler &get();

  // The flags of both steps, before the user's extra flags.
  std::vector<std::string> commonFlags(const std::string &sourcePath) const;
  // The shared object's code generation flags.
  static std::vector<std::string> sharedObjectFlags();

  // `source` preprocessed as if it were the file `sourcePath` (linemarkers name it).
  // Raises codelet_error with the diagnostics on failure.
  std::string preprocess(const std::string &sourcePath, const std::string &source,
                         const std::vector<std::string> &extraFlags) const;

  // Compiles the wrapper translation unit at `wrapperPath` into `outputPath`; raises
  // codelet_error("codelet file '<sourcePath>' failed to compile: <diagnostics>").
  void compileSharedObject(const std::string &sourcePath, const std::string &wrapperPath,
                           const std::string &outputPath,
                           const std::vector<std::string> &extraFlags) const;
};

// How many shared objects this process has compiled (cache misses), for tests and logging.
unsigned long hostCompileCount();

// `text` as a C string literal body: backslashes and quotes escaped (for #line directives).
std::string escapeForStringLiteral(const std::string &text);

} // namespace aspen::detail
