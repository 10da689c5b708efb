// NVRTC program creation, compilation and output retrieval for codelet translation units and
// Aspen's own CUDA code.
#include "NvrtcCompiler.hpp"

#include "codelets/HostCompiler.hpp"
#include "codelets/Subprocess.hpp"

#include <aspen/Error.hpp>

#include <nvrtc.h>

#include <cstdlib>
#include <filesystem>
#include <regex>

namespace aspen::detail {

namespace {

// Raises internal_error naming the call unless `result` is NVRTC_SUCCESS.
void checkNvrtc(nvrtcResult result, const char *call) {
  if (result != NVRTC_SUCCESS)
    throw internal_error(std::string(call) + " failed: " + nvrtcGetErrorString(result));
}
#define ASPEN_NVRTC_CHECK(call) checkNvrtc(call, #call)

// Destroys the program however the compile ends.
class NvrtcProgram {
public:
  NvrtcProgram(const std::string &source, const std::string &name) {
    ASPEN_NVRTC_CHECK(nvrtcCreateProgram(&program_, source.c_str(), name.c_str(), 0, nullptr,
                                         nullptr));
  }
  ~NvrtcProgram() { nvrtcDestroyProgram(&program_); }
  NvrtcProgram(const NvrtcProgram &) = delete;
  NvrtcProgram &operator=(const NvrtcProgram &) = delete;
  nvrtcProgram get() const { return program_; }

  std::string log() const {
    std::size_t size = 0;
    ASPEN_NVRTC_CHECK(nvrtcGetProgramLogSize(program_, &size));
    std::string log(size, '\0');
    ASPEN_NVRTC_CHECK(nvrtcGetProgramLog(program_, log.data()));
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
      log.pop_back();
    return log;
  }

private:
  nvrtcProgram program_ = nullptr;
};

// NVRTC writes "file(12): error: ..."; host compilers and Aspen's messages say "file:12: error".
std::string hostStyleLocations(const std::string &log) {
  static const std::regex location(R"(^([^\n(]+)\((\d+)\): )", std::regex::multiline);
  return std::regex_replace(log, location, "$1:$2: ");
}

// Compiles `program` for sm_`cc` with `options`; NVRTC's result.
nvrtcResult compileFor(const NvrtcProgram &program, unsigned cc,
                       const std::vector<std::string> &options) {
  const std::string archOption = "--gpu-architecture=sm_" + std::to_string(cc);
  std::vector<const char *> argv{archOption.c_str()};
  for (const std::string &o : options)
    argv.push_back(o.c_str());
  return nvrtcCompileProgram(program.get(), static_cast<int>(argv.size()), argv.data());
}

std::string cubinOf(const NvrtcProgram &program) {
  std::size_t size = 0;
  ASPEN_NVRTC_CHECK(nvrtcGetCUBINSize(program.get(), &size));
  std::string cubin(size, '\0');
  ASPEN_NVRTC_CHECK(nvrtcGetCUBIN(program.get(), cubin.data()));
  return cubin;
}

std::string directoryOf(const std::string &sourcePath) {
  const std::filesystem::path parent =
      std::filesystem::absolute(std::filesystem::path(sourcePath)).parent_path();
  return parent.empty() ? std::filesystem::current_path().string() : parent.string();
}

// The folder of a codelet file's own headers: the one its source was compiled from; or, when that
// is gone (a library codelet family run from a bundle or a moved install, whose .gp records the
// build machine's path), the folder of the same name under $ASPEN_CODELETS_SOURCE_DIR.
std::string codeletHeadersDir(const CodeletLibrary &library) {
  const std::string dir = directoryOf(library.sourceName());
  const char *sources = std::getenv("ASPEN_CODELETS_SOURCE_DIR");
  if (std::filesystem::is_directory(dir) || !sources || !*sources)
    return dir;
  const std::filesystem::path moved =
      std::filesystem::path(sources) / std::filesystem::path(dir).filename();
  return std::filesystem::is_directory(moved) ? moved.string() : dir;
}

} // namespace

std::vector<std::string> nvrtcCodeletOptions(const CodeletLibrary &library) {
  const HostCompiler &host = HostCompiler::get();
  std::vector<std::string> options{"--std=c++20", "--device-as-default-execution-space",
                                   "--fmad=false", "-D__ASPEN_CODELET__", "-D__POPC__",
                                   "-I" + host.includeDir};
  if (!host.compatIncludeDir.empty())
    options.push_back("-I" + host.compatIncludeDir);
  options.push_back("-I" + codeletHeadersDir(library));
  for (const std::string &flag : splitFlags(library.compileFlags()))
    if (flag.starts_with("-I") || flag.starts_with("-D") || flag.starts_with("-U"))
      options.push_back(flag);
  options.push_back("-I" + cudaToolkitIncludeDir());
  return options;
}

NvrtcImages nvrtcCompile(const std::string &codeletFile, const std::string &unit,
                         const std::vector<std::string> &options, unsigned cc) {
  const NvrtcProgram program(unit, codeletFile);
  const nvrtcResult compiled = compileFor(program, cc, options);
  if (compiled == NVRTC_ERROR_COMPILATION)
    throw codelet_error("codelet file '" + codeletFile + "' failed to compile for the GPU (sm_" +
                        std::to_string(cc) + ", NVRTC):\n" + hostStyleLocations(program.log()));
  ASPEN_NVRTC_CHECK(compiled);

  NvrtcImages images;
  images.cubin = cubinOf(program);
  std::size_t size = 0;
  ASPEN_NVRTC_CHECK(nvrtcGetPTXSize(program.get(), &size));
  images.ptx.resize(size);
  ASPEN_NVRTC_CHECK(nvrtcGetPTX(program.get(), images.ptx.data()));
  while (!images.ptx.empty() && images.ptx.back() == '\0')
    images.ptx.pop_back();
  return images;
}

std::string nvrtcCompileInternal(const std::string &name, const std::string &source,
                                 const std::vector<std::string> &options, unsigned cc) {
  const NvrtcProgram program(source, name);
  const nvrtcResult compiled = compileFor(program, cc, options);
  if (compiled == NVRTC_ERROR_COMPILATION)
    throw internal_error(name + " failed to compile for sm_" + std::to_string(cc) +
                         " (NVRTC):\n" + program.log());
  ASPEN_NVRTC_CHECK(compiled);
  return cubinOf(program);
}

std::string nvrtcVersion() {
  int major = 0, minor = 0;
  ASPEN_NVRTC_CHECK(::nvrtcVersion(&major, &minor));
  return std::to_string(major) + "." + std::to_string(minor);
}

namespace {
std::string cudaHome() {
  const char *home = std::getenv("CUDA_HOME");
  return home && *home ? std::string(home) : std::string();
}
} // namespace

std::string cudaToolkitIncludeDir() {
  if (const char *dir = std::getenv("ASPEN_CUDA_INCLUDE_DIR"); dir && *dir)
    return dir;
  const std::string home = cudaHome();
  return home.empty() ? std::string(ASPEN_CUDA_INCLUDE_DIR) : home + "/include";
}

std::string cudaToolkitBinDir() {
  const std::string home = cudaHome();
  return home.empty() ? std::filesystem::path(ASPEN_PTXAS_EXECUTABLE).parent_path().string()
                      : home + "/bin";
}

} // namespace aspen::detail
