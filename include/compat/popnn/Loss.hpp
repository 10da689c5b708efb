// PopLibs' <popnn/Loss.hpp>, mapped onto <aspen/nn/Loss.hpp>. Like PopLibs' header it brings
// <popops/EncodingConstants.hpp> (MASKED_LABEL_CODE).
#pragma once

#include <poplar/Implicit.hpp>
#include <popnn/Namespace.hpp>
#include <aspen/nn/Loss.hpp>
#include <popops/EncodingConstants.hpp>
