// PopLibs' <popnn/Rnn.hpp>, mapped onto <aspen/nn/Rnn.hpp>: popnn::rnn is aspen::nn::rnn.
#pragma once

#include <poplar/Implicit.hpp>
#include <popnn/Namespace.hpp>
#include <aspen/nn/Rnn.hpp>
