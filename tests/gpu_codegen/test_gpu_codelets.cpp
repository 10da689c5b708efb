// GPU images of codelet libraries, without a GPU: every library codelet family (the .gp files of
// the build) has a precompiled fatbin carrying its content hash, and its translation unit gives
// PTX that ptxas accepts for sm_90; the test codelet files and a generated element-wise
// expression compile with NVRTC; a stale or missing fatbin falls back to NVRTC; NVRTC errors
// name the codelet file and line; the second compile comes from the disk cache.
// Needs the CUDA toolkit (NVRTC, ptxas), not a GPU.
#include "TestPaths.hpp"
#include "codelets/CodeletLibrary.hpp"
#include "support/LibraryCodelets.hpp"
#include "ops/ExprCodegen.hpp"
#include "ops/ExprLowering.hpp"
#include "targets/cuda/GpuCodelets.hpp"
#include "targets/cuda/GpuWrapperGenerator.hpp"
#include "targets/cuda/NvrtcCompiler.hpp"

#include <aspen/Error.hpp>
#include <aspen/detail/GpuAbi.hpp>
#include <aspen/ops/Expr.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace aspen;
using namespace aspen::detail;
namespace fs = std::filesystem;

namespace {

std::vector<fs::path> filesWithExtension(const fs::path &dir, const std::string &extension) {
  std::vector<fs::path> files;
  for (const auto &entry : fs::directory_iterator(dir))
    if (entry.path().extension() == extension)
      files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

// ptxas's exit status on `ptx` for sm_90 (its diagnostics go to the test's output).
int assemble(const std::string &ptx, const std::string &name) {
  const fs::path path = fs::path(aspen::test::binaryDir()) / ("gpu_codegen_" + name + ".ptx");
  std::ofstream(path) << ptx;
  const std::string command =
      cudaToolkitBinDir() + "/ptxas -arch=sm_90 -o /dev/null " + path.string();
  return std::system(command.c_str());
}

// Sets an environment variable for one scope.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const std::string &value) : name_(name) {
    if (const char *old = std::getenv(name))
      old_ = old, hadOld_ = true;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (hadOld_)
      setenv(name_, old_.c_str(), 1);
    else
      unsetenv(name_);
  }

private:
  const char *name_;
  std::string old_;
  bool hadOld_ = false;
};

fs::path freshDir(const std::string &name) {
  const fs::path dir = fs::path(aspen::test::binaryDir()) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string stem(const fs::path &p) { return p.stem().string(); }

} // namespace

TEST_CASE("every library codelet family has a precompiled GPU image with its content hash",
          "[gpu_codegen]") {
  const std::vector<fs::path> gps = filesWithExtension(libraryCodeletsDir(), ".gp");
  REQUIRE(gps.size() >= 12); // ops: 8 families, nn: 4, linalg: 1
  for (const fs::path &gp : gps) {
    INFO(gp.string());
    const auto library = CodeletLibrary::loadPrecompiled(gp.string());
    const GpuCodeletImage image = gpuCodeletImage(*library, 90);
    CHECK(image.kind == GpuCodeletImage::Kind::Fatbin);
    CHECK(image.origin == "precompiled " + (gp.parent_path() / (stem(gp) + ".fatbin")).string());
    CHECK(!image.bytes.empty());
  }
}

TEST_CASE("library codelet families give PTX that ptxas accepts for sm_90", "[gpu_codegen]") {
  for (const fs::path &gp : filesWithExtension(libraryCodeletsDir(), ".gp")) {
    INFO(gp.string());
    const auto library = CodeletLibrary::loadPrecompiled(gp.string());
    const std::string ptx = gpuCodeletPtx(*library, 90);
    CHECK(ptx.find(".visible .entry " ASPEN_GPU_KERNEL_NAME "(") != std::string::npos);
    // At most 64 registers a thread (1024 threads), and no fewer for the sake of a second block.
    CHECK(ptx.find(".maxntid 1024, 1, 1") != std::string::npos);
    CHECK(ptx.find(".minnctapersm 1") != std::string::npos);
    CHECK(assemble(ptx, stem(gp)) == 0);
  }
}

TEST_CASE("a missing or stale fatbin falls back to NVRTC", "[gpu_codegen]") {
  const fs::path built(libraryCodeletsDir());
  const fs::path dir = freshDir("gpu_codegen_fatbins");
  const ScopedEnv codelets("ASPEN_CODELETS_DIR", dir.string());
  const auto fill = CodeletLibrary::loadPrecompiled((built / "ops_fill.gp").string());

  const GpuCodeletImage missing = gpuCodeletImage(*fill, 90);
  CHECK(missing.kind == GpuCodeletImage::Kind::Cubin);
  CHECK(missing.origin.starts_with("nvrtc"));
  CHECK(!missing.bytes.empty());

  // Another family's fatbin under this family's name does not carry this content hash.
  fs::copy_file(built / "ops_scaledadd.fatbin", dir / "ops_fill.fatbin");
  const GpuCodeletImage stale = gpuCodeletImage(*fill, 90);
  CHECK(stale.kind == GpuCodeletImage::Kind::Cubin);
  CHECK(stale.bytes == missing.bytes);

  fs::copy_file(built / "ops_fill.fatbin", dir / "ops_fill.fatbin",
                fs::copy_options::overwrite_existing);
  CHECK(gpuCodeletImage(*fill, 90).kind == GpuCodeletImage::Kind::Fatbin);
}

TEST_CASE("the test codelet files compile with NVRTC and ptxas", "[gpu_codegen]") {
  unsigned compiled = 0;
  for (const fs::path &file : filesWithExtension(aspen::test::codeletsDir(), ".cpp")) {
    if (stem(file) == "cc_syntax_error")
      continue; // does not compile anywhere
    INFO(file.string());
    const auto library = CodeletLibrary::compileFile(file.string());
    const GpuCodeletImage image = gpuCodeletImage(*library, 90);
    CHECK(image.kind == GpuCodeletImage::Kind::Cubin);
    CHECK(!image.bytes.empty());
    CHECK(assemble(gpuCodeletPtx(*library, 90), stem(file)) == 0);
    ++compiled;
  }
  CHECK(compiled >= 5);
}

TEST_CASE("the dispatch kernel switches on the index in vertexTypes()", "[gpu_codegen]") {
  const auto library =
      CodeletLibrary::compileFile(aspen::test::codelet("cc_fields.cpp"));
  const std::string source = gpuCodeletSource(*library);
  const auto &types = library->vertexTypes();
  REQUIRE(types.size() >= 4);
  std::size_t previous = 0;
  for (std::size_t k = 0; k < types.size(); ++k) {
    INFO(types[k].name);
    // The entry of vertex k names its class and binds its fields in the metadata's order.
    const std::size_t entry = source.find("int aspen_gpu_vertex_" + std::to_string(k) + "(");
    REQUIRE(entry != std::string::npos);
    CHECK(entry > previous);
    CHECK(source.find("GpuVertexStorage<::" + types[k].name + ">", entry) ==
          source.find("GpuVertexStorage<", entry));
    for (std::size_t f = 0; f < types[k].fields.size(); ++f)
      CHECK(source.find("gpuBindField(vertex." + types[k].fields[f].name + ", fields[" +
                        std::to_string(f) + "])",
                        entry) < source.find("return ::aspen", entry));
    const std::size_t dispatch = source.find("    case " + std::to_string(k) + ":\n");
    REQUIRE(dispatch != std::string::npos);
    const std::string call = std::string("aspen_gpu_vertex_") + std::to_string(k) +
                             (types[k].isMultiVertex ? "(fields + record.firstField, threadIdx.x)"
                                                     : "(fields + record.firstField, 0)");
    CHECK(source.find(call, dispatch) < source.find("break;", dispatch));
    // A MultiVertex first joins the warp's threads (some may have run a single-thread vertex),
    // so warp-wide instructions inside it see every lane; a Vertex runs on its thread alone.
    const std::size_t join = source.find("__syncwarp(::aspen::detail::gpuWarpLanes());", dispatch);
    CHECK((join < source.find(call, dispatch)) == types[k].isMultiVertex);
    previous = entry;
  }
  CHECK(source.find(kGpuHashMarker + library->contentHash()) != std::string::npos);
  // The kernel loads for any block size a GPU allows, whatever registers its vertices need.
  CHECK(source.find("__launch_bounds__(ASPEN_GPU_MAX_THREADS_PER_BLOCK, 1) " ASPEN_GPU_KERNEL_NAME
                    "(") != std::string::npos);
}

TEST_CASE("a block codelet becomes a kernel of its own with a barrier and dynamic shared memory",
          "[gpu_codegen]") {
  const auto library = CodeletLibrary::compileFile(aspen::test::codelet("block_codelets.cpp"));
  const std::string source = gpuCodeletSource(*library);
  const std::string ptx = gpuCodeletPtx(*library, 90);
  const auto &types = library->vertexTypes();
  unsigned blocks = 0;
  for (std::size_t k = 0; k < types.size(); ++k) {
    INFO(types[k].name);
    const std::string kernel = ASPEN_GPU_BLOCK_KERNEL_PREFIX + std::to_string(k);
    // Block codelets have a kernel and a trapping dispatch case; other classes neither.
    CHECK((source.find(kernel + "(") != std::string::npos) == types[k].isBlockVertex);
    CHECK((ptx.find(".entry " + kernel + "(") != std::string::npos) == types[k].isBlockVertex);
    const std::size_t dispatch = source.find("    case " + std::to_string(k) + ":\n");
    REQUIRE(dispatch != std::string::npos);
    CHECK((source.find("__trap()", dispatch) < source.find("break;", dispatch)) ==
          types[k].isBlockVertex);
    blocks += types[k].isBlockVertex;
  }
  // BlockSum, BlockScan, BlockShape, BlockFail, BlockRing, GridSum, SentinelExchange<float>,
  // SentinelExchange<half>, NeverPublished, BoundedBlock, WarpMma; Plain is a Vertex.
  CHECK(blocks == 11);
  // Block::mmaF16 is the tensor-core instruction on the GPU.
  CHECK(ptx.find("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") != std::string::npos);
  // A declared maxThreadsPerBlock is the kernel's launch bound; the others take the largest.
  CHECK(source.find("__launch_bounds__(64, 1)") != std::string::npos);
  CHECK(ptx.find(".maxntid 64, 1, 1") != std::string::npos);
  // The device-scope primitives: acquire loads, release stores, the grid barrier's
  // acquire-release add, and the back-off of a wait.
  for (const char *instruction : {"ld.acquire.gpu", "st.release.gpu", "atom.acq_rel.gpu",
                                  "nanosleep", "%globaltimer"})
    CHECK(ptx.find(instruction) != std::string::npos);
  CHECK(source.find("extern __shared__ __align__(16) unsigned char aspenShared[];") !=
        std::string::npos);
  CHECK(ptx.find("bar.sync") != std::string::npos); // block.sync() is __syncthreads()
  CHECK(ptx.find(".extern .shared") != std::string::npos);
  CHECK(assemble(ptx, "block_codelets_kernels") == 0);
}

TEST_CASE("an NVRTC error names the codelet file and line", "[gpu_codegen]") {
  // Valid for the host; line 9 only exists for NVRTC.
  const std::string source = "// line 1\n"
                             "#include <aspen/Vertex.hpp>\n"
                             "class DeviceOnlyError : public aspen::Vertex {\n"
                             "public:\n"
                             "  aspen::Output<float> out;\n"
                             "  void compute() {\n"
                             "#if defined(__CUDACC_RTC__)\n"
                             "    // line 8\n"
                             "    *out = undeclaredOnTheDevice + 1.0f;\n"
                             "#else\n"
                             "    *out = 1.0f;\n"
                             "#endif\n"
                             "  }\n"
                             "};\n";
  const auto library = CodeletLibrary::compileSource("gpu_error_codelets.cpp", source);
  try {
    gpuCodeletImage(*library, 90);
    FAIL("no codelet_error");
  } catch (const codelet_error &e) {
    const std::string message = e.what();
    INFO(message);
    CHECK(message.find("codelet file 'gpu_error_codelets.cpp'") != std::string::npos);
    CHECK(message.find("gpu_error_codelets.cpp:9:") != std::string::npos);
    CHECK(message.find("undeclaredOnTheDevice") != std::string::npos);
  }
}

TEST_CASE("the second NVRTC compile of a library comes from the disk cache", "[gpu_codegen]") {
  const ScopedEnv cache("ASPEN_CACHE_DIR", freshDir("gpu_codegen_cache").string());
  const auto library =
      CodeletLibrary::compileFile(aspen::test::codelet("prog_basic.cpp"));
  const GpuCodeletImage first = gpuCodeletImage(*library, 90);
  const GpuCodeletImage second = gpuCodeletImage(*library, 90);
  CHECK(first.origin == "nvrtc");
  CHECK(second.origin == "nvrtc (cached)");
  CHECK(second.bytes == first.bytes);
  // Another architecture is another entry.
  CHECK(gpuCodeletImage(*library, 100).origin == "nvrtc");
}

TEST_CASE("a cached PTX alone serves gpuCodeletPtx; an image needs its cubin", "[gpu_codegen]") {
  // scripts/gpu-bundle.sh leaves out the cache's cubins that the fatbins hold, keeping the PTX.
  const fs::path dir = freshDir("gpu_codegen_ptx_only");
  const ScopedEnv cache("ASPEN_CACHE_DIR", dir.string());
  const auto library = CodeletLibrary::compileFile(aspen::test::codelet("prog_basic.cpp"));
  const GpuCodeletImage first = gpuCodeletImage(*library, 90);
  const std::string ptx = gpuCodeletPtx(*library, 90);
  const std::vector<fs::path> cubins = filesWithExtension(dir / "gpu", ".cubin");
  REQUIRE(cubins.size() == 1);
  fs::remove(cubins[0]);
  CHECK(gpuCodeletPtx(*library, 90) == ptx);
  CHECK_FALSE(fs::exists(cubins[0])); // served from the PTX, not compiled again
  const GpuCodeletImage again = gpuCodeletImage(*library, 90);
  CHECK(again.origin == "nvrtc"); // the cubin is needed: compiled, and cached again
  CHECK(again.bytes == first.bytes);
  CHECK(fs::exists(cubins[0]));
}

TEST_CASE("a generated element-wise expression compiles through the codelet library path",
          "[gpu_codegen]") {
  namespace ex = aspen::ops::expr;
  namespace dt = aspen::ops::detail;
  const std::vector<Type> types = {HALF, FLOAT};
  const dt::LoweredExpr lowered = dt::lowerExpr(
      ex::Sigmoid(ex::_1 * 2 + ex::Exp(ex::Cast(ex::_2, HALF))), types, {"a", "b"}, "gpu test");
  const dt::GeneratedExpr g = dt::generateExpr(lowered, {{HALF, false, true}, {FLOAT, true, true}});
  const auto library = CodeletLibrary::compileSource(g.vertexName, g.codeletSource, "-O3");
  REQUIRE(library->vertexTypes().size() == 1);
  const GpuCodeletImage image = gpuCodeletImage(*library, 90);
  CHECK(image.kind == GpuCodeletImage::Kind::Cubin);
  CHECK(!image.bytes.empty());
  CHECK(assemble(gpuCodeletPtx(*library, 90), "expression") == 0);
}

TEST_CASE("the persistent recurrent kernels build for sm_90 at their planned block size with no "
          "spills",
          "[gpu_codegen]") {
  const auto library =
      CodeletLibrary::loadPrecompiled((fs::path(libraryCodeletsDir()) / "nn_persistent.gp").string());
  const std::string source = gpuCodeletSource(*library);
  const std::string ptx = gpuCodeletPtx(*library, 90);
  // LstmPersistentFwd, LstmPersistentBwd, GruPersistentFwd and GruPersistentBwd, float and
  // half, declare maxThreadsPerBlock = 256:
  // their kernels carry that bound, which lets a thread use up to 255 registers.
  CHECK(std::count_if(library->vertexTypes().begin(), library->vertexTypes().end(),
                      [](const VertexTypeInfo &t) { return t.coResident; }) == 8);
  CHECK(source.find("__launch_bounds__(256, 1)") != std::string::npos);
  CHECK(ptx.find(".maxntid 256, 1, 1") != std::string::npos);
  // The tensor variant's product (Block::mmaF16): in every kernel, whatever T (a FLOAT
  // kernel's is never taken: its builder refuses the variant).
  std::size_t mmas = 0;
  for (std::size_t at = ptx.find("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32");
       at != std::string::npos; at = ptx.find("mma.sync.aligned.m16n8k16", at + 1))
    ++mmas;
  CHECK(mmas >= 6); // LSTM forward and backward, the GRU's two products each, in half at least
  const fs::path path = fs::path(aspen::test::binaryDir()) / "gpu_codegen_persistent.ptx";
  const fs::path log = fs::path(aspen::test::binaryDir()) / "gpu_codegen_persistent.log";
  std::ofstream(path) << ptx;
  const std::string command = cudaToolkitBinDir() + "/ptxas -arch=sm_90 -v -o /dev/null " +
                              path.string() + " > " + log.string() + " 2>&1";
  REQUIRE(std::system(command.c_str()) == 0);
  std::ifstream in(log);
  const std::string report((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  INFO(report); // registers a thread, stack frame and spills of every kernel
  unsigned kernels = 0;
  for (std::size_t at = report.find("Compiling entry function 'aspen_block_"); at != std::string::npos;
       at = report.find("Compiling entry function 'aspen_block_", at + 1)) {
    ++kernels;
    const std::size_t next = report.find("Compiling entry function", at + 1);
    const std::string entry = report.substr(at, next == std::string::npos ? std::string::npos : next - at);
    CHECK(entry.find("0 bytes spill stores, 0 bytes spill loads") != std::string::npos);
    CHECK(entry.find("Used ") != std::string::npos);
  }
  CHECK(kernels == 8);
}
