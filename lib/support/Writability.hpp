// The one writability rule, for everything that writes a tensor (vertices' output fields,
// copies, kernels, builders writing in place): no constant element, and no variable
// element twice (a broadcast or repeated view), else the value written is undefined. Support
// floor: header-only over the public Tensor API, which core itself provides, so core, the
// compiler and the layers all apply this one rule.
#pragma once

#include <aspen/Error.hpp>
#include <aspen/Tensor.hpp>

#include <string>

namespace aspen::detail {

// Raises Error naming `what` (the builder or program and the operand), the tensor and the
// rule unless t is parallel-writeable.
template <class Error = graph_connection_error>
void requireWritable(const Tensor &t, const std::string &what) {
  if (t.containsConstant())
    throw Error(what + ": tensor " + t.getDebugStr() +
                " is not parallel-writeable: it contains constant elements, which cannot be "
                "written");
  if (t.containsAliases())
    throw Error(what + ": tensor " + t.getDebugStr() +
                " is not parallel-writeable: it contains aliased elements (the same variable "
                "element more than once), so the value written would be undefined");
}

} // namespace aspen::detail
