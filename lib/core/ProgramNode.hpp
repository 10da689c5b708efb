// ProgramNode: the data behind every aspen::program::Program.
#pragma once

#include <aspen/BlockCodelets.hpp>
#include <aspen/GraphElements.hpp>
#include <aspen/Kernels.hpp>
#include <aspen/Program.hpp>
#include <aspen/Tensor.hpp>

#include "core/KernelKinds.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace aspen::detail {

// Every kind of program node, described once: X(kind, name in messages). The compiler lowers
// each to steps (LowerPrograms.cpp, a switch the build checks complete: -Werror=switch).
#define ASPEN_PROGRAM_KINDS(X)                                                                    \
  X(Empty, "Program")                                                                             \
  X(Sequence, "Sequence")               /* children: the programs in order */                    \
  X(Execute, "Execute")                 /* id: compute set */                                    \
  X(Copy, "Copy")                       /* tensor -> dst */                                      \
  X(StreamToTensor, "Copy(stream -> tensor)") /* id: stream; dst */                              \
  X(TensorToStream, "Copy(tensor -> stream)") /* tensor -> id: stream */                         \
  X(Repeat, "Repeat")                   /* count; children: [body] */                            \
  X(RepeatWhileTrue, "RepeatWhileTrue") /* tensor: predicate; children: [cond, body] */          \
  X(RepeatWhileFalse, "RepeatWhileFalse") /* tensor: predicate; children: [cond, body] */        \
  X(If, "If")                           /* tensor: predicate; children: [trueBody, falseBody] */ \
  X(Switch, "Switch") /* tensor: control; children: [default, case...]; caseValues per case */  \
  X(Call, "Call")                       /* id: function */                                       \
  X(WriteUndef, "WriteUndef")           /* tensor */                                             \
  X(PrintTensor, "PrintTensor")         /* title, tensor */                                      \
  X(Sync, "Sync")                                                                                 \
  X(AbortOnCondition, "AbortOnCondition") /* tensor: predicate */                                \
  X(Kernel, "Kernel") /* kernel over operands (KernelKinds.hpp, Kernels.hpp) */  \
  X(Launch, "Launch") /* id: compute set of one block codelet; launch (BlockCodelets.hpp) */ \
  X(Cached, "Cached") /* id: the cache (copies share it); children: [body] */

#define ASPEN_PROGRAM_ENUM(kind, name) kind,
enum class ProgramKind : std::uint8_t { ASPEN_PROGRAM_KINDS(ASPEN_PROGRAM_ENUM) };
#undef ASPEN_PROGRAM_ENUM

// The kind's name in messages; a Kernel node's is its kernel kind's (programName below).
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
  KernelKind kernel = KernelKind::Gemm; // Kernel
  std::vector<Tensor> operands;         // Kernel: kernelOperands(kernel), in order
  std::uint32_t flags = 0;              // Kernel: kKernelAccumulate, kGemmAllowTF32
  program::ConvGeometry conv;           // Kernel: the Conv* kinds
  std::uint32_t collectiveOperator = 0; // Kernel: the collectives (collectives::CollectiveOperator)
  std::uint32_t collectiveRoot = 0;     // Kernel: Broadcast's root (a position in its group)
  // Kernel, the collectives: collectives::CommGroupType and the replicas a group (ALL: r).
  std::uint32_t collectiveGroupType = 0, collectiveGroupSize = 1;
  // Kernel, CrossReplicaCopy: collectiveSources[d] is the replica whose data replica d receives.
  std::vector<std::uint32_t> collectiveSources;
  LaunchShape launch;                                // Launch
};

// How messages name a node: its kind's name, a Kernel node by its kernel kind's name.
inline const char *programName(const ProgramNode &node) {
  return node.kind == ProgramKind::Kernel ? kernelKindName(node.kernel)
                                               : programKindName(node.kind);
}

} // namespace aspen::detail
