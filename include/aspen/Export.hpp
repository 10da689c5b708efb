// ASPEN_API marks what Aspen's shared libraries export: the classes and functions declared in
// include/aspen. The libraries are built with hidden visibility (-fvisibility=hidden,
// -fvisibility-inlines-hidden), so everything else in them — the compiler, the executors, the
// support layer — stays private to the library that holds it and cannot clash with, or be
// reached by, a program that links them.
//
// On ELF the same attribute serves the library and its users. A class marked ASPEN_API exports
// its out-of-line members, its vtable and its type_info (so an aspen::error thrown in a library is
// caught by type in the program); a function marked ASPEN_API exports itself.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define ASPEN_API __attribute__((visibility("default")))
#else
#define ASPEN_API
#endif
