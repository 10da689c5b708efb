// Poplar's <poplar/ProfileValue.hpp>: ProfileValue (<aspen/ProfileValue.hpp>).
#pragma once

#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <aspen/ProfileValue.hpp>
