// aspen-cc: the offline codelet compiler (popc's role). Compiles a codelet source file into the
// shared object that Graph::addCodelets("file.gp") and CodeletLibrary::loadPrecompiled load.
//
//   aspen-cc file.cpp -o file.gp [-I dir] [-D NAME[=VALUE]] [--flags "more compiler flags"]
//            [--cuda-source file.cu] [--cuda-fatbin file.fatbin --cuda-arch 90;100]
//   aspen-cc file.gp [--cuda-source file.cu] [--cuda-fatbin file.fatbin --cuda-arch 90;100]
// With the CUDA toolkit it also writes the GPU translation unit of the codelets and their
// precompiled GPU image (what the CUDA executor loads for Aspen's library codelets), from the
// source or from an already precompiled file (then with that file's flags and content hash).
#include "codelets/CodeletCache.hpp"
#include "codelets/CodeletLibrary.hpp"
#if ASPEN_HAVE_CUDA
#include "targets/cuda/GpuCodelets.hpp"
#endif

#include <aspen/Error.hpp>

#include <cstdlib>
#include <algorithm>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr const char *kUsage =
    "usage: aspen-cc <codelets.cpp> -o <output.gp> [options]\n"
    "       aspen-cc <codelets.gp> --cuda-source <f> | --cuda-fatbin <f> [--cuda-arch <list>]\n"
    "\n"
    "Compiles the vertex classes of a codelet file for the host, ahead of time. The output loads\n"
    "with Graph::addCodelets(\"output.gp\").\n"
    "\n"
    "options:\n"
    "  -o <file>          the precompiled codelet file to write (required)\n"
    "  -I <dir>, -I<dir>  add an include directory\n"
    "  -D <def>, -D<def>  define a preprocessor macro (NAME or NAME=VALUE)\n"
    "  --flags \"<flags>\"  more flags for the host compiler\n"
    "  --cuda-source <f>  also write the CUDA translation unit of the codelets (CUDA builds)\n"
    "  --cuda-fatbin <f>  also write their GPU image: SASS for each --cuda-arch, PTX of the\n"
    "                     last (CUDA builds)\n"
    "  --cuda-arch <list> compute capabilities for --cuda-fatbin, e.g. \"90;100\" (default 90)\n"
    "  -h, --help         print this help\n"
    "\n"
    "environment: ASPEN_CXX (host compiler), ASPEN_INCLUDE_DIR (Aspen's headers),\n"
    "ASPEN_CACHE_DIR (compiled codelet cache)\n";

struct Options {
  std::string input, output, flags;
  std::string cudaSource, cudaFatbin;
  std::vector<unsigned> cudaArchitectures{90};
};

// "90;100" (CMake's list syntax) or "90,100" -> {90, 100}.
std::vector<unsigned> parseArchitectures(const std::string &list) {
  std::vector<unsigned> archs;
  std::size_t begin = 0;
  while (begin <= list.size()) {
    const std::size_t end = std::min(list.find_first_of(";,", begin), list.size());
    const std::string item = list.substr(begin, end - begin);
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos)
      throw aspen::invalid_option("aspen-cc: --cuda-arch '" + list +
                                  "' is not a list of compute capabilities such as 90;100");
    archs.push_back(static_cast<unsigned>(std::stoul(item)));
    begin = end + 1;
  }
  return archs;
}

bool isPrecompiled(const std::string &input) {
  return input.ends_with(".gp") || input.ends_with(".so");
}

// A flag argument, quoted so that CodeletLibrary's flag splitting keeps it whole.
std::string quoted(const std::string &flag) { return "\"" + flag + "\""; }

Options parseArguments(int argc, char **argv) {
  Options options;
  auto value = [&](int &i, std::string_view name) -> std::string {
    if (i + 1 >= argc)
      throw aspen::invalid_option("aspen-cc: " + std::string(name) + " needs a value");
    return argv[++i];
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      std::exit(0);
    } else if (arg == "-o") {
      options.output = value(i, "-o");
    } else if (arg == "-I" || arg == "-D") {
      options.flags += " " + quoted(arg + value(i, arg));
    } else if (arg.starts_with("-I") || arg.starts_with("-D")) {
      options.flags += " " + quoted(arg);
    } else if (arg == "--flags") {
      options.flags += " " + value(i, "--flags");
    } else if (arg == "--cuda-source") {
      options.cudaSource = value(i, arg);
    } else if (arg == "--cuda-fatbin") {
      options.cudaFatbin = value(i, arg);
    } else if (arg == "--cuda-arch") {
      options.cudaArchitectures = parseArchitectures(value(i, arg));
    } else if (arg.starts_with("-")) {
      throw aspen::invalid_option("aspen-cc: unknown option '" + arg + "' (see --help)");
    } else if (options.input.empty()) {
      options.input = arg;
    } else {
      throw aspen::invalid_option("aspen-cc: more than one input file ('" + options.input +
                                  "' and '" + arg + "')");
    }
  }
  if (options.input.empty() ||
      (isPrecompiled(options.input) ? options.cudaSource.empty() && options.cudaFatbin.empty()
                                    : options.output.empty()))
    throw aspen::invalid_option("aspen-cc: an input file and -o <output> are required, or a "
                                "precompiled input and --cuda-source or --cuda-fatbin (see --help)");
#if !ASPEN_HAVE_CUDA
  if (!options.cudaSource.empty() || !options.cudaFatbin.empty())
    throw aspen::invalid_option(
        "aspen-cc: --cuda-source and --cuda-fatbin need an Aspen built with the CUDA toolkit");
#endif
  return options;
}

void writeBytes(const std::string &path, const void *data, std::size_t size) {
  aspen::detail::writeFileAtomically(path,
                                     std::string_view(static_cast<const char *>(data), size));
}

} // namespace

int main(int argc, char **argv) {
  try {
    const Options options = parseArguments(argc, argv);
    const auto library =
        isPrecompiled(options.input)
            ? aspen::detail::CodeletLibrary::loadPrecompiled(options.input)
            : aspen::detail::CodeletLibrary::compileFile(options.input, options.flags);
    if (!options.output.empty()) {
      const std::vector<std::uint8_t> &bytes = library->binary();
      writeBytes(options.output, bytes.data(), bytes.size());
    }
#if ASPEN_HAVE_CUDA
    if (!options.cudaSource.empty()) {
      const std::string source = aspen::detail::gpuCodeletSource(*library);
      writeBytes(options.cudaSource, source.data(), source.size());
    }
    if (!options.cudaFatbin.empty()) {
      const std::vector<std::uint8_t> fatbin =
          aspen::detail::buildGpuFatbin(*library, options.cudaArchitectures);
      writeBytes(options.cudaFatbin, fatbin.data(), fatbin.size());
    }
#endif
    return 0;
  } catch (const std::exception &e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
