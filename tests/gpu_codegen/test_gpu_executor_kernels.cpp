// The CUDA executor's own kernels (copy segments, conditional-node control) compile with NVRTC
// for sm_90 into a loadable cubin: an executable ELF that defines every kernel the executor looks
// up and leaves no function undefined except cudaGraphSetConditional, a builtin the driver
// resolves at load (as it does printf's vprintf). That this is a builtin and not a missing
// device-runtime definition shows in the compiler: ptxas refuses a cubin with any other
// unresolved function. Needs the toolkit, not a GPU. The symbols are read from the ELF's symbol
// table here, independently of NVRTC.
#include "executors/cuda/CudaExecutorKernels.hpp"
#include "executors/cuda/NvrtcCompiler.hpp"

#include <aspen/Error.hpp>

#include <catch2/catch.hpp>

#include <cstring>
#include <set>
#include <string>

using namespace aspen::detail;

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

const char *const kKernels[] = {"aspen_copy_segments", "aspen_set_condition", "aspen_set_switch",
                                "aspen_repeat_start", "aspen_repeat_next"};

} // namespace

TEST_CASE("the CUDA executor's kernels compile for sm_90 into a loadable cubin",
          "[gpu_codegen][cuda_executor]") {
  const std::vector<std::uint8_t> image = compileCudaExecutorKernels(90);
  const ElfSymbols symbols = elfSymbols(std::string(image.begin(), image.end()));
  CHECK(symbols.type == 2);
  for (const char *kernel : kKernels)
    CHECK(symbols.defined.count(kernel) == 1);
  CHECK(symbols.strongUndefined == std::set<std::string>{"cudaGraphSetConditional"});
}

TEST_CASE("NVRTC refuses a cubin with an unresolved device function",
          "[gpu_codegen][cuda_executor]") {
  const std::string source = std::string(cudaExecutorKernelSource()) +
                             "extern \"C\" __device__ void aspenUndefined(unsigned);\n"
                             "extern \"C\" __global__ void aspen_calls_undefined() {\n"
                             "  aspenUndefined(1u);\n}\n";
  CHECK_THROWS_WITH(
      nvrtcCompileInternal(kCudaExecutorKernelFile, source, cudaExecutorKernelOptions(), 90),
      Catch::Matchers::Contains("Unresolved extern function 'aspenUndefined'"));
}
