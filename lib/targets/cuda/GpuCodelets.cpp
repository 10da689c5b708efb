// GPU images of codelet libraries: the precompiled fatbin of a library codelet family when one
// with the library's content hash exists, else NVRTC's CUBIN, cached on disk under
// ASPEN_CACHE_DIR/gpu by (translation unit, options, NVRTC version, architecture, Aspen's
// headers). Also builds the fatbins aspen-cc writes at build time.
#include "GpuCodelets.hpp"

#include "GpuWrapperGenerator.hpp"
#include "NvrtcCompiler.hpp"
#include "codelets/CodeletCache.hpp"
#include "codelets/ContentHash.hpp"
#include "codelets/HostCompiler.hpp"
#include "codelets/Subprocess.hpp"
#include "support/LibraryCodelets.hpp"
#include "support/Logging.hpp"

#include <aspen/Error.hpp>

#include <algorithm>
#include <filesystem>

namespace aspen::detail {

namespace fs = std::filesystem;

namespace {

std::vector<std::uint8_t> toBytes(const std::string &s) { return {s.begin(), s.end()}; }

// Every header under Aspen's include folder: device-only branches (#if __CUDA_ARCH__) never
// show in the host's preprocessed source, so the content hash alone does not cover them.
const std::string &aspenHeadersDigest() {
  static const std::string digest = [] {
    std::vector<fs::path> files;
    for (const auto &entry :
         fs::recursive_directory_iterator(fs::path(HostCompiler::get().includeDir) / "aspen"))
      if (entry.is_regular_file())
        files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    ContentHash hash;
    const fs::path root = fs::path(HostCompiler::get().includeDir);
    for (const fs::path &file : files)
      hash.add(fs::relative(file, root).string()).add(readWholeFile(file));
    return hash.hex();
  }();
  return digest;
}

// NVRTC's images of `library` for compute capability `cc`, from the cache when present. With
// needCubin false a cached PTX alone will do (its cubin left empty): a bundle keeps no cubin
// of a library family that its fatbin holds (scripts/gpu-bundle.sh), only the PTX.
NvrtcImages compileCached(const CodeletLibrary &library, unsigned cc, bool &cached,
                          bool needCubin = true) {
  const std::string unit = generateGpuWrapper(library);
  const std::vector<std::string> options = nvrtcCodeletOptions(library);
  // The key holds contents, not where they are: the unit (the source, and the content hash of it
  // preprocessed with everything it includes), Aspen's headers, NVRTC's version, and the options
  // with each include folder reduced to its last name. So a cache warmed on one machine serves a
  // bundle or an install moved to another folder.
  ContentHash key;
  key.add(unit).add(nvrtcVersion()).add(std::to_string(cc)).add(aspenHeadersDigest());
  for (const std::string &o : options)
    key.add(o.starts_with("-I") ? "-I<" + fs::path(o.substr(2)).filename().string() + ">" : o);
  const fs::path dir = codeletCacheDir() / "gpu";
  const fs::path stem = dir / (key.hex() + ".sm_" + std::to_string(cc));
  const fs::path cubinPath = stem.string() + ".cubin", ptxPath = stem.string() + ".ptx";
  // Each file appears whole (written atomically); the PTX is written first.
  cached = fs::exists(ptxPath) && (!needCubin || fs::exists(cubinPath));
  if (cached)
    return {fs::exists(cubinPath) ? readWholeFile(cubinPath) : std::string(),
            readWholeFile(ptxPath)};
  logger().debug("codelets '{}': compiling {} vertex types with NVRTC into {}",
                 library.sourceName(), library.vertexTypes().size(), cubinPath.string());
  NvrtcImages images = nvrtcCompile(library.sourceName(), unit, options, cc);
  fs::create_directories(dir);
  writeFileAtomically(ptxPath, images.ptx);
  writeFileAtomically(cubinPath, images.cubin);
  return images;
}

} // namespace

std::string gpuCodeletSource(const CodeletLibrary &library) { return generateGpuWrapper(library); }

std::string gpuFatbinPath(const CodeletLibrary &library) {
  const fs::path source(library.sourceName());
  const std::string name =
      source.parent_path().filename().string() + "_" + source.stem().string() + ".fatbin";
  return (fs::path(libraryCodeletsDir()) / name).string();
}

GpuCodeletImage gpuCodeletImage(const CodeletLibrary &library, unsigned computeCapability) {
  GpuCodeletImage image;
  const std::string fatbin = gpuFatbinPath(library);
  if (fs::is_regular_file(fatbin)) {
    std::string bytes = readWholeFile(fatbin);
    if (bytes.find(kGpuHashMarker + library.contentHash()) != std::string::npos) {
      image.kind = GpuCodeletImage::Kind::Fatbin;
      image.bytes = toBytes(bytes);
      image.origin = "precompiled " + fatbin;
      return image;
    }
    logger().warn("'{}' was not built from the loaded codelets of '{}' (content hash {}); "
                  "compiling them with NVRTC instead",
                  fatbin, library.sourceName(), library.contentHash());
  }
  bool cached = false;
  image.kind = GpuCodeletImage::Kind::Cubin;
  image.bytes = toBytes(compileCached(library, computeCapability, cached).cubin);
  image.origin = cached ? "nvrtc (cached)" : "nvrtc";
  return image;
}

std::string gpuCodeletPtx(const CodeletLibrary &library, unsigned computeCapability) {
  bool cached = false;
  return compileCached(library, computeCapability, cached, false).ptx;
}

std::vector<std::uint8_t> buildGpuFatbin(const CodeletLibrary &library,
                                         const std::vector<unsigned> &computeCapabilities) {
  if (computeCapabilities.empty())
    throw invalid_option("a fatbin of '" + library.sourceName() +
                         "' needs at least one CUDA architecture");
  const fs::path dir = codeletCacheDir() / "tmp";
  fs::create_directories(dir);
  std::vector<fs::path> inputs;
  std::vector<std::string> argv{
      (fs::path(cudaToolkitBinDir()) / "fatbinary").string(), "-64",
      "--compress=false"};
  auto addImage = [&](const std::string &bytes, const char *kind, const char *extension,
                      unsigned cc) {
    inputs.push_back(uniqueTempPath(dir, library.contentHash(), extension));
    writeFileAtomically(inputs.back(), bytes);
    argv.push_back(std::string("--image3=kind=") + kind + ",sm=" + std::to_string(cc) +
                   ",file=" + inputs.back().string());
  };
  for (unsigned cc : computeCapabilities) {
    bool cached = false;
    const NvrtcImages images = compileCached(library, cc, cached);
    addImage(images.cubin, "elf", ".cubin", cc);
    if (&cc == &computeCapabilities.back())
      addImage(images.ptx, "ptx", ".ptx", cc);
  }
  const fs::path output = uniqueTempPath(dir, library.contentHash(), ".fatbin");
  argv.push_back("--create=" + output.string());
  const ProcessResult result = runProcess(argv);
  std::error_code ec;
  for (const fs::path &input : inputs)
    fs::remove(input, ec);
  if (result.exitCode != 0)
    throw codelet_error("fatbinary failed on the GPU images of '" + library.sourceName() +
                        "':\n" + result.output);
  const std::string bytes = readWholeFile(output);
  fs::remove(output, ec);
  return toBytes(bytes);
}

} // namespace aspen::detail
