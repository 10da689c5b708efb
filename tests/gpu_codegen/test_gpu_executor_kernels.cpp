// The CUDA executor's own kernels (copy segments, conditional-node control) compile with NVRTC
// for sm_90 into a loadable cubin: an executable ELF that defines every kernel the executor looks
// up and leaves no function undefined except cudaGraphSetConditional, a builtin the driver
// resolves at load (as it does printf's vprintf). That this is a builtin and not a missing
// device-runtime definition shows in the compiler: ptxas refuses a cubin with any other
// unresolved function. Needs the toolkit, not a GPU. The symbols are read from the ELF's symbol
// table here, independently of NVRTC.
#include "codelets/CodeletCache.hpp"
#include "executors/cuda/CudaExecutorKernels.hpp"
#include "targets/cuda/NvrtcCompiler.hpp"

#include <aspen/Error.hpp>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

#include <unistd.h>
#include <string>

using namespace aspen::detail;
namespace fs = std::filesystem;

namespace {

template <typename T> T readAt(const std::string &elf, std::size_t offset) {
  REQUIRE(offset + sizeof(T) <= elf.size());
  T value;
  std::memcpy(&value, elf.data() + offset, sizeof(T));
  return value;
}

struct ElfSymbols {
  unsigned type = 0;                        // e_type: 1 relocatable, 2 executable
  std::set<std::string> defined, undefined; // global and weak symbols with a name
  std::set<std::string> strongUndefined;    // undefined and not weak: the loader resolves them
};

// Reads an ELF64 little-endian image's header type and its .symtab.
ElfSymbols elfSymbols(const std::string &elf) {
  REQUIRE(elf.size() > 64);
  REQUIRE(elf.compare(0, 4, "\x7f" "ELF") == 0);
  REQUIRE(elf[4] == 2); // ELFCLASS64
  ElfSymbols result;
  result.type = readAt<std::uint16_t>(elf, 16);
  const auto sectionsAt = readAt<std::uint64_t>(elf, 0x28);
  const auto sectionBytes = readAt<std::uint16_t>(elf, 0x3a);
  const auto numSections = readAt<std::uint16_t>(elf, 0x3c);
  auto section = [&](unsigned i) { return sectionsAt + std::uint64_t(i) * sectionBytes; };
  for (unsigned s = 0; s < numSections; ++s) {
    if (readAt<std::uint32_t>(elf, section(s) + 4) != 2) // SHT_SYMTAB
      continue;
    const auto symbolsAt = readAt<std::uint64_t>(elf, section(s) + 24);
    const auto symbolsSize = readAt<std::uint64_t>(elf, section(s) + 32);
    const auto names = readAt<std::uint32_t>(elf, section(s) + 40);
    const auto namesAt = readAt<std::uint64_t>(elf, section(names) + 24);
    for (std::uint64_t at = symbolsAt; at + 24 <= symbolsAt + symbolsSize; at += 24) {
      const std::string name(elf.c_str() + namesAt + readAt<std::uint32_t>(elf, at));
      const unsigned binding = readAt<std::uint8_t>(elf, at + 4) >> 4; // 1 global, 2 weak
      const bool isUndefined = readAt<std::uint16_t>(elf, at + 6) == 0;
      if (name.empty() || (binding != 1 && binding != 2))
        continue;
      (isUndefined ? result.undefined : result.defined).insert(name);
      if (isUndefined && binding == 1)
        result.strongUndefined.insert(name);
    }
  }
  return result;
}

const char *const kControlKernels[] = {"aspen_set_condition", "aspen_set_switch",
                                       "aspen_repeat_start", "aspen_repeat_next"};

} // namespace

TEST_CASE("the CUDA executor's kernels compile for sm_90 into loadable cubins",
          "[gpu_codegen][cuda_executor]") {
  SECTION("the copy module: the copy kernel and nothing the loader must resolve") {
    const std::vector<std::uint8_t> image = compileCudaExecutorKernels(ExecutorModule::Copy, 90);
    const ElfSymbols symbols = elfSymbols(std::string(image.begin(), image.end()));
    CHECK(symbols.type == 2);
    CHECK(symbols.defined.count("aspen_copy_segments") == 1);
    for (const char *kernel : kControlKernels)
      CHECK(symbols.defined.count(kernel) == 0);
    CHECK(symbols.strongUndefined.empty());
  }
  SECTION("the control module: the control kernels, needing only cudaGraphSetConditional") {
    const std::vector<std::uint8_t> image =
        compileCudaExecutorKernels(ExecutorModule::Control, 90);
    const ElfSymbols symbols = elfSymbols(std::string(image.begin(), image.end()));
    CHECK(symbols.type == 2);
    for (const char *kernel : kControlKernels)
      CHECK(symbols.defined.count(kernel) == 1);
    CHECK(symbols.defined.count("aspen_copy_segments") == 0);
    CHECK(symbols.strongUndefined == std::set<std::string>{"cudaGraphSetConditional"});
  }
  SECTION("the convolution module: im2col, col2im and the weight update, self-contained") {
    const std::vector<std::uint8_t> image = compileCudaExecutorKernels(ExecutorModule::Conv, 90);
    const ElfSymbols symbols = elfSymbols(std::string(image.begin(), image.end()));
    CHECK(symbols.type == 2);
    for (const char *kernel : {"aspen_conv_im2col", "aspen_conv_col2im", "aspen_conv_update"})
      CHECK(symbols.defined.count(kernel) == 1);
    CHECK(symbols.defined.count("aspen_copy_segments") == 0);
    CHECK(symbols.strongUndefined.empty());
  }
}

TEST_CASE("the CUDA executor's kernels are cached on disk by content, not by folder",
          "[gpu_codegen][cuda_executor]") {
  for (const ExecutorModule module :
       {ExecutorModule::Copy, ExecutorModule::Control, ExecutorModule::Conv}) {
    const std::vector<std::uint8_t> &image = cudaExecutorKernelImage(module, 90);
    CHECK(image == compileCudaExecutorKernels(module, 90));
    // The cached file holds the same bytes, under a name that says the module and architecture.
    std::vector<fs::path> cached;
    for (const auto &entry : fs::directory_iterator(codeletCacheDir() / "gpu")) {
      const std::string name = entry.path().filename().string();
      if (name.starts_with(std::string(cudaExecutorKernelFile(module)) + ".") &&
          name.ends_with(".sm_90.cubin"))
        cached.push_back(entry.path());
    }
    REQUIRE(!cached.empty());
    bool found = false;
    for (const fs::path &file : cached)
      found |= readWholeFile(file) == std::string(image.begin(), image.end());
    CHECK(found);
  }
}

TEST_CASE("the executor kernels' cache serves a toolkit in another folder",
          "[gpu_codegen][cuda_executor]") {
  // The same toolkit seen through another path (as on a GPU machine running a bundle): other
  // options, the same cache file, the same cubin.
  const fs::path alias = fs::temp_directory_path() / ("aspen-cuda-alias-" + std::to_string(::getpid()));
  fs::create_directory_symlink(cudaToolkitIncludeDir(), alias);
  const std::string before = cudaExecutorKernelCacheName(ExecutorModule::Control, 90);
  const std::vector<std::string> optionsBefore = cudaExecutorKernelOptions(ExecutorModule::Control);
  ::setenv("ASPEN_CUDA_INCLUDE_DIR", alias.c_str(), 1);
  const std::string after = cudaExecutorKernelCacheName(ExecutorModule::Control, 90);
  const std::vector<std::string> optionsAfter = cudaExecutorKernelOptions(ExecutorModule::Control);
  const std::vector<std::uint8_t> image = compileCudaExecutorKernels(ExecutorModule::Control, 90);
  ::unsetenv("ASPEN_CUDA_INCLUDE_DIR");
  fs::remove(alias);
  CHECK(optionsBefore != optionsAfter);
  CHECK(before == after);
  CHECK(image == compileCudaExecutorKernels(ExecutorModule::Control, 90));
  // What the key does cover: the architecture.
  CHECK(cudaExecutorKernelCacheName(ExecutorModule::Control, 80) != before);
}

TEST_CASE("NVRTC refuses a cubin with an unresolved device function",
          "[gpu_codegen][cuda_executor]") {
  const std::string source =
      std::string(cudaExecutorKernelSource(ExecutorModule::Control)) +
      "extern \"C\" __device__ void aspenUndefined(unsigned);\n"
      "extern \"C\" __global__ void aspen_calls_undefined() {\n"
      "  aspenUndefined(1u);\n}\n";
  CHECK_THROWS_WITH(nvrtcCompileInternal(cudaExecutorKernelFile(ExecutorModule::Control), source,
                                         cudaExecutorKernelOptions(ExecutorModule::Control), 90),
                    Catch::Matchers::Contains("Unresolved extern function 'aspenUndefined'"));
}
