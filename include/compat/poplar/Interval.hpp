// Poplar's <poplar/Interval.hpp>, mapped onto <aspen/Interval.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <aspen/Interval.hpp>
