// aspen-cc: the offline codelet compiler (popc's role). Compiles a codelet source file into the
// shared object that Graph::addCodelets("file.gp") and CodeletLibrary::loadPrecompiled load.
//
//   aspen-cc file.cpp -o file.gp [-I dir] [-D NAME[=VALUE]] [--flags "more compiler flags"]
#include "codelets/CodeletCache.hpp"
#include "codelets/CodeletLibrary.hpp"

#include <aspen/Error.hpp>

#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>

namespace {

constexpr const char *kUsage =
    "usage: aspen-cc <codelets.cpp> -o <output.gp> [options]\n"
    "\n"
    "Compiles the vertex classes of a codelet file for the host, ahead of time. The output loads\n"
    "with Graph::addCodelets(\"output.gp\").\n"
    "\n"
    "options:\n"
    "  -o <file>          the precompiled codelet file to write (required)\n"
    "  -I <dir>, -I<dir>  add an include directory\n"
    "  -D <def>, -D<def>  define a preprocessor macro (NAME or NAME=VALUE)\n"
    "  --flags \"<flags>\"  more flags for the host compiler\n"
    "  -h, --help         print this help\n"
    "\n"
    "environment: ASPEN_CXX (host compiler), ASPEN_INCLUDE_DIR (Aspen's headers),\n"
    "ASPEN_CACHE_DIR (compiled codelet cache)\n";

struct Options {
  std::string input, output, flags;
};

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
    } else if (arg.starts_with("-")) {
      throw aspen::invalid_option("aspen-cc: unknown option '" + arg + "' (see --help)");
    } else if (options.input.empty()) {
      options.input = arg;
    } else {
      throw aspen::invalid_option("aspen-cc: more than one input file ('" + options.input +
                                  "' and '" + arg + "')");
    }
  }
  if (options.input.empty() || options.output.empty())
    throw aspen::invalid_option(
        "aspen-cc: an input file and -o <output> are required (see --help)");
  return options;
}

} // namespace

int main(int argc, char **argv) {
  try {
    const Options options = parseArguments(argc, argv);
    const auto library = aspen::detail::CodeletLibrary::compileFile(options.input, options.flags);
    const std::vector<std::uint8_t> &bytes = library->binary();
    aspen::detail::writeFileAtomically(
        options.output,
        std::string_view(reinterpret_cast<const char *>(bytes.data()), bytes.size()));
    return 0;
  } catch (const std::exception &e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
