// Poplar's <poplar/DeviceManager.hpp>, mapped onto <aspen/Device.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <aspen/Device.hpp>
#include <poplar/exceptions.hpp> // poplar_error comes with DeviceManager.hpp in Poplar
