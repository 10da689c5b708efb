// The recurrent cells' table and the one forward and one backward step builder every cell's
// product-then-cell loop runs (internal; docs/recurrent.md "One implementation").
//
// A step is a list of phases. Forward, a phase is a product (the state, or the previous phase's
// output, times columns of the recurrent weights, or the projection) and then one compute set
// of the phase's cell vertex over the rows of the state. Backward, a phase is a compute set of
// its cell vertex and then a product (gate gradients, or the previous phase's output, times
// rows of the transposed weights) into the state gradient or a scratch the next phase reads.
// The table (cellTable) says, for each cell, how many gates it has and its phases: their
// vertices and their products. The cell formulas are those vertices (codelets/nn); a cell's
// CellSteps says which of its tensors each vertex field reads and writes. The fused and
// persistent loops are the other forms of the same steps, one kernel a step or a sequence
// (RnnFused.cpp, RnnPersistent.cpp).
#pragma once

#include "RnnLoop.hpp"

#include <aspen/Graph.hpp>
#include <aspen/Program.hpp>
#include <aspen/linalg/MatMul.hpp>
#include <aspen/nn/Rnn.hpp>

#include <string>
#include <vector>

namespace aspen::nn::rnn::detail {

enum class CellKind { Lstm, GruResetBefore, GruResetAfter, Vanilla };

// What a phase's product multiplies.
enum class ProductLhs {
  State,   // forward: h (with the step's input before it when the step weighs its input)
  Scratch, // the previous phase's output (StepTensors::scratch)
  DeltaX,  // backward: the gate gradients the input and recurrent products share
  DeltaH,  // backward: the recurrent product's own gate gradients (the GRU's reset-after form)
};
// By what.
enum class ProductRhs { Recurrent, Projection };
// Into what.
enum class ProductOut {
  New,        // a new [B, n] tensor, the phase's StepTensors::product
  StepOutput, // forward: StepTensors::out
  StateGrad,  // backward: StepTensors::stateGrad (the gradient reaching h_{t-1} through W)
  Scratch,    // backward: StepTensors::scratch of the next phase
};

struct CellProduct {
  ProductLhs lhs = ProductLhs::State;
  ProductRhs rhs = ProductRhs::Recurrent;
  unsigned firstGate = 0, endGate = 0; // the gates [first, end) of W's columns (rows of W^T)
  ProductOut out = ProductOut::New;
};

struct CellPhase {
  const char *name = "";   // its compute set's and product's debug name
  const char *vertex = ""; // the cell vertex, a template on the data type
  CellProduct product;
  bool projectedOnly = false; // runs only in a projected layer (the LSTM's proj_size)
};

struct CellTable {
  const char *name = "";
  unsigned gates = 0; // W is [*, gates * H]
  std::vector<CellPhase> forward, backward;
};

// The table's row for `kind`.
const CellTable &cellTable(CellKind kind);

// The weights a step's products read. Forward: recurrent [R, G*H] (R: the state's width),
// input [I, G*H] when the step weighs its input, projection [H, P]. Backward, each transposed:
// recurrent [G*H, R], input [G*H, I] when the step's last product also gives the input's
// gradient, projection [P, H].
struct StepMatrices {
  Tensor recurrent, input, projection;
};

// One step's tensors, by their role in the table's products; the cell fills them (begin) and
// its vertices' fields read them (connect).
struct StepTensors {
  Tensor state;    // forward: h [B, R]; backward: the carried gradient
  Tensor input;    // forward: x_t when the first product weighs it ([x_t | h] . [Wi; W])
  Tensor out;      // forward: the step's output (ProductOut::StepOutput)
  Tensor deltaX;   // backward: [B, G*H]
  Tensor deltaH;   // backward: [B, G*H] (GRU reset-after), else invalid
  Tensor stateGrad; // backward: ProductOut::StateGrad
  Tensor inputGrad; // backward: the step's dx, beside stateGrad in the last product when valid
  std::vector<Tensor> scratch; // per phase: the cell's output a later product reads
  std::vector<Tensor> product; // per phase: the product the builder made (ProductOut::New)
  std::vector<Tensor> own;     // the cell's own tensors of the step, for its connect
};

// A cell's side of the builders.
class CellSteps {
public:
  virtual ~CellSteps() = default;
  // The step's tensors from the loop's state and slices (scratch and product sized to the
  // phases, scratch filled where a phase writes one).
  virtual StepTensors begin(Graph &graph, std::vector<Tensor> &state, const RnnSlice &slice,
                            const RnnBatchwiseFlags &flags, const DebugContext &debug) const = 0;
  // Whether the layer runs a projectedOnly phase.
  virtual bool projected() const { return false; }
  // The [B, *] tensor whose rows' tiles place phase i's vertices.
  virtual Tensor rowsOf(unsigned phase, const StepTensors &s) const;
  // Phase i's vertex fields for the rows `rows`.
  virtual void connect(unsigned phase, Graph &graph, VertexRef v,
                       const std::vector<Interval> &rows, const StepTensors &s) const = 0;
  // After the phases (a copy into the kept intermediates, say).
  virtual void finish(Graph &graph, const StepTensors &s, program::Sequence &step,
                      const DebugContext &debug) const;
};

// How the builders multiply.
struct StepProducts {
  StepMatrices weights;
  OptionFlags mmOptions;
  linalg::PlanningCache *cache = nullptr;
};

// The loop body (rnn::Rnn, runLoop) of a forward step: each of the table's forward phases, its
// product then its cells, then cell.finish.
LoopBodyType forwardStepBody(const CellTable &table, Type type, StepProducts products,
                             const CellSteps &cell);
// The loop body of a backward step: each backward phase, its cells then its product.
LoopBodyType backwardStepBody(const CellTable &table, Type type, StepProducts products,
                              const CellSteps &cell);

// The one forward builder: spec's loop (runLoop, run forward) whose steps are forwardStepBody's.
// Returns the final state.
std::vector<Tensor> forwardCellLoop(Graph &graph, const CellTable &table, LoopSpec spec,
                                    const StepProducts &products, const CellSteps &cell,
                                    program::Sequence &prog, const DebugContext &debug);
// The one backward builder: spec's loop (reverse in time, either form) whose steps are
// backwardStepBody's. Returns the final state.
std::vector<Tensor> backwardCellLoop(Graph &graph, const CellTable &table, LoopSpec spec,
                                     const StepProducts &products, const CellSteps &cell,
                                     program::Sequence &prog, const DebugContext &debug);

} // namespace aspen::nn::rnn::detail
