// Compiled once for every header under include/compat, with only that header (HEADER, set by
// tests/CMakeLists.txt), as C++17 without GNU extensions: a header that needs another's
// includes, or C++20, fails the build.
#include HEADER
