// Poplar's <poplar/StringRef.hpp>, mapped onto <aspen/ArrayRef.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <aspen/ArrayRef.hpp>
