// PopLibs' <popnn/Norms.hpp>, mapped onto <aspen/nn/Norms.hpp>: the flops functions and
// createNormGamma / createNormBeta / createNormParams.
#pragma once

#include <poplar/Implicit.hpp>
#include <popnn/Namespace.hpp>
#include <aspen/nn/Norms.hpp>
