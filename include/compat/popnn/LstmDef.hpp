// PopLibs' <popnn/LstmDef.hpp>, mapped onto <aspen/nn/LstmDef.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <popnn/Namespace.hpp>
#include <aspen/nn/LstmDef.hpp>
