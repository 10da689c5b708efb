// <popops/EncodingConstants.hpp>: PopLibs' macros MASKED_LABEL_CODE (all 32 bits set),
// EPS_LOG_N_FLOAT (the smallest normal float) and EPS_LOG_N_HALF (about 2^-24), included
// before <popnn/Loss.hpp>, which brings it too (as PopLibs' does) and declares Aspen's
// aspen::nn::MASKED_LABEL_CODE (-1) without a clash; once the macro is defined the name is the
// macro's, as in PopLibs.
#include <popops/EncodingConstants.hpp>
#include <popnn/Loss.hpp>

#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <iostream>

int main() {
  const unsigned masked = MASKED_LABEL_CODE;
  bool ok = masked == 0xFFFFFFFFu && static_cast<unsigned>(-1) == masked;
  ok = ok && EPS_LOG_N_FLOAT == FLT_MIN && std::fabs(EPS_LOG_N_HALF - 0x1p-24f) < 1e-12f &&
       std::log(0.0f + EPS_LOG_N_FLOAT) > -88.0f;
  std::cout << (ok ? "encoding_constants ok" : "encoding_constants FAILED") << "\n";
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
