// PopLibs' <popnn/Recurrent.hpp> (the vanilla RNN), mapped onto <aspen/nn/Recurrent.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <poplin/MatMul.hpp>
#include <popnn/Namespace.hpp>
#include <popnn/NonLinearity.hpp>
#include <aspen/nn/Recurrent.hpp>
