#include "ProgramNode.hpp"
#include "CollectiveSteps.hpp"
#include "GraphState.hpp"
#include "TensorRegions.hpp"
#include "support/ConvTables.hpp"

#include <aspen/BlockCodelets.hpp>
#include <aspen/Collectives.hpp>
#include <aspen/Error.hpp>
#include <aspen/Kernels.hpp>
#include <aspen/Program.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>

namespace aspen {

namespace detail {
const char *programKindName(ProgramKind kind) {
  switch (kind) {
#define ASPEN_PROGRAM_NAME_CASE(kind, name)                                                       \
  case ProgramKind::kind:                                                                         \
    return name;
    ASPEN_PROGRAM_KINDS(ASPEN_PROGRAM_NAME_CASE)
#undef ASPEN_PROGRAM_NAME_CASE
  }
  return "Program";
}
} // namespace detail

namespace program {

using detail::ProgramKind;
using detail::ProgramNode;

namespace {

std::shared_ptr<ProgramNode> makeNode(ProgramKind kind, const DebugContext &debug) {
  auto node = std::make_shared<ProgramNode>();
  node->kind = kind;
  node->debugName = debug.getPathName();
  return node;
}

void requireValid(const Tensor &t, const char *kindName, const char *role,
                  const DebugContext &debug) {
  if (!t.valid())
    throw control_program_error(fmt::format("{} '{}': the {} tensor is invalid (default-constructed)",
                                            kindName, debug.getPathName(), role));
}

void requireValid(const Tensor &t, ProgramKind kind, const char *role, const DebugContext &debug) {
  requireValid(t, detail::programKindName(kind), role, debug);
}

void requireScalar(const Tensor &t, ProgramKind kind, const char *role, const DebugContext &debug) {
  requireValid(t, kind, role, debug);
  if (t.numElements() != 1)
    throw control_program_error(fmt::format(
        "{} '{}': the {} must be a scalar (one element) but tensor {} has shape {}",
        detail::programKindName(kind), debug.getPathName(), role, t.getVarStr(),
        t.shapeToString()));
}

void requireStream(const DataStream &s, bool hostToDevice, const DebugContext &debug) {
  if (!s.graph() || s.getId() >= s.graph()->streams.size())
    throw control_program_error(
        fmt::format("Copy '{}': the DataStream is invalid (default-constructed)", debug.getPathName()));
  const auto &record = s.graph()->streams[s.getId()];
  if (record.hostToDevice != hostToDevice)
    throw control_program_error(fmt::format(
        "Copy '{}': stream '{}' is a {} stream and cannot be a copy {}", debug.getPathName(),
        record.handle, record.hostToDevice ? "host-to-device" : "device-to-host",
        hostToDevice ? "source" : "destination"));
}

} // namespace

Program::Program() : node_(std::make_shared<ProgramNode>()) {}
Program::Program(std::shared_ptr<ProgramNode> node) : node_(std::move(node)) {}
Program::Program(const Program &other) : node_(std::make_shared<ProgramNode>(*other.node_)) {}
Program &Program::operator=(const Program &other) {
  if (this != &other)
    node_ = std::make_shared<ProgramNode>(*other.node_);
  return *this;
}
Program::~Program() = default;

bool Program::isEmpty() const {
  return node_->kind == ProgramKind::Empty ||
         (node_->kind == ProgramKind::Sequence &&
          std::all_of(node_->children.begin(), node_->children.end(),
                      [](const Program &p) { return p.isEmpty(); }));
}

Sequence::Sequence(const DebugContext &debug) : Program(makeNode(ProgramKind::Sequence, debug)) {}

Sequence::Sequence(std::initializer_list<Program> programs, const DebugContext &debug)
    : Sequence(debug) {
  for (const Program &p : programs)
    add(p);
}

void Sequence::add(const Program &p) { mutableNode().children.push_back(p); }

Execute::Execute(ComputeSet cs, const DebugContext &debug)
    : Program(makeNode(ProgramKind::Execute, debug)) {
  if (!cs.graph())
    throw control_program_error(fmt::format(
        "Execute '{}': the ComputeSet is invalid (default-constructed)", debug.getPathName()));
  mutableNode().graph = cs.graph();
  mutableNode().id = cs.getId();
}

Copy::Copy(const Tensor &src, const Tensor &dst, bool, const DebugContext &debug)
    : Program(makeNode(ProgramKind::Copy, debug)) {
  requireValid(src, ProgramKind::Copy, "source", debug);
  requireValid(dst, ProgramKind::Copy, "destination", debug);
  if (src.elementType() != dst.elementType())
    throw type_error(fmt::format("Copy '{}': source {} is {} but destination {} is {}",
                                 debug.getPathName(), src.getVarStr(),
                                 src.elementType().toString(), dst.getVarStr(),
                                 dst.elementType().toString()));
  if (src.numElements() != dst.numElements())
    throw shape_error(fmt::format(
        "Copy '{}': source {} has {} elements {} but destination {} has {} elements {}",
        debug.getPathName(), src.getVarStr(), src.numElements(), src.shapeToString(),
        dst.getVarStr(), dst.numElements(), dst.shapeToString()));
  mutableNode().tensor = src;
  mutableNode().dst = dst;
}

namespace {
// A stream copy's tensor (`role`: "destination" or "source") must match what the stream
// carries.
void requireStreamTensor(const DataStream &stream, const Tensor &t, bool hostToDevice,
                         const char *role, const DebugContext &debug) {
  const ProgramKind kind = hostToDevice ? ProgramKind::StreamToTensor : ProgramKind::TensorToStream;
  requireStream(stream, hostToDevice, debug);
  requireValid(t, kind, role, debug);
  const auto &record = stream.graph()->streams[stream.getId()];
  if (record.type != t.elementType() || record.numElements != t.numElements())
    throw shape_error(fmt::format(
        "Copy '{}': stream '{}' carries {} {} elements but {} {} has {} {} elements",
        debug.getPathName(), record.handle, record.numElements, record.type.toString(), role,
        t.getVarStr(), t.numElements(), t.elementType().toString()));
}
} // namespace

Copy::Copy(const DataStream &stream, const Tensor &dst, bool, const DebugContext &debug)
    : Program(makeNode(ProgramKind::StreamToTensor, debug)) {
  requireStreamTensor(stream, dst, true, "destination", debug);
  mutableNode().graph = stream.graph();
  mutableNode().id = stream.getId();
  mutableNode().dst = dst;
}

Copy::Copy(const Tensor &src, const DataStream &stream, bool, const DebugContext &debug)
    : Program(makeNode(ProgramKind::TensorToStream, debug)) {
  requireStreamTensor(stream, src, false, "source", debug);
  mutableNode().graph = stream.graph();
  mutableNode().id = stream.getId();
  mutableNode().tensor = src;
}

Cached::Cached(const Program &body, const DebugContext &debug)
    : Program(makeNode(ProgramKind::Cached, debug)) {
  // Copies of a program copy its nodes, id included: the id says which copies are one cache.
  static std::atomic<unsigned> nextId{0};
  mutableNode().id = nextId.fetch_add(1, std::memory_order_relaxed);
  mutableNode().children = {body};
}

Repeat::Repeat(unsigned count, const Program &body, const DebugContext &debug)
    : Program(makeNode(ProgramKind::Repeat, debug)) {
  mutableNode().count = count;
  mutableNode().children = {body};
}

namespace {
std::shared_ptr<ProgramNode> makeRepeatWhile(ProgramKind kind, const Program &cond,
                                             const Tensor &predicate, const Program &body,
                                             const DebugContext &debug) {
  requireScalar(predicate, kind, "predicate", debug);
  auto node = makeNode(kind, debug);
  node->tensor = predicate;
  node->children = {cond, body};
  return node;
}
} // namespace

RepeatWhileTrue::RepeatWhileTrue(const Program &cond, const Tensor &predicate,
                                 const Program &body, const DebugContext &debug)
    : Program(makeRepeatWhile(ProgramKind::RepeatWhileTrue, cond, predicate, body, debug)) {}

RepeatWhileFalse::RepeatWhileFalse(const Program &cond, const Tensor &predicate,
                                   const Program &body, const DebugContext &debug)
    : Program(makeRepeatWhile(ProgramKind::RepeatWhileFalse, cond, predicate, body, debug)) {}

If::If(const Tensor &predicate, const Program &trueBody, const Program &falseBody,
       const DebugContext &debug)
    : Program(makeNode(ProgramKind::If, debug)) {
  requireScalar(predicate, ProgramKind::If, "predicate", debug);
  mutableNode().tensor = predicate;
  mutableNode().children = {trueBody, falseBody};
}

Switch::Switch(const Tensor &control, const DebugContext &debug)
    : Switch(control, std::vector<CaseBody>{}, Program(), debug) {}

Switch::Switch(const Tensor &control, const Program &defaultBody, const DebugContext &debug)
    : Switch(control, std::vector<CaseBody>{}, defaultBody, debug) {}

Switch::Switch(const Tensor &control, const std::vector<CaseBody> &cases,
               const DebugContext &debug)
    : Switch(control, cases, Program(), debug) {}

Switch::Switch(const Tensor &control, const std::vector<CaseBody> &cases,
               const Program &defaultBody, const DebugContext &debug)
    : Program(makeNode(ProgramKind::Switch, debug)) {
  requireScalar(control, ProgramKind::Switch, "control", debug);
  if (!control.elementType().isIntegral() || control.elementType() == BOOL)
    throw control_program_error(fmt::format(
        "Switch '{}': the control tensor {} must have an integral type, not {}",
        debug.getPathName(), control.getVarStr(), control.elementType().toString()));
  mutableNode().tensor = control;
  mutableNode().children = {defaultBody};
  for (const auto &[value, body] : cases)
    add(value, body);
}

Switch &Switch::add(std::int32_t value, const Program &body) {
  auto &n = mutableNode();
  for (std::int32_t existing : n.caseValues)
    if (existing == value)
      throw control_program_error(
          fmt::format("Switch '{}': case {} already has a body", n.debugName, value));
  n.caseValues.push_back(value);
  n.children.push_back(body);
  return *this;
}

Call::Call(Function f, const DebugContext &debug) : Program(makeNode(ProgramKind::Call, debug)) {
  if (!f.graph() || f.getId() >= f.graph()->functions.size())
    throw control_program_error(
        fmt::format("Call '{}': the Function is invalid (default-constructed)", debug.getPathName()));
  mutableNode().graph = f.graph();
  mutableNode().id = f.getId();
}

WriteUndef::WriteUndef(const Tensor &t, const DebugContext &debug)
    : Program(makeNode(ProgramKind::WriteUndef, debug)) {
  requireValid(t, ProgramKind::WriteUndef, "", debug);
  mutableNode().tensor = t;
}

PrintTensor::PrintTensor(const Tensor &t, const DebugContext &debug)
    : PrintTensor(debug.getPathName(), t, debug) {}

PrintTensor::PrintTensor(StringRef title, const Tensor &t, const DebugContext &debug)
    : Program(makeNode(ProgramKind::PrintTensor, debug)) {
  requireValid(t, ProgramKind::PrintTensor, "printed", debug);
  mutableNode().tensor = t;
  mutableNode().title = std::string(title);
}

Sync::Sync(SyncType, const DebugContext &debug) : Program(makeNode(ProgramKind::Sync, debug)) {}

AbortOnCondition::AbortOnCondition(const Tensor &predicate, const DebugContext &debug)
    : Program(makeNode(ProgramKind::AbortOnCondition, debug)) {
  requireScalar(predicate, ProgramKind::AbortOnCondition, "predicate", debug);
  mutableNode().tensor = predicate;
}

namespace {
std::string gemmOperand(const char *role, const Tensor &t) {
  return fmt::format("{} {} {} of type {}", role, t.getDebugStr(), t.shapeToString(),
                     t.elementType().toString());
}
} // namespace

Gemm::Gemm(const Tensor &a, const Tensor &b, const Tensor &c, const GemmOptions &options,
           const DebugContext &debug)
    : Program(makeNode(ProgramKind::Kernel, debug)) {
  const char *kernel = detail::kernelKindName(detail::KernelKind::Gemm);
  requireValid(a, kernel, "a", debug);
  requireValid(b, kernel, "b", debug);
  requireValid(c, kernel, "c", debug);
  const std::string what = fmt::format("Gemm '{}': {} . {} -> {}", debug.getPathName(),
                                       gemmOperand("a", a), gemmOperand("b", b),
                                       gemmOperand("c", c));
  const unsigned rank = a.rank();
  if ((rank != 2 && rank != 3) || b.rank() != rank || c.rank() != rank)
    throw shape_error(what + ": a, b and c must all have rank 2 ([M,K] . [K,N] -> [M,N]) or all "
                             "rank 3 ([G,M,K] . [G,K,N] -> [G,M,N])");
  const std::size_t off = rank - 2;
  if (off && (b.dim(0) != a.dim(0) || c.dim(0) != a.dim(0)))
    throw shape_error(what + ": the group counts (dimension 0) differ");
  if (a.dim(off + 1) != b.dim(off))
    throw shape_error(what + ": the inner dimensions differ (a's columns against b's rows)");
  if (c.dim(off) != a.dim(off) || c.dim(off + 1) != b.dim(off + 1))
    throw shape_error(what + ": c must have a's rows and b's columns");
  const Type in = a.elementType(), out = c.elementType();
  if ((in != FLOAT && in != HALF) || b.elementType() != in)
    throw type_error(what + ": a and b must both be float or both be half");
  if (out != FLOAT && out != HALF)
    throw type_error(what + ": c must be float or half");
  if (options.scale.valid() &&
      (options.scale.numElements() != 1 || options.scale.elementType() != FLOAT))
    throw type_error(fmt::format("{}: the scale {} {} of type {} must be one float element", what,
                                 options.scale.getDebugStr(), options.scale.shapeToString(),
                                 options.scale.elementType().toString()));
  ProgramNode &node = mutableNode();
  node.kernel = detail::KernelKind::Gemm;
  node.operands.resize(detail::GemmOperand::count);
  node.operands[detail::GemmOperand::a] = a;
  node.operands[detail::GemmOperand::b] = b;
  node.operands[detail::GemmOperand::c] = c;
  node.operands[detail::GemmOperand::scale] = options.scale;
  node.flags = (options.accumulate ? detail::kKernelAccumulate : 0) |
               (options.allowTF32 ? detail::kGemmAllowTF32 : 0);
}

namespace {

// A collective step's node (CollectiveSteps.hpp), once its tensors are known to be valid.
void collectiveNode(ProgramNode &node, const detail::CollectiveStep &step,
                    const DebugContext &debug) {
  const char *kernel = detail::kernelKindName(step.kind);
  requireValid(step.data, kernel, "data", debug);
  requireValid(step.result, kernel, "result", debug);
  detail::makeCollectiveNode(node, step, debug);
}

} // namespace

using collectives::CollectiveOperator;
using collectives::CommGroup;
using detail::KernelKind;

CrossReplicaAllReduce::CrossReplicaAllReduce(const Tensor &data, const Tensor &result,
                                             CollectiveOperator op, const DebugContext &debug)
    : CrossReplicaAllReduce(data, result, op, CommGroup(), debug) {}
CrossReplicaAllReduce::CrossReplicaAllReduce(const Tensor &data, const Tensor &result,
                                             CollectiveOperator op, const CommGroup &group,
                                             const DebugContext &debug)
    : Program(makeNode(ProgramKind::Kernel, debug)) {
  collectiveNode(mutableNode(), {KernelKind::AllReduce, data, result, op, group}, debug);
}

CrossReplicaReduceScatter::CrossReplicaReduceScatter(const Tensor &data, const Tensor &result,
                                                     CollectiveOperator op,
                                                     const DebugContext &debug)
    : CrossReplicaReduceScatter(data, result, op, CommGroup(), debug) {}
CrossReplicaReduceScatter::CrossReplicaReduceScatter(const Tensor &data, const Tensor &result,
                                                     CollectiveOperator op,
                                                     const CommGroup &group,
                                                     const DebugContext &debug)
    : Program(makeNode(ProgramKind::Kernel, debug)) {
  collectiveNode(mutableNode(), {KernelKind::ReduceScatter, data, result, op, group}, debug);
}

CrossReplicaAllGather::CrossReplicaAllGather(const Tensor &data, const Tensor &result,
                                             const DebugContext &debug)
    : CrossReplicaAllGather(data, result, CommGroup(), debug) {}
CrossReplicaAllGather::CrossReplicaAllGather(const Tensor &data, const Tensor &result,
                                             const CommGroup &group, const DebugContext &debug)
    : Program(makeNode(ProgramKind::Kernel, debug)) {
  collectiveNode(mutableNode(),
                 {KernelKind::AllGather, data, result, CollectiveOperator::ADD, group}, debug);
}

CrossReplicaAllToAll::CrossReplicaAllToAll(const Tensor &data, const Tensor &result,
                                           const DebugContext &debug)
    : CrossReplicaAllToAll(data, result, CommGroup(), debug) {}
CrossReplicaAllToAll::CrossReplicaAllToAll(const Tensor &data, const Tensor &result,
                                           const CommGroup &group, const DebugContext &debug)
    : Program(makeNode(ProgramKind::Kernel, debug)) {
  collectiveNode(mutableNode(),
                 {KernelKind::AllToAll, data, result, CollectiveOperator::ADD, group}, debug);
}

CrossReplicaBroadcast::CrossReplicaBroadcast(const Tensor &data, const Tensor &result,
                                             unsigned rootReplica, const DebugContext &debug)
    : CrossReplicaBroadcast(data, result, rootReplica, CommGroup(), debug) {}
CrossReplicaBroadcast::CrossReplicaBroadcast(const Tensor &data, const Tensor &result,
                                             unsigned rootReplica, const CommGroup &group,
                                             const DebugContext &debug)
    : Program(makeNode(ProgramKind::Kernel, debug)) {
  collectiveNode(mutableNode(),
                 {KernelKind::Broadcast, data, result, CollectiveOperator::ADD, group, rootReplica},
                 debug);
}

CrossReplicaCopy::CrossReplicaCopy(const Tensor &src, const Tensor &dst,
                                   const std::map<unsigned, unsigned> &replicaMap,
                                   const DebugContext &debug)
    : Program(makeNode(ProgramKind::Kernel, debug)) {
  collectiveNode(mutableNode(),
                 {KernelKind::CrossReplicaCopy, src, dst, CollectiveOperator::ADD, CommGroup(), 0,
                  &replicaMap},
                 debug);
}

namespace {

// Checks a convolution call's geometry against itself and its operands' shapes and types.
// `roles` name the operands in table order; `shapes` are what the geometry gives them.
void checkConvCall(const char *kernel, const DebugContext &debug, const ConvGeometry &geometry,
                   const std::vector<std::pair<const char *, const Tensor *>> &operands,
                   const std::vector<std::vector<std::size_t>> &shapes) {
  const std::string what = fmt::format("{} '{}'", kernel, debug.getPathName());
  if (const std::optional<detail::ConvGeometryProblem> problem =
          detail::convGeometryProblem(geometry)) {
    if (problem->index)
      throw index_error(what + ": " + problem->what);
    throw shape_error(what + ": " + problem->what);
  }
  for (std::size_t i = 0; i < operands.size(); ++i) {
    const auto &[role, t] = operands[i];
    requireValid(*t, kernel, role, debug);
    if (t->shape() != shapes[i])
      throw shape_error(fmt::format("{}: {} {} has shape {}; the geometry gives [{}]", what, role,
                                    t->getDebugStr(), t->shapeToString(),
                                    fmt::join(shapes[i], ",")));
    if (t->elementType() != FLOAT && t->elementType() != HALF)
      throw type_error(fmt::format("{}: {} {} is {}; it must be float or half", what, role,
                                   t->getDebugStr(), t->elementType().toString()));
  }
}

std::vector<std::size_t> activationShape(const ConvGeometry &g, std::uint64_t channels,
                                         const std::vector<std::uint64_t> &field) {
  std::vector<std::size_t> shape = {g.batch, g.groups * channels};
  shape.insert(shape.end(), field.begin(), field.end());
  return shape;
}
std::vector<std::size_t> kernelMatrixShape(const ConvGeometry &g) {
  std::uint64_t taps = 1;
  for (std::uint64_t t : g.taps)
    taps *= t;
  return {g.groups, g.outChans, g.inChans * taps};
}

} // namespace

ConvForward::ConvForward(const Tensor &in, const Tensor &weights, const Tensor &out,
                         const ConvGeometry &geometry, const DebugContext &debug)
    : Program(makeNode(ProgramKind::Kernel, debug)) {
  const char *kernel = detail::kernelKindName(detail::KernelKind::ConvForward);
  checkConvCall(kernel, debug, geometry, {{"in", &in}, {"weights", &weights}, {"out", &out}},
                {activationShape(geometry, geometry.inChans, geometry.inputField),
                 kernelMatrixShape(geometry),
                 activationShape(geometry, geometry.outChans, geometry.outputField)});
  if (weights.elementType() != in.elementType())
    throw type_error(fmt::format("{} '{}': in and weights must have one type", kernel,
                                 debug.getPathName()));
  ProgramNode &node = mutableNode();
  node.kernel = detail::KernelKind::ConvForward;
  node.operands = {in, weights, out};
  node.conv = geometry;
}

ConvBackwardData::ConvBackwardData(const Tensor &outGrad, const Tensor &weights,
                                   const Tensor &inGrad, const ConvGeometry &geometry,
                                   const DebugContext &debug)
    : Program(makeNode(ProgramKind::Kernel, debug)) {
  const char *kernel = detail::kernelKindName(detail::KernelKind::ConvBackwardData);
  checkConvCall(kernel, debug, geometry,
                {{"outGrad", &outGrad}, {"weights", &weights}, {"inGrad", &inGrad}},
                {activationShape(geometry, geometry.outChans, geometry.outputField),
                 kernelMatrixShape(geometry),
                 activationShape(geometry, geometry.inChans, geometry.inputField)});
  if (weights.elementType() != outGrad.elementType() ||
      inGrad.elementType() != weights.elementType())
    throw type_error(fmt::format("{} '{}': outGrad, weights and inGrad must have one type",
                                 kernel, debug.getPathName()));
  ProgramNode &node = mutableNode();
  node.kernel = detail::KernelKind::ConvBackwardData;
  node.operands = {outGrad, weights, inGrad};
  node.conv = geometry;
}

ConvBackwardFilter::ConvBackwardFilter(const Tensor &outGrad, const Tensor &in,
                                       const Tensor &weights, const ConvGeometry &geometry,
                                       const ConvBackwardFilterOptions &options,
                                       const DebugContext &debug)
    : Program(makeNode(ProgramKind::Kernel, debug)) {
  const char *kernel = detail::kernelKindName(detail::KernelKind::ConvBackwardFilter);
  checkConvCall(kernel, debug, geometry,
                {{"outGrad", &outGrad}, {"in", &in}, {"weights", &weights}},
                {activationShape(geometry, geometry.outChans, geometry.outputField),
                 activationShape(geometry, geometry.inChans, geometry.inputField),
                 kernelMatrixShape(geometry)});
  if (weights.elementType() != in.elementType() || outGrad.elementType() != in.elementType())
    throw type_error(fmt::format("{} '{}': outGrad, in and weights must have one type", kernel,
                                 debug.getPathName()));
  if (options.scale.valid() &&
      (options.scale.numElements() != 1 || options.scale.elementType() != FLOAT))
    throw type_error(fmt::format("{} '{}': the scale must be one float element", kernel,
                                 debug.getPathName()));
  ProgramNode &node = mutableNode();
  node.kernel = detail::KernelKind::ConvBackwardFilter;
  node.operands = {outGrad, in, weights, options.scale};
  node.flags = options.accumulate ? detail::kKernelAccumulate : 0;
  node.conv = geometry;
}

Launch::Launch(ComputeSet cs, const LaunchShape &shape, const DebugContext &debug)
    : Program(makeNode(ProgramKind::Launch, debug)) {
  if (!cs.graph())
    throw control_program_error(fmt::format(
        "Launch '{}': the ComputeSet is invalid (default-constructed)", debug.getPathName()));
  if (shape.blocks == 0)
    throw control_program_error(fmt::format(
        "Launch '{}' of compute set '{}': a launch needs at least one block", debug.getPathName(),
        cs.graph()->computeSets.at(cs.getId()).name));
  mutableNode().graph = cs.graph();
  mutableNode().id = cs.getId();
  mutableNode().launch = shape;
}

} // namespace program
} // namespace aspen
