#include "CompileReport.hpp"

#include <algorithm>

namespace aspen::detail {

namespace {

bool isControl(StepKind kind) { return stepKindInfo(kind).children != StepChildren::None; }

// Numbers the leaves of one program as Liveness.cpp's Unroller does: steps in run order with
// calls inlined (a call is a Sequence whose one child is the function's body, so walking into
// it inlines it), every child of If/Switch one after the other, loop bodies once, and a control
// step without children one position of its own.
class RunOrderWalk {
public:
  explicit RunOrderWalk(const CompiledGraph &graph) : graph_(graph) {}

  CompileReport::RunOrder operator()(std::uint32_t root) {
    add(root);
    return std::move(order_);
  }

private:
  // "<kind> '<name>'", or "<kind> #<step index>" for a step without a name (copies).
  void leaf(std::uint32_t index, const Step &step) {
    if (order_.positions.size() == CompileReport::kMaxPositions) {
      order_.truncated = true;
      return;
    }
    order_.positions.push_back(std::string(stepKindName(step.kind)) +
                               (step.name.empty() ? " #" + std::to_string(index)
                                                  : " '" + step.name + "'"));
  }

  void add(std::uint32_t index) {
    if (order_.truncated)
      return;
    const Step &step = graph_.steps[index];
    if (!isControl(step.kind) || step.children.empty())
      return leaf(index, step);
    // A program that calls itself is never unrolled by liveness (its variables are always
    // live); its positions stop at the recursion.
    if (std::find(active_.begin(), active_.end(), index) != active_.end()) {
      order_.truncated = true;
      return;
    }
    active_.push_back(index);
    for (std::uint32_t child : step.children)
      add(child);
    active_.pop_back();
  }

  const CompiledGraph &graph_;
  CompileReport::RunOrder order_;
  std::vector<std::uint32_t> active_;
};

} // namespace

std::vector<CompileReport::RunOrder> describeRunOrder(const CompiledGraph &graph) {
  std::vector<CompileReport::RunOrder> result;
  for (std::uint32_t root : graph.programs)
    result.push_back(RunOrderWalk(graph)(root));
  return result;
}

double estimateMoveSeconds(const Target &target, std::uint64_t bytes) {
  if (bytes == 0)
    return 0;
  const double bandwidth = target.getGpuProperties().memoryBandwidthBytesPerSecond;
  if (target.isGpu() && bandwidth > 0)
    return 2.0 * double(bytes) / bandwidth;
  return double(bytes) / (double(target.getExchangeBytesPerCycle()) * target.getNumTiles() *
                          target.getTileClockFrequency());
}

namespace {

// Bytes a tile moves each second in the model of a vertex without an estimate.
double tileBytesPerSecond(const Target &target) {
  const double bandwidth = target.getGpuProperties().memoryBandwidthBytesPerSecond;
  if (target.isGpu() && bandwidth > 0)
    return bandwidth / target.getNumTiles();
  return double(target.getDataPathWidth()) / 8 * target.getNumWorkerContexts() *
         target.getTileClockFrequency();
}

// The bytes of the tensors a vertex's fields connect.
std::uint64_t connectedBytes(const VertexRecord &vertex) {
  std::uint64_t bytes = 0;
  for (const FieldBinding &field : vertex.fields) {
    if (field.tensor.valid())
      bytes += field.tensor.numElements() * field.tensor.elementType().size();
    for (const Tensor &edge : field.edges)
      if (edge.valid())
        bytes += edge.numElements() * edge.elementType().size();
  }
  return bytes;
}

} // namespace

void estimateSteps(const GraphState &state, const CompiledGraph &graph, CompileReport &report) {
  const Target &target = state.target;
  const double clock = target.getTileClockFrequency();
  const double launch = target.isGpu() ? kGpuLaunchSeconds : 0.0;
  const double tileRate = tileBytesPerSecond(target);
  report.computeSetSeconds.clear();
  for (const CompiledComputeSet &cs : graph.computeSets) {
    double slowestUnestimated = 0;
    for (const TileGroup &tile : cs.tiles) {
      std::uint64_t bytes = 0;
      for (std::uint32_t i = tile.begin; i < tile.end; ++i) {
        const VertexRecord &vertex = state.vertices[cs.vertices[i].id];
        if (!vertex.hasPerfEstimate && !state.perfEstimators.count(vertex.type->name))
          bytes += connectedBytes(vertex);
      }
      slowestUnestimated = std::max(slowestUnestimated, double(bytes) / tileRate);
    }
    report.computeSetSeconds.push_back(double(cs.estimatedCycles) / clock + slowestUnestimated +
                                       launch);
  }
  report.kernelSeconds.clear();
  for (const CompiledKernel &k : graph.kernels) {
    if (k.kind == KernelKind::Block) {
      report.kernelSeconds.push_back(report.computeSetSeconds.at(k.launch.computeSet));
      continue;
    }
    const Type inputType = k.isConv() ? k.conv.inputType : k.gemm.inputType;
    const double macsPerSecond =
        double(target.getMatMulMacsPerCycle(inputType, !k.isConv() && k.gemm.allowTF32)) *
        target.getNumTiles() * clock;
    // A convolution also writes and reads its lowered input (im2col) once.
    const std::uint64_t lowered =
        k.isConv() ? k.conv.geometry.batch * k.conv.geometry.groups * k.conv.geometry.inChans *
                         k.conv.taps() * k.conv.outputElements() * 4
                   : 0;
    report.kernelSeconds.push_back(double(k.flops()) / (2.0 * macsPerSecond) +
                                   (lowered ? estimateMoveSeconds(target, lowered) : 0.0) +
                                   launch);
  }
  report.copySeconds.clear();
  for (const CopyPlan &copy : graph.copies)
    report.copySeconds.push_back(estimateMoveSeconds(target, copy.src.bytes()) + launch);
}

} // namespace aspen::detail
