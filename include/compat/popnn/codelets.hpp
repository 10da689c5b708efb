// popnn::addCodelets(graph): aspen::nn::addCodelets (which adds aspen::ops' codelets too).
#pragma once

#include <poplar/Implicit.hpp>
#include <popnn/Namespace.hpp>
#include <aspen/nn/Codelets.hpp>
