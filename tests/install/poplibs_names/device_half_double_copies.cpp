// copyDoubleToDeviceHalf / copyDeviceHalfToDouble (Poplar's Target.hpp, beside the float
// forms): binary16 bit patterns worked out by hand. Each double is rounded to half once, to
// nearest even, so a value just above a tie rounds up even where rounding it to float first
// would have made it the tie.
#include <poplar/IPUModel.hpp>
#include <poplar/Target.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>

int main() {
  poplar::IPUModel model;
  poplar::Device device = model.createDevice();
  const poplar::Target &target = device.getTarget();
  // 1, -2.5, 65504 (half's largest), 65520 (the tie above it: infinity), 1 + 2^-11 (a tie: the
  // even 1), 1 + 2^-11 + 2^-40 (above the tie: 1 + 2^-10, though as a float it is the tie),
  // -(1 + 2^-11 + 2^-40) (the same, negative), 2^-24 (the smallest subnormal), 2^-26 (below
  // half of it: 0), 1e300 (infinity), NaN.
  const double in[] = {1.0,
                       -2.5,
                       65504.0,
                       65520.0,
                       1.0 + 0x1p-11,
                       1.0 + 0x1p-11 + 0x1p-40,
                       -(1.0 + 0x1p-11 + 0x1p-40),
                       0x1p-24,
                       0x1p-26,
                       1e300,
                       std::numeric_limits<double>::quiet_NaN()};
  const std::uint16_t expected[] = {0x3c00, 0xc100, 0x7bff, 0x7c00, 0x3c00, 0x3c01,
                                    0xbc01, 0x0001, 0x0000, 0x7c00};
  constexpr std::size_t n = sizeof in / sizeof in[0];
  std::uint16_t device16[n];
  poplar::copyDoubleToDeviceHalf(target, in, device16, n);
  bool ok = std::memcmp(device16, expected, sizeof expected) == 0 &&
            (device16[n - 1] & 0x7c00) == 0x7c00 && (device16[n - 1] & 0x03ff) != 0; // NaN
  double back[n];
  poplar::copyDeviceHalfToDouble(target, device16, back, n);
  const double backExpected[] = {1.0,   -2.5,  65504.0, std::numeric_limits<double>::infinity(),
                                 1.0,   1.0 + 0x1p-10, -(1.0 + 0x1p-10), 0x1p-24,
                                 0.0,   std::numeric_limits<double>::infinity()};
  for (std::size_t i = 0; i + 1 < n; ++i)
    ok = ok && back[i] == backExpected[i];
  ok = ok && back[n - 1] != back[n - 1]; // NaN stays NaN
  std::cout << (ok ? "device_half_double_copies ok" : "device_half_double_copies FAILED") << "\n";
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
