// PopLibs' <popnn/PoolingDef.hpp>, mapped onto <aspen/nn/PoolingDef.hpp>.
#pragma once

#include <popnn/Namespace.hpp>
#include <aspen/nn/PoolingDef.hpp>
