// GPU devices and targets without a GPU: the "h200" model equals what a real H200 reports, GPU
// targets follow their options, and asking for a GPU that is not there is one clear error.
#include <aspen/Device.hpp>
#include <aspen/Engine.hpp>
#include <aspen/Error.hpp>
#include <aspen/Graph.hpp>
#include <aspen/Target.hpp>

#include <catch2/catch.hpp>

using namespace aspen;

TEST_CASE("the h200 model is what cudaGetDeviceProperties reports for an H200",
          "[unit][gpu_device]") {
  const Target t = Target::createModel("h200");
  const GpuProperties &p = t.getGpuProperties();
  CHECK(p.multiProcessorCount == 132);
  CHECK(p.computeCapabilityMajor == 9);
  CHECK(p.computeCapabilityMinor == 0);
  CHECK(p.maxThreadsPerBlock == 1024);
  CHECK(p.sharedMemoryPerBlockOptin == 232448); // 227 KiB
  CHECK(p.globalMemoryBytes == 150754820096ull); // 143771 MiB
  CHECK(p.memoryBandwidthBytesPerSecond == 4.8e12);
  CHECK(t.getNumTiles() == 132);
  CHECK(t.getNumWorkerContexts() == 256);
  // A tile's memory is its share of global memory, where the executor keeps tensors.
  CHECK(t.getBytesPerTile() == 150754820096ull / 132);
  CHECK(t.getTargetType() == TargetType::GPU);
}

TEST_CASE("GPU matmul rates are the cards' published dense peaks", "[unit][gpu_device]") {
  // H200 SXM at 1.98 GHz on 132 SMs: 67 TFLOPS FP32, 535 TF32, 1070 FP16 with float
  // accumulation (2 flops a MAC).
  const Target t = Target::createModel("h200");
  auto tflops = [&](Type type, bool tf32) {
    return 2.0 * t.getMatMulMacsPerCycle(type, tf32) * t.getNumTiles() *
           t.getTileClockFrequency() / 1e12;
  };
  CHECK(tflops(FLOAT, false) == Approx(66.9).epsilon(0.01));
  CHECK(tflops(FLOAT, true) == Approx(535.2).epsilon(0.01));
  CHECK(tflops(HALF, false) == Approx(1070.5).epsilon(0.01));
  // Two tiles an SM share its units.
  const Target::GpuSpec spec{100, 9, 0, 1024, 100000, 1ull << 34, 1e12, 1.5e9};
  CHECK(Target::makeGpu("card", spec, {{"tilesPerSM", "2"}}).getMatMulMacsPerCycle(HALF) == 1024);
  // An A100 (sm_80) has 64 FP32 lanes an SM; the ipu2's AMP does 64 half or 16 float MACs a tile.
  const Target::GpuSpec a100{108, 8, 0, 1024, 166912, 1ull << 36, 2e12, 1.41e9};
  CHECK(Target::makeGpu("a100", a100).getMatMulMacsPerCycle(FLOAT) == 64);
  CHECK(Target::createModel("ipu2").getMatMulMacsPerCycle(HALF) == 64);
  CHECK(Target::createModel("ipu2").getMatMulMacsPerCycle(FLOAT) == 16);
}

TEST_CASE("a GPU target takes tiles per SM and threads per block from its options",
          "[unit][gpu_device]") {
  const Target::GpuSpec spec{100, 8, 6, 768, 100000, 1ull << 34, 1e12, 1.5e9};
  const Target plain = Target::makeGpu("card", spec);
  CHECK(plain.getNumTiles() == 100);
  CHECK(plain.getNumWorkerContexts() == 256);
  CHECK(plain.getBytesPerTile() == (1ull << 34) / 100);
  CHECK(plain.getGpuProperties().sharedMemoryPerBlockOptin == 100000);

  const Target two =
      Target::makeGpu("card", spec, {{"tilesPerSM", "2"}, {"threadsPerBlock", "768"}});
  CHECK(two.getNumTiles() == 200);
  CHECK(two.getNumWorkerContexts() == 768);
  CHECK(two.getBytesPerTile() == (1ull << 34) / 200);
  CHECK(two.getGpuProperties().multiProcessorCount == 100);

  // A card whose blocks are smaller than the default takes its own limit.
  const Target::GpuSpec small{4, 7, 5, 128, 48 * 1024, 1ull << 30, 1e11, 1e9};
  CHECK(Target::makeGpu("small", small).getNumWorkerContexts() == 128);

  for (const char *bad : {"0", "1000", "100", "x", "1024"})
    CHECK_THROWS_AS(Target::makeGpu("card", spec, {{"threadsPerBlock", bad}}), invalid_option);
  CHECK_THROWS_WITH(Target::makeGpu("card", spec, {{"threadsPerBlock", "100"}}),
                    Catch::Contains("threadsPerBlock") && Catch::Contains("100") &&
                        Catch::Contains("multiple of 32 from 32 to 768"));
  CHECK_THROWS_AS(Target::makeGpu("card", spec, {{"tilesPerSM", "0"}}), invalid_option);
  CHECK_THROWS_WITH(Target::makeGpu("card", spec, {{"tilesPerSm", "2"}}),
                    Catch::Contains("tilesPerSm"));
}

TEST_CASE("asking for a GPU that is not there is one clear error", "[unit][gpu_device]") {
  const unsigned count = Device::gpuCount();
  // Whatever the machine, an ordinal past the last GPU names the ordinal.
  CHECK_THROWS_AS(Device::createGpuDevice(count), error);
  CHECK_THROWS_WITH(Device::createGpuDevice(count),
                    Catch::Contains("createGpuDevice(" + std::to_string(count) + ")"));
  CHECK(DeviceManager::createDeviceManager().getDevices(TargetType::GPU, 1).size() == count);
  CHECK(DeviceManager::createDeviceManager().getDevices(TargetType::IPU, 1).empty());
  CHECK_THROWS_AS(DeviceManager::createDeviceManager().getDevice(count), error);
  CHECK_THROWS_AS(Device::createCPUDevice().getGpuOrdinal(), error);
  if (count > 0) {
    const Device gpu = Device::createGpuDevice(0);
    CHECK(gpu.getKind() == DeviceKind::Gpu);
    CHECK(gpu.getGpuOrdinal() == 0);
    CHECK_THAT(gpu.describe(), Catch::StartsWith("GPU 0 ("));
    return;
  }
  // This machine has no GPU (or this build has no CUDA executor): the error says why, and the
  // default device is the CPU executor modelling an H200.
  CHECK_THROWS_WITH(Device::createGpuDevice(0),
                    Catch::Contains("createGpuDevice(0)") &&
                        (Catch::Contains("this machine has 0 GPUs") ||
                         Catch::Contains("no CUDA executor")));
  CHECK(DeviceManager::createDeviceManager().getDevices().empty());
  const Device fallback = Device::createDefaultDevice();
  CHECK(fallback.getKind() == DeviceKind::Model);
  CHECK(fallback.getTarget().getName() == "h200");
}
