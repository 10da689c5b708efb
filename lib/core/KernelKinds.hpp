// The kernels a Kernel step runs, described once.
//
// ASPEN_KERNEL_KINDS lists every kind with its operands; each operand has a name, a role and
// whether it may be absent (an invalid Tensor in the program, a Null descriptor once lowered).
// Everything that handles a kernel's operands follows from the table: the enum and its names,
// the operand indices (GemmOperand::a, ...), verification (present, mapped, written ones
// writable), kernel lowering (which operands are gathered into scratch and which scattered
// back), liveness (what the step reads and writes), serialisation (the operand count) and the
// dump.
//
// Roles:
//   Read         read, never written
//   Written      every element written, none read
//   Accumulated  written; also read first when the call accumulates (kKernelAccumulate)
//   Scratch      the kernel's own working memory: neither read before nor kept after
//
// Adding a library kernel: one entry here (with its operand list), its program:: class (e.g.
// include/aspen/Kernels.hpp, building a ProgramKind::Kernel node with its operands in table
// order), what lowering derives from its shapes (CompiledKernel, LowerKernels.cpp), and one
// implementation per executor. Block is the block codelet of program::Launch: its data are its
// compute set's fields, so it has no operands here.
#pragma once

#include <aspen/ArrayRef.hpp>

#include <cstdint>

namespace aspen::detail {

enum class OperandRole : std::uint8_t { Read, Written, Accumulated, Scratch };
enum class OperandPresence : std::uint8_t { Required, Optional };

// O(name, role, presence) for each operand, in order.
#define ASPEN_GEMM_OPERANDS(O)                                                                    \
  O(a, Read, Required)                                                                            \
  O(b, Read, Required)                                                                            \
  O(c, Accumulated, Required)                                                                     \
  O(scale, Read, Optional) /* alpha: one float; absent when alpha = 1 */
#define ASPEN_BLOCK_OPERANDS(O)
// The convolution calls (ConvGeometry, Kernels.hpp): weights are [G, Co, Ci*T] (kept taps).
#define ASPEN_CONV_FORWARD_OPERANDS(O)                                                            \
  O(in, Read, Required)      /* [B, G*Ci, F...] */                                                \
  O(weights, Read, Required)                                                                      \
  O(out, Written, Required) /* [B, G*Co, O...] */
#define ASPEN_CONV_BACKWARD_DATA_OPERANDS(O)                                                      \
  O(outGrad, Read, Required) /* [B, G*Co, O...] */                                                \
  O(weights, Read, Required)                                                                      \
  O(inGrad, Written, Required) /* [B, G*Ci, F...] */
#define ASPEN_CONV_BACKWARD_FILTER_OPERANDS(O)                                                    \
  O(outGrad, Read, Required)                                                                      \
  O(in, Read, Required)                                                                           \
  O(weights, Accumulated, Required) /* deltas, or weights += scale * deltas */                    \
  O(scale, Read, Optional)          /* one float; absent: 1 */

// The cross-replica collectives (aspen/Collectives.hpp, program::CrossReplicaCopy): every
// replica's `data` met in replica order, into each replica's `result` (sized by
// collectiveResultElements, ReplicaGroups.hpp). The engine runs them (runsOnHost), not an
// executor.
#define ASPEN_COLLECTIVE_OPERANDS(O)                                                              \
  O(data, Read, Required)                                                                         \
  O(result, Written, Required)

// X(kind, operand list)
#define ASPEN_KERNEL_KINDS(X)                                                                     \
  X(Gemm, ASPEN_GEMM_OPERANDS)                                                                    \
  X(Block, ASPEN_BLOCK_OPERANDS)                                                                  \
  X(ConvForward, ASPEN_CONV_FORWARD_OPERANDS)                                                     \
  X(ConvBackwardData, ASPEN_CONV_BACKWARD_DATA_OPERANDS)                                          \
  X(ConvBackwardFilter, ASPEN_CONV_BACKWARD_FILTER_OPERANDS)                                      \
  X(AllReduce, ASPEN_COLLECTIVE_OPERANDS)                                                          \
  X(ReduceScatter, ASPEN_COLLECTIVE_OPERANDS)                                                      \
  X(AllGather, ASPEN_COLLECTIVE_OPERANDS)                                                          \
  X(Broadcast, ASPEN_COLLECTIVE_OPERANDS)                                                          \
  X(AllToAll, ASPEN_COLLECTIVE_OPERANDS)                                                           \
  X(CrossReplicaCopy, ASPEN_COLLECTIVE_OPERANDS)

#define ASPEN_KERNEL_ENUM(kind, operands) kind,
enum class KernelKind : std::uint8_t { ASPEN_KERNEL_KINDS(ASPEN_KERNEL_ENUM) };
#undef ASPEN_KERNEL_ENUM

#define ASPEN_KERNEL_COUNT(kind, operands) +1
inline constexpr std::uint32_t kNumKernelKinds = 0 ASPEN_KERNEL_KINDS(ASPEN_KERNEL_COUNT);
#undef ASPEN_KERNEL_COUNT

// GemmOperand::a == 0, ..., GemmOperand::count: each kind's operand indices.
#define ASPEN_OPERAND_ENUM(name, role, presence) name,
#define ASPEN_KERNEL_OPERAND_ENUM(kind, operands)                                                 \
  struct kind##Operand {                                                                          \
    enum : std::uint32_t { operands(ASPEN_OPERAND_ENUM) count };                                  \
  };
ASPEN_KERNEL_KINDS(ASPEN_KERNEL_OPERAND_ENUM)
#undef ASPEN_KERNEL_OPERAND_ENUM
#undef ASPEN_OPERAND_ENUM

// Flags of a kernel call (ProgramNode::flags, CompiledKernel): kKernelAccumulate makes its
// Accumulated operands read as well as written; kGemmAllowTF32 is Gemm's own.
inline constexpr std::uint32_t kKernelAccumulate = 1, kGemmAllowTF32 = 2;

struct OperandInfo {
  const char *name;
  OperandRole role;
  OperandPresence presence;
  bool reads(bool accumulate) const {
    return role == OperandRole::Read || (role == OperandRole::Accumulated && accumulate);
  }
  bool writes() const { return role == OperandRole::Written || role == OperandRole::Accumulated; }
};

namespace kernel_table {
#define ASPEN_OPERAND_INFO(name, role, presence)                                                  \
  OperandInfo{#name, OperandRole::role, OperandPresence::presence},
// One more element than operands, so that a kind without operands still has an array.
#define ASPEN_KERNEL_OPERAND_INFO(kind, operands)                                                 \
  inline constexpr OperandInfo kind##Operands[] = {operands(ASPEN_OPERAND_INFO){                 \
      nullptr, OperandRole::Scratch, OperandPresence::Optional}};
ASPEN_KERNEL_KINDS(ASPEN_KERNEL_OPERAND_INFO)
#undef ASPEN_KERNEL_OPERAND_INFO
#undef ASPEN_OPERAND_INFO
} // namespace kernel_table

// The operands of `kind`, in order.
inline ArrayRef<OperandInfo> kernelOperands(KernelKind kind) {
  switch (kind) {
#define ASPEN_KERNEL_OPERANDS_CASE(kind, operands)                                                \
  case KernelKind::kind:                                                                          \
    return ArrayRef<OperandInfo>(kernel_table::kind##Operands, kind##Operand::count);
    ASPEN_KERNEL_KINDS(ASPEN_KERNEL_OPERANDS_CASE)
#undef ASPEN_KERNEL_OPERANDS_CASE
  }
  return {};
}

// The kinds the engine runs itself, between the executor's steps (the collectives).
inline bool runsOnHost(KernelKind kind) {
  return kind == KernelKind::AllReduce || kind == KernelKind::ReduceScatter ||
         kind == KernelKind::AllGather || kind == KernelKind::Broadcast ||
         kind == KernelKind::AllToAll || kind == KernelKind::CrossReplicaCopy;
}

inline const char *kernelKindName(KernelKind kind) {
  switch (kind) {
#define ASPEN_KERNEL_NAME_CASE(kind, operands)                                                    \
  case KernelKind::kind:                                                                          \
    return #kind;
    ASPEN_KERNEL_KINDS(ASPEN_KERNEL_NAME_CASE)
#undef ASPEN_KERNEL_NAME_CASE
  }
  return "?";
}

} // namespace aspen::detail
