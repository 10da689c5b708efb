// PopLibs' <popnn/Loss.hpp>, mapped onto <aspen/nn/Loss.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <popnn/Namespace.hpp>
#include <aspen/nn/Loss.hpp>
