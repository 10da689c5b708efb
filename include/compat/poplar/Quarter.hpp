// Poplar's <poplar/Quarter.hpp>: QuarterMetadata and the QUARTER types, mapped onto
// <aspen/Quarter.hpp> (formats F143 and F152, value = decoded code * 2^scale).
#pragma once

#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <poplar/Type.hpp>
#include <aspen/Quarter.hpp>
