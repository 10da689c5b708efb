// PopLibs' <popops/EncodingConstants.hpp>: the constants PopLibs defines as macros.
//   MASKED_LABEL_CODE  the label that masks a row of a loss or an encoding: all 32 bits set
//                      (aspen::nn::MASKED_LABEL_CODE, -1, is the same bits as a signed label)
//   EPS_LOG_N_FLOAT    the smallest normal float, 2^-126: what a log adds to stay finite
//   EPS_LOG_N_HALF     about the smallest half subnormal, 2^-24, for half data
// Codelets include this header too: it has no includes.
#pragma once

#define MASKED_LABEL_CODE 0xFFFFFFFFU
#define EPS_LOG_N_FLOAT (1.17549435e-38F)
#define EPS_LOG_N_HALF (0.000000059605F)
