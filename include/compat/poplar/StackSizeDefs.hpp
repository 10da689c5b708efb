// Poplar's <poplar/StackSizeDefs.hpp> for codelets: stack-size declarations for assembly
// vertices, which mean nothing when compute() is C++ (DEF_STACK_USAGE is in <aspen/Vertex.hpp>).
#pragma once

#include <poplar/Vertex.hpp>

#ifndef DEF_STACK_SIZE_OWN
#define DEF_STACK_SIZE_OWN(...)
#endif
