// PopLibs' <popnn/NonLinearity.hpp>, mapped onto <aspen/nn/NonLinearity.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <popnn/Namespace.hpp>
#include <aspen/nn/NonLinearity.hpp>
