// The CUDA executor's own kernels (copy segments, conditional-node control) compile with NVRTC
// for sm_90 into a cubin (NVRTC runs ptxas for it) that exports every kernel the executor
// looks up. Needs the toolkit, not a GPU.
#include "executors/cuda/CudaExecutorKernels.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

using namespace aspen::detail;

TEST_CASE("the CUDA executor's kernels compile for sm_90", "[gpu_codegen][cuda_executor]") {
  const std::vector<std::uint8_t> cubin = compileCudaExecutorKernels(90);
  REQUIRE(cubin.size() > 64);
  REQUIRE(std::equal(cubin.begin(), cubin.begin() + 4, std::string("\x7f" "ELF").begin()));
  const std::string bytes(cubin.begin(), cubin.end());
  for (const char *kernel : {"aspen_copy_segments", "aspen_set_condition", "aspen_set_switch",
                             "aspen_repeat_start", "aspen_repeat_next"})
    CHECK(bytes.find(kernel) != std::string::npos);
}
