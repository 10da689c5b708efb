// PopLibs' <popnn/GruDef.hpp>, mapped onto <aspen/nn/GruDef.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <popnn/Namespace.hpp>
#include <aspen/nn/GruDef.hpp>
