// Poplar's <poplar/Tensor.hpp>, mapped onto <aspen/Tensor.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <aspen/Tensor.hpp>
