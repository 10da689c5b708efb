// copyFloatToDeviceHalf / copyDeviceHalfToFloat (PopLibs' tests fill half buffers with them):
// binary16 bit patterns worked out by hand, round to nearest even.
#include <poplar/IPUModel.hpp>
#include <poplar/Target.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>

int main() {
  poplar::IPUModel model;
  poplar::Device device = model.createDevice();
  const poplar::Target &target = device.getTarget();
  // 1, -2, 0.5, 65504 (half's largest), 1 + 2^-11 (a tie between 1 and 1 + 2^-10: the even
  // mantissa, 1), 1 + 3*2^-11 (a tie between 1 + 2^-10 and 1 + 2^-9: the even one, 1 + 2^-9),
  // 1e-8 (below half the smallest subnormal: 0).
  const float in[] = {1.0f, -2.0f, 0.5f, 65504.0f, 1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 1e-8f};
  const std::uint16_t expected[] = {0x3c00, 0xc000, 0x3800, 0x7bff, 0x3c00, 0x3c02, 0x0000};
  unsigned char device16[sizeof expected];
  poplar::copyFloatToDeviceHalf(target, in, device16, 7);
  bool ok = std::memcmp(device16, expected, sizeof expected) == 0;
  float back[7];
  poplar::copyDeviceHalfToFloat(target, device16, back, 7);
  const float backExpected[] = {1.0f, -2.0f, 0.5f, 65504.0f, 1.0f, 1.0f + 0x1p-9f, 0.0f};
  for (int i = 0; i < 7; ++i)
    ok = ok && back[i] == backExpected[i];
  std::cout << (ok ? "device_half_copies ok" : "device_half_copies FAILED") << "\n";
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
