// Poplar's <poplar/VariableRef.hpp>: VariableRef and std::hash<VariableRef>, from
// <aspen/Tensor.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <aspen/Tensor.hpp>
