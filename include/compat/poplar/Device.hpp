// Poplar's <poplar/Device.hpp>, mapped onto <aspen/Device.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <aspen/Device.hpp>
