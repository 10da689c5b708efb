// PopLibs' <popnn/NonLinearityDef.hpp>, mapped onto <aspen/nn/NonLinearityDef.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <popnn/Namespace.hpp>
#include <aspen/nn/NonLinearityDef.hpp>
