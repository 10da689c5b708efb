// ProgramNode: the data behind every aspen::program::Program.
#pragma once

#include <aspen/BlockCodelets.hpp>
#include <aspen/GraphElements.hpp>
#include <aspen/Program.hpp>
#include <aspen/Tensor.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace aspen::detail {

enum class ProgramKind : std::uint8_t {
  Empty,
  Sequence,         // children: the programs in order
  Execute,          // id: compute set
  Copy,             // tensor -> dst
  StreamToTensor,   // id: stream; dst
  TensorToStream,   // tensor -> id: stream
  Repeat,           // count; children: [body]
  RepeatWhileTrue,  // tensor: predicate; children: [cond, body]
  RepeatWhileFalse, // tensor: predicate; children: [cond, body]
  If,               // tensor: predicate; children: [trueBody, falseBody]
  Switch,           // tensor: control; children: [default, case...]; caseValues per case
  Call,             // id: function
  WriteUndef,       // tensor
  PrintTensor,      // title, tensor
  Sync,
  AbortOnCondition, // tensor: predicate
  LibraryCall,      // libraryKernel over operands (LibraryCalls.hpp)
  Launch,           // id: compute set of one block codelet; launch (BlockCodelets.hpp)
};

// The native kernels a LibraryCall runs; every executor implements each of them.
enum class LibraryKernel : std::uint8_t {
  Gemm, // operands: a, b, c, scale (invalid when alpha = 1); flags: kGemmAccumulate, kGemmTF32
};
inline constexpr std::uint32_t kGemmAccumulate = 1, kGemmAllowTF32 = 2;

const char *programKindName(ProgramKind kind);

struct ProgramNode {
  ProgramKind kind = ProgramKind::Empty;
  std::string debugName;
  std::vector<program::Program> children;
  std::vector<std::int32_t> caseValues;
  Tensor tensor;
  Tensor dst;
  GraphState *graph = nullptr; // owner of `id` (compute set, function or stream)
  unsigned id = kInvalidId;
  unsigned count = 0;
  std::string title;
  LibraryKernel libraryKernel = LibraryKernel::Gemm; // LibraryCall
  std::vector<Tensor> operands;                      // LibraryCall
  std::uint32_t flags = 0;                           // LibraryCall
  LaunchShape launch;                                // Launch
};

} // namespace aspen::detail
