// Running a program (the host compiler) and capturing what it prints.
#pragma once

#include <string>
#include <vector>

namespace aspen::detail {

struct ProcessResult {
  int exitCode = -1;  // -1 when the program could not be started or was killed
  std::string output; // stdout and stderr, interleaved as printed
};

// Runs argv[0] (searched in PATH) with argv; stdin is read from `stdinPath` (or /dev/null).
ProcessResult runProcess(const std::vector<std::string> &argv, const std::string &stdinPath = {});

// Splits a flag string at whitespace outside single or double quotes: `-I "a b" -DX`.
std::vector<std::string> splitFlags(const std::string &flags);

} // namespace aspen::detail
