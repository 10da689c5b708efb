// PopLibs' <popnn/Gru.hpp>, mapped onto <aspen/nn/Gru.hpp>: popnn::gru is aspen::nn::gru.
#pragma once

#include <poplar/Implicit.hpp>
#include <poplin/MatMul.hpp>
#include <popnn/GruDef.hpp>
#include <popnn/Namespace.hpp>
#include <popnn/NonLinearityDef.hpp>
#include <popnn/Rnn.hpp>
#include <aspen/nn/Gru.hpp>
