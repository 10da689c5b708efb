// The host compiler's command lines for codelets, and the environment variables that pick the
// compiler and Aspen's include directory.
#include "HostCompiler.hpp"

#include "CodeletCache.hpp"
#include "Subprocess.hpp"
#include "support/LibraryCodelets.hpp"

#include <aspen/Error.hpp>

#include <atomic>
#include <cstdlib>
#include <filesystem>

namespace aspen::detail {

namespace fs = std::filesystem;

namespace {

std::atomic<unsigned long> compileCount{0};

std::string envOr(const char *name, const std::string &fallback) {
  const char *value = std::getenv(name);
  return value && *value ? std::string(value) : fallback;
}

// $ASPEN_INCLUDE_DIR; else the source tree's headers when libaspen is the build tree's; else the
// include folder beside libaspen's folder (an installed or bundled prefix, wherever it was
// moved); else the install prefix configured at build time.
std::string findIncludeDir() {
  std::string dir = envOr("ASPEN_INCLUDE_DIR", "");
  if (dir.empty()) {
    const fs::path besideLibrary = fs::path(aspenLibraryFolder()).parent_path() / "include";
    if (aspenRunsFromBuildTree())
      dir = ASPEN_SOURCE_INCLUDE_DIR;
    else if (!aspenLibraryFolder().empty() && fs::exists(besideLibrary / "aspen" / "Vertex.hpp"))
      dir = besideLibrary.string();
    else
      dir = ASPEN_INSTALL_INCLUDE_DIR;
  }
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(dir, ec);
  return ec ? dir : canonical.string();
}

std::string firstLine(const std::string &text) { return text.substr(0, text.find('\n')); }

// Keeps a compiler's output readable in an exception message.
std::string trimDiagnostics(const std::string &output) {
  constexpr std::size_t kMaxBytes = 16000;
  if (output.size() <= kMaxBytes)
    return output;
  return output.substr(0, kMaxBytes) + "\n[... " + std::to_string(output.size() - kMaxBytes) +
         " more bytes of diagnostics]";
}

std::string directoryOf(const std::string &sourcePath) {
  const fs::path parent = fs::absolute(fs::path(sourcePath)).parent_path();
  return parent.empty() ? fs::current_path().string() : parent.string();
}

} // namespace

const HostCompiler &HostCompiler::get() {
  static const HostCompiler compiler = [] {
    HostCompiler c;
    c.executable = envOr("ASPEN_CXX", ASPEN_HOST_CXX);
    const ProcessResult version = runProcess({c.executable, "--version"});
    c.identity = c.executable + "\n" + firstLine(version.output);
    c.includeDir = findIncludeDir();
    for (const char *compat : {"compat", "aspen-compat"})
      if (fs::is_directory(fs::path(c.includeDir) / compat))
        c.compatIncludeDir = (fs::path(c.includeDir) / compat).string();
    return c;
  }();
  return compiler;
}

std::vector<std::string> HostCompiler::commonFlags(const std::string &sourcePath) const {
  std::vector<std::string> flags{"-std=c++20", "-D__ASPEN_CODELET__", "-D__POPC__",
                                 "-I" + includeDir};
  if (!compatIncludeDir.empty())
    flags.push_back("-I" + compatIncludeDir);
  flags.push_back("-I" + directoryOf(sourcePath));
  return flags;
}

std::vector<std::string> HostCompiler::sharedObjectFlags() {
  // Hidden by default: codelet libraries loaded side by side never bind to each other's inline
  // functions (two files may define classes of the same name); the wrapper exports its symbols.
  // -fno-trapping-math changes no result; it lets branch-free maths (ActivationMath.hpp) vectorise.
  // -ffp-contract=off: a * b + c rounds twice, as on the GPU (NVRTC's --fmad=false), so a loop a
  // codelet builds for AVX2 or AVX-512 (target attributes) gives the baseline build's bits; a
  // kernel that wants FMA says so with intrinsics (codelets/nn/PackedProduct.hpp).
  return {"-O2",         "-fPIC",           "-shared",           "-Wno-attributes",
          "-fvisibility=hidden", "-fno-trapping-math", "-ffp-contract=off"};
}

std::string HostCompiler::preprocess(const std::string &sourcePath, const std::string &source,
                                     const std::vector<std::string> &extraFlags) const {
  const fs::path dir = codeletCacheDir() / "tmp";
  fs::create_directories(dir);
  const fs::path input = uniqueTempPath(dir, "source", ".cpp");
  const fs::path output = uniqueTempPath(dir, "preprocessed", ".ii");
  writeFileAtomically(input, "#line 1 \"" + escapeForStringLiteral(sourcePath) + "\"\n" + source);

  // The source arrives on stdin so that no temporary name appears in the linemarkers.
  std::vector<std::string> argv{executable};
  for (std::string &f : commonFlags(sourcePath))
    argv.push_back(std::move(f));
  argv.insert(argv.end(), extraFlags.begin(), extraFlags.end());
  for (const char *f : {"-E", "-x", "c++", "-", "-o"})
    argv.emplace_back(f);
  argv.push_back(output.string());
  const ProcessResult result = runProcess(argv, input.string());
  std::error_code ec;
  fs::remove(input, ec);
  if (result.exitCode != 0) {
    fs::remove(output, ec);
    throw codelet_error("codelet file '" + sourcePath + "' failed to preprocess:\n" +
                        trimDiagnostics(result.output));
  }
  std::string text = readWholeFile(output);
  fs::remove(output, ec);
  return text;
}

void HostCompiler::compileSharedObject(const std::string &sourcePath,
                                       const std::string &wrapperPath,
                                       const std::string &outputPath,
                                       const std::vector<std::string> &extraFlags) const {
  std::vector<std::string> argv{executable};
  for (std::string &f : commonFlags(sourcePath))
    argv.push_back(std::move(f));
  for (std::string &f : sharedObjectFlags())
    argv.push_back(std::move(f));
  argv.insert(argv.end(), extraFlags.begin(), extraFlags.end());
  for (const std::string &f :
       {std::string("-x"), std::string("c++"), wrapperPath, std::string("-o"), outputPath})
    argv.push_back(f);
  ++compileCount;
  const ProcessResult result = runProcess(argv);
  if (result.exitCode != 0)
    throw codelet_error("codelet file '" + sourcePath + "' failed to compile:\n" +
                        trimDiagnostics(result.output));
}

unsigned long hostCompileCount() { return compileCount.load(); }

std::string escapeForStringLiteral(const std::string &text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '"')
      out += '\\';
    out += c;
  }
  return out;
}

} // namespace aspen::detail
