// The matmul planner: how a (grouped) matrix product is computed: as one kernel
// (method "library": program::Gemm, Kernels.hpp) or partitioned over tiles as vertices
// (method "vertices").
//
// A library plan hands the whole product to the executor's native library (cuBLASLt on a GPU,
// OpenBLAS on the CPU executor); its operands are mapped linearly over all tiles, partition and
// serial are all 1, tilesUsed is the tile count and it moves no bytes between tiles. It needs
// inputs and output of the same type, or half inputs and a float output, and it accumulates in
// float whatever partialsType says. The planner picks the method with the fewer estimated
// cycles: a kernel costs the product's MACs at the whole target's peak matmul rate
// (Target::getMatMulMacsPerCycle) plus a fixed call cost (a kernel launch on a GPU, 2000
// cycles elsewhere); a vertex plan its estimate below. Pinning any partition or serial count
// pins method "vertices".
//
// A plan for C[G,M,N] = A[G,M,K] . B[G,K,N] splits G, M, K and N into `partition` parts
// (tiles used = groups * m * k * n; each tile computes one block product, and when k > 1 the k
// partial blocks are summed by a second compute set in the partials type), and, when one step's
// working set per tile would exceed bytesPerTile * availableMemoryProportion, into `serial`
// steps run one after the other (serial.k steps accumulate into the same partials).
// With serial steps, each of M, K, N is cut into partition * serial chunks of
// ceil(D / (partition * serial)) rows; serial step s handles chunks [s * partition,
// (s + 1) * partition), part p of it chunk s * partition + p (no chunk is empty).
// Tile of block (g, m, n, k): ((g * partition.m + m) * partition.n + n) * partition.k + k, so a
// plan uses tiles [0, tilesUsed).
//
// The cost model reads the Target only: compute rate per tile and type (vector width, workers,
// clock), bytes per tile, exchange bytes per cycle and tile count. Planning is deterministic: the
// same target, parameters and options give the same plan.
//
// JSON form (MatMulPlan::toJson, and the schema of the "planConstraints" option, where any subset
// of the keys pins that part of the plan):
//   {"method": "vertices",
//    "partition": {"groups": 1, "m": 4, "k": 1, "n": 8},
//    "serial": {"m": 1, "k": 1, "n": 1},
//    "partialsType": "float"}
// toJson() also writes the derived numbers ("tilesUsed", "maxTileBytes", "meanTileBytes",
// "exchangeBytes", "estimatedCycles", "params"); as constraints those keys are rejected, and
// constraintsJson() writes only the pinnable keys, which reproduce the plan.
// PopLibs' planConstraints are accepted as well, so a PopLibs program's options work unchanged:
// "method" one of AMP, HMAC, MAC, OUTER_PRODUCT, SLIC, VMAC (the IPU's on-tile methods) pins
// "vertices"; "convGroupsPerGroup", "inChansPerGroup", "partialChansPerGroup",
// "numAmpConvUnits", "slicWindowWidth" (non-negative integers) and plan levels "0", "1", ...
// (objects of "transform" and "partition" objects) are checked for their form and have no
// effect: they describe IPU units and conv-planner levels that Aspen's planner does not have.
#pragma once

#include <aspen/Export.hpp>
#include <aspen/OptionFlags.hpp>
#include <aspen/Target.hpp>
#include <aspen/Type.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace aspen::linalg {

// What is multiplied: shapes are [G,M,K] and [G,K,N] (G = 1 for the 2-D forms, whose shapes
// may be given 2-D).
struct MatMulParams {
  Type inputType = FLOAT;
  Type outputType = FLOAT;
  std::vector<std::size_t> aShape;
  std::vector<std::size_t> bShape;
  friend ASPEN_API bool operator<(const MatMulParams &a, const MatMulParams &b);
  friend ASPEN_API bool operator==(const MatMulParams &a, const MatMulParams &b);
  friend bool operator!=(const MatMulParams &a, const MatMulParams &b) { return !(a == b); }
};

struct MatMulSplit {
  std::size_t groups = 1, m = 1, k = 1, n = 1;
  std::size_t product() const { return groups * m * k * n; }
  friend bool operator==(const MatMulSplit &a, const MatMulSplit &b) {
    return a.groups == b.groups && a.m == b.m && a.k == b.k && a.n == b.n;
  }
  friend bool operator!=(const MatMulSplit &a, const MatMulSplit &b) { return !(a == b); }
};

enum class MatMulMethod { Vertices, Library };
ASPEN_API const char *toString(MatMulMethod method); // "vertices", "library"

struct ASPEN_API MatMulPlan {
  MatMulMethod method = MatMulMethod::Vertices;
  // Normalised to 3-D: G, M, K, N.
  std::size_t G = 1, M = 1, K = 1, N = 1;
  Type inputType = FLOAT, outputType = FLOAT, partialsType = FLOAT;
  MatMulSplit partition; // over tiles
  MatMulSplit serial;    // steps one after another (serial.groups is always 1)

  // Derived by the cost model.
  std::size_t tilesUsed = 0;
  std::uint64_t maxTileBytes = 0;   // largest working set of one tile in one serial step
  double meanTileBytes = 0;         // over the tiles used
  std::uint64_t exchangeBytes = 0;  // bytes moved between tiles, all steps
  std::uint64_t estimatedCycles = 0;

  std::size_t serialSteps() const { return serial.m * serial.k * serial.n; }
  std::string toString() const; // a few aligned lines
  std::string toJson() const;
  std::string constraintsJson() const; // method, partition, serial and partialsType only
  // Every member (spelled out so that C++17 code can include this header).
  friend bool operator==(const MatMulPlan &a, const MatMulPlan &b) {
    return a.method == b.method && a.G == b.G && a.M == b.M && a.K == b.K && a.N == b.N && a.inputType == b.inputType &&
           a.outputType == b.outputType && a.partialsType == b.partialsType &&
           a.partition == b.partition && a.serial == b.serial && a.tilesUsed == b.tilesUsed &&
           a.maxTileBytes == b.maxTileBytes && a.meanTileBytes == b.meanTileBytes &&
           a.exchangeBytes == b.exchangeBytes && a.estimatedCycles == b.estimatedCycles;
  }
  friend bool operator!=(const MatMulPlan &a, const MatMulPlan &b) { return !(a == b); }
};

// Plans kept by (target, params, options); safe to share between threads.
class ASPEN_API PlanningCache {
public:
  PlanningCache();
  ~PlanningCache();
  PlanningCache(const PlanningCache &) = delete;
  PlanningCache &operator=(const PlanningCache &) = delete;
  std::size_t size() const;
  void clear();

  struct Impl;
  Impl &impl() { return *impl_; }

private:
  std::unique_ptr<Impl> impl_;
};

// The plan for `params` on `target`, reading the matmul options (see MatMul.hpp). Raises
// shape_error / type_error for bad parameters and invalid_option for bad options or
// impossible constraints.
ASPEN_API MatMulPlan planMatMul(const Target &target, const MatMulParams &params,
                                const OptionFlags &options = {}, PlanningCache *cache = nullptr);

} // namespace aspen::linalg
