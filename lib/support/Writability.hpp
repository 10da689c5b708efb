// The one writability rule, for everything that writes a tensor (vertices' output fields,
// copies, kernels, builders writing in place): no constant element, and no variable
// element twice (a broadcast or repeated view), else the value written is undefined. Support
// floor: header-only over the public Tensor API, which core itself provides, so core, the
// compiler and the layers all apply this one rule.
#pragma once

#include <aspen/Error.hpp>
#include <aspen/Tensor.hpp>

#include <string>
#include <type_traits>

namespace aspen::detail {

// Raises Error naming `what` (the builder or program and the operand), the tensor and the
// rule unless t is parallel-writeable. `what` is a string, or a callable returning one, which
// is called only when the error is raised (callers checking many tensors need not format a
// name for each).
template <class Error = graph_connection_error, class What>
void requireWritable(const Tensor &t, const What &what) {
  const auto name = [&]() -> std::string {
    if constexpr (std::is_invocable_v<const What &>)
      return what();
    else
      return what;
  };
  if (t.containsConstant())
    throw Error(name() + ": tensor " + t.getDebugStr() +
                " is not parallel-writeable: it contains constant elements, which cannot be "
                "written");
  if (t.containsAliases())
    throw Error(name() + ": tensor " + t.getDebugStr() +
                " is not parallel-writeable: it contains aliased elements (the same variable "
                "element more than once), so the value written would be undefined");
}

} // namespace aspen::detail
