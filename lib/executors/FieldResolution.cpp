// Resolving DescTemplates to FieldDescs (see FieldResolution.hpp).
#include "FieldResolution.hpp"

namespace aspen::detail {

namespace {

void *toPointer(std::uint64_t address) {
  return reinterpret_cast<void *>(static_cast<std::uintptr_t>(address));
}

FieldDesc resolve(const DescTemplate &d, const std::vector<Buffer> &buffers,
                  std::uint64_t arenaBase, std::uint64_t nestedBase) {
  switch (d.base) {
  case DescTemplate::Arena:
    return {toPointer(arenaAddress(arenaBase, buffers, d.buffer, std::int64_t(d.offset))), d.size};
  case DescTemplate::Nested:
    return {toPointer(nestedBase + d.offset * sizeof(FieldDesc)), d.size};
  case DescTemplate::Null:
    break;
  }
  return {nullptr, d.size};
}

} // namespace

ResolvedFields resolveFields(const CompiledComputeSet &cs, const std::vector<Buffer> &buffers,
                             std::uint64_t arenaBase, std::uint64_t nestedBase) {
  ResolvedFields result;
  result.nested.reserve(cs.nested.size());
  for (const DescTemplate &d : cs.nested)
    result.nested.push_back(resolve(d, buffers, arenaBase, nestedBase));
  result.fields.reserve(cs.fields.size());
  for (const DescTemplate &d : cs.fields)
    result.fields.push_back(resolve(d, buffers, arenaBase, nestedBase));
  return result;
}

} // namespace aspen::detail
