// The recurrent cells' table and the forward and backward step builders (CellSteps.hpp).
#include "CellSteps.hpp"

#include "NnWork.hpp"

#include <aspen/Error.hpp>
#include <aspen/util/VertexTemplates.hpp>

#include <utility>

namespace aspen::nn::rnn::detail {

using program::Copy;
using program::Execute;
using program::Sequence;

namespace {

using L = ProductLhs;
using O = ProductOut;
using W = ProductRhs;

CellTable lstmRow() {
  CellTable t;
  t.name = "lstm";
  t.gates = 4;
  // [x_t | h] . [Wi; W] or h . W, then the cell: f, i, c~, o, c_t and h_t (m_t when projected).
  t.forward.push_back({"cell", "aspen::nn::LstmCellFwd", {L::State, W::Recurrent, 0, 4, O::New}});
  // h_t = m_t . Wp, taken into the state by the rows still running.
  t.forward.push_back({"projectedState", "aspen::nn::RnnMaskedRows",
                       {L::Scratch, W::Projection, 0, 0, O::StepOutput}, true});
  // dh summed, then dm = dh . Wp^T.
  t.backward.push_back({"projectionGrad", "aspen::nn::LstmProjectionGrad",
                        {L::Scratch, W::Projection, 0, 0, O::Scratch}, true});
  // The gate gradients, then delta . W^T (with Wi^T beside it for the step's input gradient).
  t.backward.push_back(
      {"cellGrad", "aspen::nn::LstmCellBwd", {L::DeltaX, W::Recurrent, 0, 4, O::StateGrad}});
  return t;
}

CellTable gruResetBeforeRow() {
  CellTable t;
  t.name = "gru";
  t.gates = 3;
  // h . [W_r | W_u], then r, u and r*h; (r*h) . W_c, then c and h_t.
  t.forward.push_back({"gates", "aspen::nn::GruCellA", {L::State, W::Recurrent, 0, 2, O::New}});
  t.forward.push_back({"state", "aspen::nn::GruCellB", {L::Scratch, W::Recurrent, 2, 3, O::New}});
  // dc, du and (c's part of) dr; d(r*h) = dc . W_c^T; dr; dhMM = [dr | du] . [W_r | W_u]^T.
  t.backward.push_back({"gradA", "aspen::nn::GruBwdA", {L::DeltaX, W::Recurrent, 2, 3, O::New}});
  t.backward.push_back(
      {"gradB", "aspen::nn::GruBwdB", {L::DeltaX, W::Recurrent, 0, 2, O::StateGrad}});
  return t;
}

CellTable gruResetAfterRow() {
  CellTable t;
  t.name = "gru";
  t.gates = 3;
  // h . W, then r, u, n = act(x W_c + b + r * (h W_c + b_h)) and h_t.
  t.forward.push_back(
      {"cell", "aspen::nn::GruCellResetAfter", {L::State, W::Recurrent, 0, 3, O::New}});
  // The input's and the recurrent product's gate gradients, then dhMM = dH . W^T.
  t.backward.push_back(
      {"grad", "aspen::nn::GruBwdResetAfter", {L::DeltaH, W::Recurrent, 0, 3, O::StateGrad}});
  return t;
}

CellTable vanillaRow() {
  CellTable t;
  t.name = "rnn";
  t.gates = 1;
  // h . Wfb, then h_t = nl(. + x_t + b).
  t.forward.push_back({"cell", "aspen::nn::RnnCellFwd", {L::State, W::Recurrent, 0, 1, O::New}});
  // delta_t = nl'(y_t) * (dy_t + dhMM), then dhMM = delta_t . Wfb^T.
  t.backward.push_back(
      {"grad", "aspen::nn::RnnCellBwd", {L::DeltaX, W::Recurrent, 0, 1, O::StateGrad}});
  return t;
}

// The gates [first, end) of m's dimension `dim` (gates blocks of equal width).
Tensor gateBlock(const Tensor &m, unsigned dim, unsigned gates, const CellProduct &p) {
  const std::size_t width = m.dim(dim) / gates;
  if (p.firstGate == 0 && p.endGate == gates)
    return m;
  return m.slice(p.firstGate * width, p.endGate * width, dim);
}

// The phase's product into `out` (invalid: a new tensor, returned).
Tensor multiply(Graph &g, const Tensor &lhs, const Tensor &rhs, const Tensor &out, Sequence &step,
                const DebugContext &dbg, const StepProducts &p) {
  if (!out.valid())
    return linalg::matMul(g, lhs, rhs, step, dbg, p.mmOptions, p.cache);
  linalg::matMulWithOutput(g, lhs, rhs, out, step, dbg, p.mmOptions, p.cache);
  return out;
}

// Phase i's cells: one vertex per tile owning rows of cell.rowsOf(i).
void addCells(Graph &g, const CellPhase &phase, unsigned i, Type type, const CellSteps &cell,
              const StepTensors &s, Sequence &step, const DebugContext &dbg) {
  ComputeSet cs = g.addComputeSet({dbg, phase.name});
  nn::work::addRowVertices(g, cs, util::templateVertex(phase.vertex, type),
                           nn::work::rowsByTile(g, cell.rowsOf(i, s)),
                           [&](VertexRef v, const std::vector<Interval> &rows) {
                             cell.connect(i, g, v, rows, s);
                           });
  step.add(Execute(cs));
}

// Forward phase i's product.
void forwardProduct(Graph &g, const CellTable &table, unsigned i, Type type, StepTensors &s,
                    const StepProducts &p, Sequence &step, const DebugContext &dbg) {
  const CellProduct &prod = table.forward[i].product;
  if (prod.rhs == W::Projection) {
    s.product[i] = multiply(g, s.scratch.at(i - 1), p.weights.projection,
                            prod.out == O::StepOutput ? s.out : Tensor(), step,
                            {dbg, table.forward[i].name}, p);
    return;
  }
  const Tensor w = gateBlock(p.weights.recurrent, 1, table.gates, prod);
  Tensor lhs = prod.lhs == L::State ? s.state : s.scratch.at(i - 1);
  Tensor rhs = w;
  if (prod.lhs == L::State && s.input.valid()) { // [x_t | h] . [Wi; W]
    const std::size_t B = s.state.dim(0), I = s.input.dim(1), R = s.state.dim(1);
    lhs = addStep(g, type, B, I + R, {dbg, "xh"});
    step.add(Copy(s.input, lhs.slice(0, I, 1)));
    step.add(Copy(s.state, lhs.slice(I, I + R, 1)));
    rhs = concat(gateBlock(p.weights.input, 1, table.gates, prod), w, 0);
  }
  s.product[i] = multiply(g, lhs, rhs, prod.out == O::StepOutput ? s.out : Tensor(), step,
                          {dbg, table.forward[i].name}, p);
}

// Backward phase i's product.
void backwardProduct(Graph &g, const CellTable &table, unsigned i, StepTensors &s,
                     const StepProducts &p, Sequence &step, const DebugContext &dbg) {
  const CellProduct &prod = table.backward[i].product;
  Tensor out;
  if (prod.out == O::StateGrad)
    out = s.inputGrad.valid() && !p.weights.input.valid() ? concat(s.inputGrad, s.stateGrad, 1)
                                                          : s.stateGrad;
  else if (prod.out == O::Scratch)
    out = s.scratch.at(i + 1);
  if (prod.rhs == W::Projection) {
    s.product[i] = multiply(g, s.scratch.at(i), p.weights.projection, out, step,
                            {dbg, table.backward[i].name}, p);
    return;
  }
  const Tensor &delta = prod.lhs == L::DeltaH ? s.deltaH : s.deltaX;
  s.product[i] = multiply(g, gateBlock(delta, 1, table.gates, prod),
                          gateBlock(p.weights.recurrent, 0, table.gates, prod), out, step,
                          {dbg, table.backward[i].name}, p);
}

} // namespace

const CellTable &cellTable(CellKind kind) {
  static const CellTable rows[] = {lstmRow(), gruResetBeforeRow(), gruResetAfterRow(),
                                   vanillaRow()};
  return rows[static_cast<unsigned>(kind)];
}

Tensor CellSteps::rowsOf(unsigned, const StepTensors &s) const { return s.state; }

void CellSteps::finish(Graph &, const StepTensors &, Sequence &, const DebugContext &) const {}

namespace {

// The loop body of one step: each of the table's phases (forward: its product, then its cells;
// backward: its cells, then its product), then cell.finish.
LoopBodyType stepBody(const CellTable &table, bool backward, Type type, StepProducts products,
                      const CellSteps &cell) {
  return [&table, backward, type, products, &cell](Graph &g, const TimeStepState &,
                                                   const RnnBatchwiseFlags &flags,
                                                   std::vector<Tensor> &state,
                                                   const RnnSlice &slice, std::vector<Tensor> &,
                                                   Sequence *, const DebugContext &dbg) {
    const std::vector<CellPhase> &phases = backward ? table.backward : table.forward;
    Sequence step;
    StepTensors s = cell.begin(g, state, slice, flags, dbg);
    s.product.resize(phases.size());
    s.scratch.resize(phases.size());
    for (unsigned i = 0; i < phases.size(); ++i) {
      if (phases[i].projectedOnly && !cell.projected())
        continue;
      if (!backward)
        forwardProduct(g, table, i, type, s, products, step, dbg);
      addCells(g, phases[i], i, type, cell, s, step, dbg);
      if (backward)
        backwardProduct(g, table, i, s, products, step, dbg);
    }
    // A step whose input gradient is its own product (the recurrent matrix does not hold Wi^T).
    if (backward && s.inputGrad.valid() && products.weights.input.valid())
      multiply(g, s.deltaX, products.weights.input, s.inputGrad, step, {dbg, "inputGrad"},
               products);
    cell.finish(g, s, step, dbg);
    return step;
  };
}

} // namespace

LoopBodyType forwardStepBody(const CellTable &table, Type type, StepProducts products,
                             const CellSteps &cell) {
  return stepBody(table, false, type, std::move(products), cell);
}

LoopBodyType backwardStepBody(const CellTable &table, Type type, StepProducts products,
                              const CellSteps &cell) {
  return stepBody(table, true, type, std::move(products), cell);
}

std::vector<Tensor> forwardCellLoop(Graph &graph, const CellTable &table, LoopSpec spec,
                                    const StepProducts &products, const CellSteps &cell,
                                    Sequence &prog, const DebugContext &debug) {
  spec.reverse = false;
  spec.loopFn = forwardStepBody(table, spec.params.dataType, products, cell);
  return runLoop(graph, spec, prog, debug);
}

std::vector<Tensor> backwardCellLoop(Graph &graph, const CellTable &table, LoopSpec spec,
                                     const StepProducts &products, const CellSteps &cell,
                                     Sequence &prog, const DebugContext &debug) {
  spec.reverse = true;
  spec.loopFn = backwardStepBody(table, spec.params.dataType, products, cell);
  return runLoop(graph, spec, prog, debug);
}

} // namespace aspen::nn::rnn::detail
