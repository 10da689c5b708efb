// PopLibs' <popnn/Lstm.hpp>, mapped onto <aspen/nn/Lstm.hpp>: popnn::lstm is aspen::nn::lstm.
#pragma once

#include <poplar/Implicit.hpp>
#include <poplin/MatMul.hpp>
#include <popnn/LstmDef.hpp>
#include <popnn/Namespace.hpp>
#include <popnn/NonLinearityDef.hpp>
#include <popnn/Rnn.hpp>
#include <aspen/nn/Lstm.hpp>
