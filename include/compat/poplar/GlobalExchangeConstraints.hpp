// Poplar's <poplar/GlobalExchangeConstraints.hpp>: GlobalExchangeFlow and
// GlobalExchangeConstraint (<aspen/GlobalExchangeConstraints.hpp>).
#pragma once

#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <aspen/GlobalExchangeConstraints.hpp>
