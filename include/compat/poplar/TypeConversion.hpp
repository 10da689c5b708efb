// Poplar's <poplar/TypeConversion.hpp>: convertToDeviceType / convertFromDeviceType, mapped onto
// <aspen/TypeConversion.hpp>. Poplar spells its ArrayRef gccs::ArrayRef; so may a port.
#pragma once

#include <poplar/ArrayRef.hpp>
#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <poplar/Quarter.hpp>
#include <poplar/Type.hpp>
#include <aspen/TypeConversion.hpp>

namespace gccs {
using aspen::ArrayRef;
} // namespace gccs
