// The recurrent-layer codelets: the step control of the generic loop (aspen::nn::rnn::Rnn) and
// the LSTM cell, forward, backward and the cell-state recomputation.
//
// Cell vertices work on whole rows of the [B, H] state: a vertex holds R rows, and its 2-D
// fields list, per row, one segment per gate in the canonical order (forget, input, candidate,
// output) whatever the weights' cell order (the builder connects slots to gates). Arithmetic is
// in float; half data is widened on load and rounded once on store. With element-wise
// activations the workers split the vertex's elements; when an activation is softmax (over a
// gate's H units, per row) each worker takes whole rows.
#include "RnnCellMath.hpp"
#include "LstmCellMath.hpp"
// after RnnCellMath.hpp, which brings the codelet headers (ASPEN_HD)
#include "PackedProduct.hpp"

namespace aspen::nn {

// One time step's control values, computed at the start of the step by a single thread:
//   time    the absolute step t: begin + step (forward) or begin + window - 1 - step (reverse)
//   offset  t - begin, the position of the step in its shard's chunk or window
//   active  1 when t < min(T, max length): the step does any work
//   gather  1 when the step is active, gatherSteps > 0 and t % gatherSteps == 0
//   slot    t % slotModulus (t when slotModulus is 0): the step's place in a gather window
//   mask    per row, 1 when t < min(T, L_b) (lengths [1] apply to every row); inverse = 1 - mask
// then advances `step`.
template <class T> class RnnStepControl : public Vertex {
public:
  InOut<Vector<unsigned>> step;
  Input<Vector<unsigned>> begin;
  Input<Vector<unsigned>> lengths;
  Output<Vector<unsigned>> time;
  Output<Vector<unsigned>> offset;
  Output<Vector<unsigned>> active;
  Output<Vector<unsigned>> gather;
  Output<Vector<unsigned>> slot;
  Output<Vector<T>> mask;
  Output<Vector<T>> inverse;
  unsigned window;
  unsigned maxTimeSteps;
  unsigned gatherSteps;
  unsigned slotModulus;
  bool reverse;
  bool compute() {
    const unsigned i = step[0];
    const unsigned t = reverse ? begin[0] + window - 1 - i : begin[0] + i;
    unsigned longest = 0;
    for (unsigned b = 0; b < lengths.size(); ++b)
      longest = lengths[b] > longest ? lengths[b] : longest;
    longest = longest < maxTimeSteps ? longest : maxTimeSteps;
    const bool isActive = t < longest;
    time[0] = t;
    offset[0] = t - begin[0];
    active[0] = isActive ? 1u : 0u;
    slot[0] = slotModulus != 0 ? t % slotModulus : t;
    gather[0] = isActive && gatherSteps != 0 && t % gatherSteps == 0 ? 1u : 0u;
    const unsigned rows = mask.size();
    for (unsigned b = 0; b < rows; ++b) {
      const unsigned length = lengths.size() == 1 ? lengths[0] : lengths[b];
      const bool on = t < length && t < maxTimeSteps;
      mask[b] = T(on ? 1.0f : 0.0f);
      inverse[b] = T(on ? 0.0f : 1.0f);
    }
    step[0] = i + 1;
    return true;
  }
};

template class RnnStepControl<float>;
template class RnnStepControl<half>;

// One step of a sequence in or out, at an offset read on the device: `from` / `to` list the
// same part of every step ([n] regions), so a vertex touches only the step it copies and the
// sequence needs no rearrangement. An offset past the sequence is a failure (the loop's control
// never produces one).
template <class T> class RnnSliceStep : public MultiVertex {
public:
  Input<Vector<unsigned>> offset;
  Vector<Input<Vector<T>>> from;
  Output<Vector<T>> to;
  bool compute(unsigned workerId) {
    const unsigned t = offset[0];
    if (t >= from.size())
      return false;
    const T *src = from[t].data();
    T *dst = to.data();
    unsigned lo, hi;
    ::aspen::detail::workerShare(to.size(), workerId, numWorkers(), lo, hi);
    for (unsigned i = lo; i < hi; ++i)
      dst[i] = src[i];
    return true;
  }
};

template <class T> class RnnStoreStep : public MultiVertex {
public:
  Input<Vector<unsigned>> offset;
  Input<Vector<T>> from;
  Vector<InOut<Vector<T>>> to;
  bool compute(unsigned workerId) {
    const unsigned t = offset[0];
    if (t >= to.size())
      return false;
    const T *src = from.data();
    T *dst = to[t].data();
    unsigned lo, hi;
    ::aspen::detail::workerShare(from.size(), workerId, numWorkers(), lo, hi);
    for (unsigned i = lo; i < hi; ++i)
      dst[i] = src[i];
    return true;
  }
};

// One batch row's part of a sequence with its first `length` steps in reverse order, for the
// layers' reverse direction: out[t] = in[length - 1 - t] for t < length, out[t] = in[t] after
// (the padding stays where it is). A length past the sequence counts as the whole sequence, as
// the step masks count it. `in` and `out` list the same part of every step ([n] regions of one
// size); workers split the steps.
template <class T> class ReverseSteps : public MultiVertex {
public:
  Input<Vector<unsigned>> length;
  Vector<Input<Vector<T>>> in;
  Vector<Output<Vector<T>>> out;
  bool compute(unsigned workerId) {
    const unsigned steps = out.size();
    if (in.size() != steps)
      return false;
    const unsigned n = length[0] < steps ? length[0] : steps;
    unsigned lo, hi;
    ::aspen::detail::workerShare(steps, workerId, numWorkers(), lo, hi);
    for (unsigned t = lo; t < hi; ++t) {
      const unsigned from = t < n ? n - 1 - t : t;
      if (in[from].size() != out[t].size())
        return false;
      const T *src = in[from].data();
      T *dst = out[t].data();
      for (unsigned i = 0; i < out[t].size(); ++i)
        dst[i] = src[i];
    }
    return true;
  }
};

template class ReverseSteps<float>;
template class ReverseSteps<half>;

template class RnnSliceStep<float>;
template class RnnSliceStep<half>;
template class RnnSliceStep<int>;
template class RnnSliceStep<unsigned>;
template class RnnStoreStep<float>;
template class RnnStoreStep<half>;
template class RnnStoreStep<int>;
template class RnnStoreStep<unsigned>;

// out = rows [first, first + out.size() / rows) of in^T: `in` is a row-major rows x cols
// matrix, `out` that band of its transpose (the backward pass's weights, once a run). Blocked so
// that both sides stay in cache; workers split the band's rows.
template <class T> class TransposeBand : public MultiVertex {
public:
  Input<Vector<T>> in;
  Output<Vector<T>> out;
  unsigned rows;
  unsigned cols;
  unsigned first;
  bool compute(unsigned workerId) {
    const unsigned bandRows = rows == 0 ? 0 : out.size() / rows;
    unsigned lo, hi;
    ::aspen::detail::workerShare(bandRows, workerId, numWorkers(), lo, hi);
    const T *src = in.data();
    T *dst = out.data();
    const unsigned block = 32;
    for (unsigned j0 = lo; j0 < hi; j0 += block)
      for (unsigned i0 = 0; i0 < rows; i0 += block) {
        const unsigned j1 = j0 + block < hi ? j0 + block : hi;
        const unsigned i1 = i0 + block < rows ? i0 + block : rows;
        for (unsigned j = j0; j < j1; ++j)
          for (unsigned i = i0; i < i1; ++i)
            dst[j * rows + i] = src[i * cols + first + j];
      }
    return true;
  }
};

template class TransposeBand<float>;
template class TransposeBand<half>;


// The forward step of R rows: gates from the pre-activations (`gates`, 4 segments a row; plus
// `gatesIn` when hasGatesIn) plus the biases (4 segments), c_t = f c_{t-1} + i g and h_t = o phi(c_t), written to cState and hState
// (in place) and to `out`; `inter` receives the saved intermediates, n segments a row:
//   saveMode 0: none; 1: [f, i, g, o]; 2: [f, i, g, o, phi(c_t), c_{t-1}]; then h_t if saveH.
//   rawCandidate: slot 2 holds the candidate's pre-activation and slot 4 holds c_t instead (the
//   activation's gradient needs its input).
// Rows whose mask is 0 keep their state, and write zeros to `out` and `inter`.
template <class T> class LstmCellFwd : public MultiVertex {
public:
  Vector<Input<Vector<T>>> gates;
  Vector<Input<Vector<T>>> gatesIn;
  Vector<Input<Vector<T>>> bias;
  Vector<InOut<Vector<T>>> cState;
  Vector<InOut<Vector<T>>> hState;
  Vector<Output<Vector<T>>> out;
  Vector<Output<Vector<T>>> inter;
  Input<Vector<T>> mask;
  unsigned activation;
  unsigned recurrentActivation;
  unsigned saveMode;
  bool saveH;
  bool rawCandidate;
  bool hasGatesIn;
  unsigned cellClipMode; // the cell clip (cell::CellClip): 0 none
  float cellClipMin;
  float cellClipMax;
  cell::CellClip cellClip() const { return {cellClipMode, cellClipMin, cellClipMax}; }
  // ONNX's clip of the activations' inputs (cell::ActClip), 0 for none: element-wise
  // activations only; the gate slots of `inter` then hold the clipped pre-activations.
  float activationClip;

  // The product's pre-activation plus, with hasGatesIn, the pre-weighted input's (x.Wi summed
  // before the loop): added in float, rounded to T once, as a product accumulating into it would.
  static float preActivation(T product, T weighedInput, bool withInput) {
    return withInput ? float(T(float(weighedInput) + float(product))) : float(product);
  }
  unsigned numInter() const { return (saveMode == 0 ? 0u : saveMode == 1 ? 4u : 6u) + (saveH ? 1u : 0u); }
  float pre(unsigned r, unsigned u, unsigned k) const {
    return preActivation(gates[4 * r + u][k], gatesIn[4 * r + u][k], hasGatesIn) +
           float(bias[u][k]);
  }

  // Writes the results of elements [k0, k1) of row r; c already holds c_t when cReady.
  void finish(unsigned r, unsigned k0, unsigned k1, const lstm_cell::RowStats *gs,
              const lstm_cell::RowStats &cs, bool cReady) {
    using namespace lstm_cell;
    const unsigned n = numInter();
    for (unsigned k = k0; k < k1; ++k) {
      const float ag = pre(r, G, k);
      const float f = activate(recurrentActivation, pre(r, F, k), gs[F]);
      const float i = activate(recurrentActivation, pre(r, I, k), gs[I]);
      const float g = activate(activation, ag, gs[G]);
      const float o = activate(recurrentActivation, pre(r, O, k), gs[O]);
      const float cPrev = cReady ? 0.0f : float(cState[r][k]);
      const float c = cReady ? float(cState[r][k]) : f * cPrev + i * g;
      const float phiC = activate(activation, c, cs);
      const float h = o * phiC;
      if (saveMode != 0) {
        inter[n * r + F][k] = T(f);
        inter[n * r + I][k] = T(i);
        inter[n * r + G][k] = T(rawCandidate ? ag : g);
        inter[n * r + O][k] = T(o);
      }
      if (saveMode == 2) {
        inter[n * r + 4][k] = T(rawCandidate ? c : phiC);
        if (!cReady)
          inter[n * r + 5][k] = T(cPrev);
      }
      if (saveH)
        inter[n * r + n - 1][k] = T(h);
      if (!cReady)
        cState[r][k] = T(c);
      hState[r][k] = T(h);
      out[r][k] = T(h);
    }
  }

  void zeroRow(unsigned r, unsigned k0, unsigned k1) {
    const unsigned n = numInter();
    for (unsigned k = k0; k < k1; ++k) {
      out[r][k] = T(0.0f);
      for (unsigned j = 0; j < n; ++j)
        inter[n * r + j][k] = T(0.0f);
    }
  }

  bool compute(unsigned workerId) {
    using namespace lstm_cell;
    const RowStats none[4];
    const RowStats noneC;
    const bool rowWise = isSoftmaxKind(activation) || isSoftmaxKind(recurrentActivation);
    if (!rowWise) {
      forElementShare(out, workerId, numWorkers(), recurrentActivation, activation,
                      [&](unsigned r, unsigned lo, unsigned hi, auto rho, auto phi) {
                        fwdElements<T>(*this, r, lo, hi, rho, phi, cellClip(),
                                       cell::ActClip{activationClip});
                      });
      return true;
    }
    for (unsigned r = workerId; r < out.size(); r += numWorkers()) {
      const unsigned h = out[r].size();
      if (float(mask[r]) == 0.0f) {
        zeroRow(r, 0, h);
        continue;
      }
      RowStats gs[4];
      for (unsigned u = 0; u < 4; ++u)
        if (isSoftmaxKind(u == G ? activation : recurrentActivation))
          gs[u] = softmaxStats(h, [&](unsigned k) { return pre(r, u, k); });
      if (!isSoftmaxKind(activation)) {
        finish(r, 0, h, gs, noneC, false);
        continue;
      }
      // phi(c_t) needs the whole row of c_t: compute it first (saving c_{t-1} on the way).
      const unsigned n = numInter();
      for (unsigned k = 0; k < h; ++k) {
        const float f = activate(recurrentActivation, pre(r, F, k), gs[F]);
        const float i = activate(recurrentActivation, pre(r, I, k), gs[I]);
        const float g = activate(activation, pre(r, G, k), gs[G]);
        const float cPrev = float(cState[r][k]);
        if (saveMode == 2)
          inter[n * r + 5][k] = T(cPrev);
        cState[r][k] = T(f * cPrev + i * g);
      }
      const RowStats cs = softmaxStats(h, [&](unsigned k) { return float(cState[r][k]); });
      finish(r, 0, h, gs, cs, true);
    }
    return true;
  }
};

// The backward step of R rows (rnn-semantics.md): from the saved gates (`fwd`, 4 segments a row),
// `cell` (2 segments a row: phi(c_t) -- or c_t when rawCell -- and c_{t-1}), the incoming
// gradient dh = dhMM + dhCarry (+ outGrad when hasOutGrad) and dcState, writes the gate
// gradients `delta` (4 segments a row, canonical order), dcState = dc * f and dhCarry = 0; the
// next product delta . Wo^T becomes the next dhMM. rawCandidate: slot 2 of fwd holds the
// candidate's pre-activation. Rows whose mask is 0 write zero gradients and carry
// dh (dhCarry = dhMM + dhCarry) and dc unchanged.
template <class T> class LstmCellBwd : public MultiVertex {
public:
  Vector<Input<Vector<T>>> fwd;
  Vector<Input<Vector<T>>> cell;
  Vector<Input<Vector<T>>> outGrad;
  Vector<Input<Vector<T>>> dhMM;
  Vector<InOut<Vector<T>>> dhCarry;
  Vector<InOut<Vector<T>>> dcState;
  Vector<Output<Vector<T>>> delta;
  Input<Vector<T>> mask;
  unsigned activation;
  unsigned recurrentActivation;
  bool rawCell;
  bool rawCandidate;
  unsigned cellClipMode; // the cell clip (cell::CellClip): 0 none
  float cellClipMin;
  float cellClipMax;
  cell::CellClip cellClip() const { return {cellClipMode, cellClipMin, cellClipMax}; }
  float activationClip; // as LstmCellFwd's: fwd's gate slots hold clipped pre-activations
  bool hasOutGrad;
  bool popnnHardSigmoidGrad; // HARD_SIGMOID's gradient by popnn's rule (RnnCellMath.hpp)

  struct Element {
    float f, i, g, gAct, o, phiC, cAct, cPrev, dh;
  };
  Element load(unsigned r, unsigned k, const lstm_cell::RowStats &cStats) const {
    Element e;
    e.f = float(fwd[4 * r + 0][k]);
    e.i = float(fwd[4 * r + 1][k]);
    const float gs = float(fwd[4 * r + 2][k]);
    e.g = rawCandidate ? nnForwardOf(NonLinearityType(activation), gs) : gs;
    e.gAct = gs;
    e.o = float(fwd[4 * r + 3][k]);
    const float cs = float(cell[2 * r][k]);
    e.phiC = rawCell ? lstm_cell::activate(activation, cs, cStats) : cs;
    // The derivative of phi at c_t is taken from its output unless the kind needs its input.
    e.cAct = rawCell && nnGradientTakesInput(NonLinearityType(activation)) ? cs : e.phiC;
    e.cPrev = float(cell[2 * r + 1][k]);
    e.dh = float(dhMM[r][k]) + float(dhCarry[r][k]) + (hasOutGrad ? float(outGrad[r][k]) : 0.0f);
    return e;
  }

  // Softmax row sums: dots[0..3] for gates f, i, g, o and dots[4] for phi(c_t).
  void rowDots(unsigned r, unsigned h, const lstm_cell::RowStats &cStats, float *dots) const {
    using namespace lstm_cell;
    for (unsigned j = 0; j < 5; ++j)
      dots[j] = 0.0f;
    for (unsigned k = 0; k < h; ++k) {
      const Element e = load(r, k, cStats);
      dots[4] += e.dh * e.o * e.phiC;
    }
    for (unsigned k = 0; k < h; ++k) {
      const Element e = load(r, k, cStats);
      const float dc = gradient(activation, e.cAct, e.dh * e.o, dots[4], popnnHardSigmoidGrad) + float(dcState[r][k]);
      dots[O] += e.dh * e.phiC * e.o;
      dots[I] += dc * e.g * e.i;
      dots[G] += dc * e.i * e.g;
      dots[F] += dc * e.cPrev * e.f;
    }
  }

  void finish(unsigned r, unsigned k0, unsigned k1, const lstm_cell::RowStats &cStats,
              const float *dots) {
    using namespace lstm_cell;
    for (unsigned k = k0; k < k1; ++k) {
      if (float(mask[r]) == 0.0f) {
        for (unsigned u = 0; u < 4; ++u)
          delta[4 * r + u][k] = T(0.0f);
        dhCarry[r][k] = T(float(dhMM[r][k]) + float(dhCarry[r][k]));
        continue;
      }
      const Element e = load(r, k, cStats);
      const float dOut = gradient(recurrentActivation, e.o, e.dh * e.phiC, dots[O], popnnHardSigmoidGrad);
      const float dc = gradient(activation, e.cAct, e.dh * e.o, dots[4], popnnHardSigmoidGrad) + float(dcState[r][k]);
      const float dIn = gradient(recurrentActivation, e.i, dc * e.g, dots[I], popnnHardSigmoidGrad);
      const float dCand = gradient(activation, rawCandidate ? e.gAct : e.g, dc * e.i, dots[G],
                                     popnnHardSigmoidGrad);
      const float dForget = gradient(recurrentActivation, e.f, dc * e.cPrev, dots[F],
                                       popnnHardSigmoidGrad);
      delta[4 * r + F][k] = T(dForget);
      delta[4 * r + I][k] = T(dIn);
      delta[4 * r + G][k] = T(dCand);
      delta[4 * r + O][k] = T(dOut);
      dcState[r][k] = T(dc * e.f);
      dhCarry[r][k] = T(0.0f);
    }
  }

  bool compute(unsigned workerId) {
    using namespace lstm_cell;
    const float none[5] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    const RowStats noStats;
    if (!isSoftmaxKind(activation) && !isSoftmaxKind(recurrentActivation)) {
      forElementShare(
          dcState, workerId, numWorkers(), recurrentActivation, activation,
          [&](unsigned r, unsigned lo, unsigned hi, auto rho, auto phi) {
            bwdElements<T>(*this, r, lo, hi, rho, phi, cellClip(),
                           cell::ActClip{activationClip});
          },
          popnnHardSigmoidGrad);
      return true;
    }
    for (unsigned r = workerId; r < dcState.size(); r += numWorkers()) {
      const unsigned h = dcState[r].size();
      float dots[5];
      if (float(mask[r]) == 0.0f) {
        finish(r, 0, h, noStats, none);
        continue;
      }
      // With c_t saved raw (recomputed), a softmax activation needs its row statistics.
      RowStats cStats;
      if (rawCell && isSoftmaxKind(activation))
        cStats = softmaxStats(h, [&](unsigned k) { return float(cell[2 * r][k]); });
      rowDots(r, h, cStats, dots);
      finish(r, 0, h, cStats, dots);
    }
    return true;
  }
};

// The projected LSTM's forward step after its product hNew = m_t . Wp: rows whose mask is
// non-zero take `from` into `to` (the state h); the others keep their state (a row past its
// length).
template <class T> class RnnMaskedRows : public MultiVertex {
public:
  Vector<Input<Vector<T>>> from;
  Vector<InOut<Vector<T>>> to;
  Input<Vector<T>> mask;

  bool compute(unsigned workerId) {
    for (unsigned r = workerId; r < to.size(); r += numWorkers())
      if (float(mask[r]) != 0.0f)
        for (unsigned k = 0; k < to[r].size(); ++k)
          to[r][k] = from[r][k];
    return true;
  }
};

// The projected LSTM's backward step before its product dm = dh . Wp^T: the gradient reaching
// h_t, dh = dhMM + dhCarry (+ outGrad when hasOutGrad), summed in float and written to `dh`,
// with dhCarry = 0. Rows whose mask is 0 write dh = 0 and carry dhCarry = dhMM + dhCarry, as
// LstmCellBwd does for the layer without a projection.
template <class T> class LstmProjectionGrad : public MultiVertex {
public:
  Vector<Input<Vector<T>>> outGrad;
  Vector<Input<Vector<T>>> dhMM;
  Vector<InOut<Vector<T>>> dhCarry;
  Vector<Output<Vector<T>>> dh;
  Input<Vector<T>> mask;
  bool hasOutGrad;

  bool compute(unsigned workerId) {
    for (unsigned r = workerId; r < dh.size(); r += numWorkers()) {
      const bool active = float(mask[r]) != 0.0f;
      for (unsigned k = 0; k < dh[r].size(); ++k) {
        const float carried = float(dhMM[r][k]) + float(dhCarry[r][k]);
        if (!active) {
          dh[r][k] = T(0.0f);
          dhCarry[r][k] = T(carried);
          continue;
        }
        dh[r][k] = T(carried + (hasOutGrad ? float(outGrad[r][k]) : 0.0f));
        dhCarry[r][k] = T(0.0f);
      }
    }
    return true;
  }
};

// Rebuilds c_t from the saved gates for recomputationMode cellAndTanh: c_t = f c_{t-1} + i g,
// cState holding c_{t-1} on entry and c_t on exit, cPrev receiving c_{t-1} and cOut c_t (the
// sequences the backward pass reads). Rows whose mask is 0 keep cState and write zeros.
template <class T> class LstmCellRecompute : public MultiVertex {
public:
  Vector<Input<Vector<T>>> fwd;
  Vector<InOut<Vector<T>>> cState;
  Vector<Output<Vector<T>>> cPrev;
  Vector<Output<Vector<T>>> cOut;
  Input<Vector<T>> mask;
  unsigned activation;
  unsigned recurrentActivation;
  bool rawCandidate;
  unsigned cellClipMode; // the cell clip (cell::CellClip): 0 none
  float cellClipMin;
  float cellClipMax;
  cell::CellClip cellClip() const { return {cellClipMode, cellClipMin, cellClipMax}; }
  float activationClip; // as LstmCellFwd's: the gate slots hold clipped pre-activations
  bool compute(unsigned workerId) {
    nnForWorkerShare(cState, workerId, numWorkers(), [&](unsigned r, unsigned k) {
      const float previous = float(cState[r][k]);
      if (float(mask[r]) == 0.0f) {
        cPrev[r][k] = T(0.0f);
        cOut[r][k] = T(0.0f);
        return;
      }
      const auto gate = [&](unsigned u) {
        const float s = float(fwd[4 * r + u][k]);
        return activationClip > 0.0f ? nnForwardOf(NonLinearityType(recurrentActivation), s) : s;
      };
      const float gs = float(fwd[4 * r + 2][k]);
      const float g = rawCandidate ? nnForwardOf(NonLinearityType(activation), gs) : gs;
      const float c = cellClip().apply(gate(0) * previous + gate(1) * g);
      cPrev[r][k] = T(previous);
      cOut[r][k] = T(c);
      cState[r][k] = T(c);
    });
    return true;
  }
};

// The fused step's weights, packed once a run: the units [firstUnit, firstUnit + numUnits) of
// the weights the step multiplies by, `weights` holding their K rows as a matrix (rows of [4H]:
// slot s's units at s * H; Wo's H rows, or Wi's I rows then Wo's when the step weighs its
// input too), as panels of packed::kPanel columns, 4 units x the gates forget, input,
// candidate, output (slots slotF...): packed[(p * K + k) * 16 + 4 * gate + j] =
// weights[k][slot(gate) * H + firstUnit + 4p + j], zero past the last unit. Workers split the
// panels; each row is read along the worker's panels in blocks of 8 rows.
template <class T> class PackLstmWeights : public MultiVertex {
public:
  Vector<Input<Vector<T>>> weights;
  Output<Vector<float>> packed;
  unsigned H;
  unsigned K;
  unsigned firstUnit;
  unsigned numUnits;
  unsigned slotF, slotI, slotG, slotO;
  bool compute(unsigned workerId) {
    const unsigned slots[4] = {slotF, slotI, slotG, slotO};
    const unsigned panels = (numUnits + 3) / 4;
    if (weights.size() != K || packed.size() != panels * K * packed::kPanel)
      return false;
    float *out = packed.data();
    unsigned lo, hi;
    ::aspen::detail::workerShare(panels, workerId, numWorkers(), lo, hi);
    constexpr unsigned kRowBlock = 8;
    for (unsigned k0 = 0; k0 < K; k0 += kRowBlock) {
      const unsigned k1 = K - k0 < kRowBlock ? K : k0 + kRowBlock;
      for (unsigned g = 0; g < 4; ++g)
        for (unsigned p = lo; p < hi; ++p) {
          const unsigned full = numUnits - 4 * p < 4 ? numUnits - 4 * p : 4; // panel's units
          const unsigned column = slots[g] * H + firstUnit + 4 * p;
          float *dst = out + p * K * packed::kPanel + 4 * g; // row k at dst + k * 16
          for (unsigned k = k0; k < k1; ++k) {
            const T *src = weights[k].data() + column;
            for (unsigned j = 0; j < 4; ++j)
              dst[k * packed::kPanel + j] = j < full ? float(src[j]) : 0.0f;
          }
        }
    }
    return true;
  }
};

template class PackLstmWeights<float>;
template class PackLstmWeights<half>;

// One step of the LSTM's fused loop for the units [firstUnit, firstUnit + U) of every row: the
// product fused with the cell, and the step's slicing and storing too, so that a step is this
// one compute set and nothing else (LstmFused.cpp):
//   t = time[0], the absolute step, which the loop's RnnAdvanceTime vertex advances into the
//   other of two counters; i = t - begin, the step's place in the shard's `steps`.
//   pre = hPrev . Wo, or [x_t | hPrev] . [Wi; Wo] when inputSize I > 0 (x the shard's input,
//   [steps][B][I]), from the packed panels (K = I + H rows), summed in float in increasing k,
//   rounded to T, plus gatesIn (the shard's pre-weighted input, [steps][B][4H] slot columns, when
//   hasGatesIn) as LstmCellFwd adds it, plus the bias; then the cell exactly as LstmCellFwd
//   computes it (same functions, same roundings), writing cState (in place) and hState, the
//   other buffer of h (B segments of U elements), and step i of `out` (steps x B segments; none
//   when the sequence is not kept) and of `inter` (steps x B x numInter segments, step, row,
//   slot).
// Row r is active while t < lengths[r] (lengths[0] for every row when it has one element);
// an inactive row keeps its state (h copied across) and writes zeros. A row block with no
// active row skips its product. Element-wise activations only. Workers split the panels of 4
// units; each output is computed by one worker in one order. A time outside the shard fails.
template <class T> class LstmFusedFwd : public MultiVertex {
public:
  Input<Vector<unsigned>> time;
  Input<Vector<unsigned>> lengths;
  Input<Vector<T>> hPrev;
  Input<Vector<T>> x;
  Input<Vector<float>> packed;
  Input<Vector<T>> gatesIn;
  Input<Vector<T>> bias;
  Vector<InOut<Vector<T>>> cState;
  Vector<InOut<Vector<T>>> hState;
  Vector<InOut<Vector<T>>> out;
  Vector<InOut<Vector<T>>> inter;
  unsigned H;
  unsigned inputSize; // I: not the name, which the cell's gate index (lstm_cell::I) has
  unsigned firstUnit;
  unsigned begin;
  unsigned steps;
  unsigned slotF, slotI, slotG, slotO;
  unsigned activation;
  unsigned recurrentActivation;
  unsigned saveMode;
  bool saveH;
  bool rawCandidate;
  bool hasGatesIn;
  unsigned cellClipMode; // the cell clip (cell::CellClip): 0 none
  float cellClipMin;
  float cellClipMax;
  cell::CellClip cellClip() const { return {cellClipMode, cellClipMin, cellClipMax}; }

  unsigned numInter() const {
    return (saveMode == 0 ? 0u : saveMode == 1 ? 4u : 6u) + (saveH ? 1u : 0u);
  }

  bool compute(unsigned workerId) {
    const unsigned rows = cState.size();
    const unsigned t = time[0];
    if (t < begin || t - begin >= steps || hState.size() != rows ||
        (inputSize > 0 && x.size() != steps * rows * inputSize))
      return false;
    if (rows == 0)
      return true;
    const unsigned step = t - begin;
    const unsigned units = cState[0].size();
    const unsigned panels = (units + 3) / 4;
    unsigned lo, hi; // this worker's panels
    ::aspen::detail::workerShare(panels, workerId, numWorkers(), lo, hi);
    const bool fixed = recurrentActivation == unsigned(NonLinearityType::SIGMOID) &&
                       activation == unsigned(NonLinearityType::TANH);
    for (unsigned p0 = lo; p0 < hi; p0 += kGroupPanels) {
      const unsigned p1 = hi - p0 < kGroupPanels ? hi : p0 + kGroupPanels;
      for (unsigned r0 = 0; r0 < rows; r0 += packed::kRows) {
        const unsigned rb = rows - r0 < packed::kRows ? rows - r0 : packed::kRows;
        bool any = false;
        for (unsigned r = 0; r < rb; ++r)
          any = any || active(t, r0 + r);
        // pre[r][gate][unit - 4 p0]: the group's products, gate-major for the cell's loops.
        float pre[packed::kRows][4][4 * kGroupPanels];
        for (unsigned p = p0; any && p < p1; p += 2) {
          const unsigned np = p1 - p < 2 ? 1 : 2;
          float acc[2 * packed::kRows * packed::kPanel];
          for (unsigned i = 0; i < 2 * packed::kRows * packed::kPanel; ++i)
            acc[i] = 0.0f;
          product(acc, step, r0, rb, packed.data() + p * (inputSize + H) * packed::kPanel, np);
          for (unsigned q = 0; q < np; ++q)
            for (unsigned r = 0; r < rb; ++r)
              for (unsigned g = 0; g < 4; ++g)
                for (unsigned j = 0; j < 4; ++j)
                  pre[r][g][4 * (p + q - p0) + j] =
                      acc[(q * packed::kRows + r) * packed::kPanel + 4 * g + j];
        }
        const unsigned k0 = 4 * p0, k1 = 4 * p1 < units ? 4 * p1 : units;
        for (unsigned r = 0; r < rb; ++r) {
          const unsigned row = r0 + r;
          if (!active(t, row))
            holdRow(step, row, k0, k1);
          else if (fixed)
            cellRowFor(step, row, k0, k1, pre[r], cell::Fixed<NonLinearityType::SIGMOID>(),
                       cell::Fixed<NonLinearityType::TANH>());
          else
            cellRowFor(step, row, k0, k1, pre[r],
                       cell::Dynamic{NonLinearityType(recurrentActivation)},
                       cell::Dynamic{NonLinearityType(activation)});
        }
      }
    }
    return true;
  }

private:
  // Panels whose cells run together (64 units on the host); one on the GPU, where local
  // arrays cost every resident thread (PackedProduct.hpp).
#if defined(__CUDACC_RTC__) || defined(__CUDA_ARCH__)
  static constexpr unsigned kGroupPanels = 1;
#else
  static constexpr unsigned kGroupPanels = 16;
#endif

  bool active(unsigned t, unsigned row) const {
    return t < (lengths.size() == 1 ? lengths[0] : lengths[row]);
  }

  // An inactive row at the shard's step `step`, elements [k0, k1): h_{t-1} kept, zeros out.
  void holdRow(unsigned step, unsigned row, unsigned k0, unsigned k1) {
    const unsigned n = numInter(), rows = cState.size();
    const T *from = hPrev.data() + row * H + firstUnit;
    T *h = hState[row].data();
    for (unsigned k = k0; k < k1; ++k)
      h[k] = from[k];
    if (out.size() != 0) {
      T *o = out[step * rows + row].data();
      for (unsigned k = k0; k < k1; ++k)
        o[k] = T(0.0f);
    }
    for (unsigned s = 0; s < n; ++s) {
      T *dst = inter[(step * rows + row) * n + s].data();
      for (unsigned k = k0; k < k1; ++k)
        dst[k] = T(0.0f);
    }
  }

  // acc += rows [r0, r0 + rb) of [x_step | hPrev] . panel (np panels from there): the
  // input's I rows of the panel first, then h's H.
  void product(float *acc, unsigned step, unsigned r0, unsigned rb, const float *panel,
               unsigned np) const {
    const unsigned I = inputSize;
    const unsigned long long stride = (unsigned long long)(I + H) * packed::kPanel;
    const unsigned rows = cState.size();
    if (I > 0)
      packed::productRows(acc, x.data() + step * rows * I, I, r0, rb, panel, np, stride);
    packed::productRows(acc, hPrev.data(), H, r0, rb, panel + I * packed::kPanel, np, stride);
  }

  // The cell for elements [k0, k1) of row `row` (units firstUnit + k) at the shard's step
  // `step`, products in pre[gate][k - k0], as fwdElements computes it.
  // The cell's loops built for the CPU's widest vectors too. Codelets are compiled without
  // contraction (-ffp-contract=off), so every build does the same operations with the same
  // roundings as LstmCellFwd and LstmCellRecompute: recomputing the cell from the saved gates
  // (recomputationMode cellAndTanh) gives the forward's bits on any CPU.
  // Only the default pair (sigmoid, tanh, fixed at compile time) is built three times; other
  // activations dispatch per element anyway and keep the baseline build, which saves code.
  template <class Rho, class Phi>
  void cellRowFor(unsigned step, unsigned row, unsigned k0, unsigned k1,
                  const float (*pre)[4 * kGroupPanels], Rho rho, Phi phi) {
#if defined(ASPEN_PACKED_X86)
    if constexpr (!cell::kIsDynamic<Rho>)
      switch (packed::hostIsa()) {
      case packed::HostIsa::Avx512: return cellRowAvx512(step, row, k0, k1, pre, rho, phi);
      case packed::HostIsa::Avx2: return cellRowAvx2(step, row, k0, k1, pre, rho, phi);
      default: break;
      }
#endif
    cellRowBaseline(step, row, k0, k1, pre, rho, phi);
  }
#if defined(ASPEN_PACKED_X86)
  template <class Rho, class Phi>
  __attribute__((target("avx512f"), flatten)) void
  cellRowAvx512(unsigned step, unsigned row, unsigned k0, unsigned k1,
                const float (*pre)[4 * kGroupPanels], Rho rho, Phi phi) {
    cellRow(step, row, k0, k1, pre, rho, phi);
  }
  template <class Rho, class Phi>
  __attribute__((target("avx2,fma"), flatten)) void
  cellRowAvx2(unsigned step, unsigned row, unsigned k0, unsigned k1,
              const float (*pre)[4 * kGroupPanels], Rho rho, Phi phi) {
    cellRow(step, row, k0, k1, pre, rho, phi);
  }
#endif
  template <class Rho, class Phi>
  ASPEN_FLATTEN void cellRowBaseline(unsigned step, unsigned row, unsigned k0, unsigned k1,
                                     const float (*pre)[4 * kGroupPanels], Rho rho, Phi phi) {
    cellRow(step, row, k0, k1, pre, rho, phi);
  }

  template <class Rho, class Phi>
  ASPEN_ALWAYS_INLINE void cellRow(unsigned step, unsigned row, unsigned k0, unsigned k1,
                                   const float (*pre)[4 * kGroupPanels], Rho rho, Phi phi) {
    using namespace lstm_cell;
    const unsigned n = numInter(), rows = cState.size();
    const unsigned m = k1 - k0;
    const unsigned at = step * rows + row; // the row's place in the shard's sequences
    const unsigned slots[4] = {slotF, slotI, slotG, slotO};
    const unsigned u0 = firstUnit + k0;
    const T *gin[4], *bs[4];
    const bool withIn = hasGatesIn;
    for (unsigned g = 0; g < 4; ++g) {
      gin[g] = withIn ? gatesIn.data() + at * 4 * H + slots[g] * H + u0 : nullptr;
      bs[g] = bias.data() + slots[g] * H + u0;
    }
    T *c = cState[row].data() + k0, *h = hState[row].data() + k0;
    float a[4][4 * kGroupPanels], cPrev[4 * kGroupPanels], cNew[4 * kGroupPanels],
        phiC[4 * kGroupPanels], hNew[4 * kGroupPanels], preG[4 * kGroupPanels];
    // One plain loop a gate and form (a condition inside would keep GCC from vectorising it).
    for (unsigned g = 0; g < 4; ++g) {
      const float *p = pre[g];
      const T *b = bs[g];
      float *dst = a[g];
      if (withIn) {
        const T *x = gin[g];
        for (unsigned j = 0; j < m; ++j)
          dst[j] = float(T(float(x[j]) + float(T(p[j])))) + float(b[j]);
      } else {
        for (unsigned j = 0; j < m; ++j)
          dst[j] = float(T(p[j])) + float(b[j]);
      }
    }
    for (unsigned j = 0; j < m; ++j) {
      cPrev[j] = float(c[j]);
      preG[j] = a[G][j];
    }
    for (unsigned j = 0; j < m; ++j) {
      a[F][j] = rho.forward(a[F][j]);
      a[I][j] = rho.forward(a[I][j]);
      a[G][j] = phi.forward(a[G][j]);
      a[O][j] = rho.forward(a[O][j]);
      cNew[j] = a[F][j] * cPrev[j] + a[I][j] * a[G][j];
    }
    if (cellClipMode != 0) {
      const cell::CellClip clip = cellClip();
      for (unsigned j = 0; j < m; ++j)
        cNew[j] = clip.apply(cNew[j]);
    }
    for (unsigned j = 0; j < m; ++j) {
      phiC[j] = phi.forward(cNew[j]);
      hNew[j] = a[O][j] * phiC[j];
    }
    for (unsigned j = 0; j < m; ++j) {
      c[j] = T(cNew[j]);
      h[j] = T(hNew[j]);
    }
    if (out.size() != 0) {
      T *o = out[at].data() + k0;
      for (unsigned j = 0; j < m; ++j)
        o[j] = T(hNew[j]);
    }
    if (saveMode != 0) {
      for (unsigned g = 0; g < 4; ++g) {
        T *dst = inter[n * at + g].data() + k0;
        for (unsigned j = 0; j < m; ++j)
          dst[j] = T(g == G && rawCandidate ? preG[j] : a[g][j]);
      }
    }
    if (saveMode == 2) {
      T *sc = inter[n * at + 4].data() + k0, *sp = inter[n * at + 5].data() + k0;
      for (unsigned j = 0; j < m; ++j) {
        sc[j] = T(rawCandidate ? cNew[j] : phiC[j]);
        sp[j] = T(cPrev[j]);
      }
    }
    if (saveH) {
      T *sh = inter[n * at + n - 1].data() + k0;
      for (unsigned j = 0; j < m; ++j)
        sh[j] = T(hNew[j]);
    }
  }
};

// The recurrent weights of the GRU's and the vanilla RNN's fused steps, packed once a run
// (GruFused.cpp, Recurrent.cpp): panels of 16 units of one gate,
// packed[((b * gates + g) * K + k) * 16 + j] = W_g[k][firstUnit + 16 b + j] for gate g < gates,
// zero past the block's numUnits. `weights` lists the gates x K rows (row g * K + k: W_g's row
// k). Workers split the 16-unit blocks.
template <class T> class PackUnitPanels : public MultiVertex {
public:
  Vector<Input<Vector<T>>> weights;
  Output<Vector<float>> packed;
  unsigned K;
  unsigned gates;
  unsigned firstUnit;
  unsigned numUnits;
  bool compute(unsigned workerId) {
    const unsigned blocks = (numUnits + 15) / 16;
    if (weights.size() != gates * K || packed.size() != blocks * gates * K * packed::kPanel)
      return false;
    float *out = packed.data();
    unsigned lo, hi;
    ::aspen::detail::workerShare(blocks, workerId, numWorkers(), lo, hi);
    for (unsigned b = lo; b < hi; ++b) {
      const unsigned full = numUnits - 16 * b < 16 ? numUnits - 16 * b : 16;
      for (unsigned g = 0; g < gates; ++g)
        for (unsigned k = 0; k < K; ++k) {
          const T *src = weights[g * K + k].data() + firstUnit + 16 * b;
          float *dst = out + ((b * gates + g) * K + k) * packed::kPanel;
          for (unsigned j = 0; j < 16; ++j)
            dst[j] = j < full ? float(src[j]) : 0.0f;
        }
    }
    return true;
  }
};

template class PackUnitPanels<float>;
template class PackUnitPanels<half>;

// One step of the vanilla RNN's fused loop (Recurrent.cpp's forwardIterate) for the units
// [firstUnit, firstUnit + U) of every row: y_t = nl(h_{t-1} . Wfb + x_t + b), the product from
// the packed panels (one gate) rounded to T, then x_t and b added and the non-linearity applied
// as the unfused step's addInPlace, addInPlace and nonLinearityInPlace do (a rounding to T
// after each). t = time[0]; x is the sequence [steps][B][H]; h_t goes to hState (the other
// buffer, one segment a row) and to step t of `out` (steps x B segments). Element-wise
// non-linearities only. Workers split blocks of 16 units; a time outside the sequence fails.
template <class T> class RnnFusedFwd : public MultiVertex {
public:
  Input<Vector<unsigned>> time;
  Input<Vector<T>> hPrev;
  Input<Vector<float>> packed;
  Input<Vector<T>> x;
  Input<Vector<T>> bias;
  Vector<InOut<Vector<T>>> hState;
  Vector<InOut<Vector<T>>> out;
  unsigned H;
  unsigned firstUnit;
  unsigned numUnits;
  unsigned steps;
  unsigned nonLinearity;
  bool compute(unsigned workerId) {
    const unsigned rows = hState.size(), t = time[0];
    if (t >= steps || out.size() != steps * rows)
      return false;
    unsigned lo, hi;
    ::aspen::detail::workerShare((numUnits + 15) / 16, workerId, numWorkers(), lo, hi);
    packed::forBlockPairs(hPrev.data(), H, rows, lo, hi, packed.data(),
                          (unsigned long long)H * packed::kPanel,
                          [&](unsigned row, unsigned b, const float *p) {
                            finish(t, row, 16 * b, p);
                          });
    return true;
  }

private:
  // Row `row`'s units [k0, k0 + 16) of the block (fewer at its end) from their products p.
  void finish(unsigned t, unsigned row, unsigned k0, const float *p) {
    const unsigned rows = hState.size(), m = numUnits - k0 < 16 ? numUnits - k0 : 16;
    const unsigned u0 = firstUnit + k0;
    const T *xs = x.data() + (t * rows + row) * H + u0, *bs = bias.data() + u0;
    float v[16];
    for (unsigned j = 0; j < m; ++j)
      v[j] = cell::vanillaSum(T(p[j]), xs[j], bs[j]);
    if (nonLinearity == unsigned(NonLinearityType::TANH))
      for (unsigned j = 0; j < m; ++j)
        v[j] = cell::Fixed<NonLinearityType::TANH>().forward(v[j]);
    else
      for (unsigned j = 0; j < m; ++j)
        v[j] = cell::Dynamic{NonLinearityType(nonLinearity)}.forward(v[j]);
    T *h = hState[row].data() + k0, *o = out[t * rows + row].data() + k0;
    for (unsigned j = 0; j < m; ++j) {
      h[j] = T(v[j]);
      o[j] = T(v[j]);
    }
  }
};

// The vanilla RNN's unfused step after its product pre = h_{t-1} . Wfb (the step builder's
// "cell" phase, lib/nn/CellSteps.cpp): h_t = nl(pre + x_t + b), rounded to T after each
// addition and after the non-linearity, as the add, add and non-linearity vertices of popnn's
// step would (RnnFusedFwd finishes its units the same way); h_t goes to the state and to the
// step's output. softmax: 0 an element-wise nonLinearity (workers split the elements), 1 or 2
// a softmax over each row, 2 the stable one, scaled by outputScale (workers split the rows).
template <class T> class RnnCellFwd : public MultiVertex {
public:
  Vector<Input<Vector<T>>> pre;
  Vector<Input<Vector<T>>> x;
  Input<Vector<T>> bias;
  Vector<InOut<Vector<T>>> hState;
  Vector<Output<Vector<T>>> out;
  unsigned nonLinearity;
  unsigned softmax;
  float outputScale;
  bool compute(unsigned workerId) {
    const unsigned rows = hState.size(), H = bias.size();
    if (pre.size() != rows || x.size() != rows || out.size() != rows)
      return false;
    if (softmax != 0) {
      for (unsigned r = workerId; r < rows; r += numWorkers()) {
        for (unsigned k = 0; k < H; ++k)
          hState[r][k] = sum(r, k);
        if (softmax == 2)
          nnSoftmaxRow<T, true>(hState[r], hState[r], outputScale);
        else
          nnSoftmaxRow<T, false>(hState[r], hState[r], outputScale);
        for (unsigned k = 0; k < H; ++k)
          out[r][k] = hState[r][k];
      }
      return true;
    }
    unsigned lo, hi;
    ::aspen::detail::workerShare(rows * H, workerId, numWorkers(), lo, hi);
    const cell::Dynamic nl{NonLinearityType(nonLinearity)};
    for (unsigned e = lo; e < hi; ++e) {
      const unsigned r = e / H, k = e % H;
      const T h = T(nl.forward(float(sum(r, k))));
      hState[r][k] = h;
      out[r][k] = h;
    }
    return true;
  }

private:
  T sum(unsigned r, unsigned k) const {
    return T(cell::vanillaSum(T(pre[r][k]), T(x[r][k]), T(bias[k])));
  }
};

// The vanilla RNN's unfused backward step before its product dhMM' = delta_t . Wfb^T (the step
// builder's "grad" phase): delta_t = nl'(y_t) * (dy_t + dhMM), the sum rounded to T, as the add
// and gradient vertices of popnn's step would (RnnFusedBwd takes its units' gradient the same
// way). softmax non-zero: popnn's softmax gradient of each row (SoftmaxGrad's rule; workers
// split the rows), else the element-wise nonLinearity's (workers split the elements).
template <class T> class RnnCellBwd : public MultiVertex {
public:
  Vector<Input<Vector<T>>> y;
  Vector<Input<Vector<T>>> dy;
  Vector<Input<Vector<T>>> dhMM;
  Vector<Output<Vector<T>>> delta;
  unsigned nonLinearity;
  unsigned softmax;
  bool compute(unsigned workerId) {
    const unsigned rows = delta.size(), H = rows ? delta[0].size() : 0;
    if (y.size() != rows || dy.size() != rows || dhMM.size() != rows)
      return false;
    if (softmax != 0) {
      for (unsigned r = workerId; r < rows; r += numWorkers()) {
        for (unsigned k = 0; k < H; ++k) // the incoming gradient, then in place its input's
          delta[r][k] = T(float(dhMM[r][k]) + float(dy[r][k])); // as vanillaDelta sums it
        nnSoftmaxGradRow<T>(y[r], delta[r], delta[r]);
      }
      return true;
    }
    unsigned lo, hi;
    ::aspen::detail::workerShare(rows * H, workerId, numWorkers(), lo, hi);
    for (unsigned e = lo; e < hi; ++e) {
      const unsigned r = e / H, k = e % H;
      delta[r][k] = cell::vanillaDelta(NonLinearityType(nonLinearity), T(y[r][k]),
                                       T(dhMM[r][k]), T(dy[r][k]));
    }
    return true;
  }
};

template class RnnCellFwd<float>;
template class RnnCellFwd<half>;
template class RnnCellBwd<float>;
template class RnnCellBwd<half>;

// One step's input product of a fused recurrent loop whose steps weigh their input (the GRU
// with preCalcWeights false): out = x_t . Wi for the units [firstUnit, firstUnit + numUnits)
// of each of `gates` gates (packed by PackUnitPanels: [blocks of 16][gates][K][16]), summed in
// float in increasing k (packed::forBlockPairs) and rounded once to T. t = time[0]; x is the
// whole [steps][rows][K] sequence, `out` lists per step and row one segment per gate of the
// vertex's units (steps x rows x gates). A time past the steps fails.
template <class T> class RnnStepProduct : public MultiVertex {
public:
  Input<Vector<unsigned>> time;
  Input<Vector<T>> x;
  Input<Vector<float>> packed;
  Vector<Output<Vector<T>>> out;
  unsigned K;
  unsigned rows;
  unsigned gates;
  unsigned numUnits;
  unsigned steps;
  bool compute(unsigned workerId) {
    const unsigned t = time[0];
    if (t >= steps || rows == 0 || gates == 0 || out.size() != steps * rows * gates ||
        x.size() != steps * rows * K)
      return false;
    const unsigned blocks = (numUnits + 15) / 16;
    unsigned lo, hi; // this worker's (block, gate) panels, q = block * gates + gate
    ::aspen::detail::workerShare(blocks * gates, workerId, numWorkers(), lo, hi);
    packed::forBlockPairs(x.data() + (unsigned long long)t * rows * K, K, rows, lo, hi,
                          packed.data(), (unsigned long long)K * packed::kPanel,
                          [&](unsigned row, unsigned q, const float *p) {
                            const unsigned b = q / gates, g = q % gates, k0 = 16 * b;
                            const unsigned m = numUnits - k0 < 16 ? numUnits - k0 : 16;
                            T *o = out[(t * rows + row) * gates + g].data() + k0;
                            for (unsigned j = 0; j < m; ++j)
                              o[j] = T(p[j]);
                          });
    return true;
  }
};

template class RnnStepProduct<float>;
template class RnnStepProduct<half>;
template class RnnFusedFwd<float>;
template class RnnFusedFwd<half>;

// One backward step of the LSTM's fused loop (LstmBwd.cpp) for the units [firstUnit,
// firstUnit + U) of every row: dhMM = delta_{t+1} . Wo^T for those units (from the packed
// panels of Wo^T, 16 units a panel, K = 4H; zero at the last step), rounded to T as the
// product-then-cell step's matMul output is, then LstmCellBwd's cell on it (the same function,
// bwdElements). The clock counts i = time[0] up and the step is t = steps - 1 - i. deltaAll
// is the whole [steps][B][4H] sequence of gate gradients (slot columns): the step reads row
// t + 1 of it and writes its units of row t through `delta` (steps x B x 4 segments, step, row,
// canonical gate). fwd (steps x B x 4: the saved gates, canonical), cell (steps x B x 2) and
// outGrad (steps x B, when hasOutGrad) are the step's inputs; dhCarry and dcState (one segment
// a row) are updated in place. Element-wise activations only. Workers split blocks of 16 units.
template <class T> class LstmFusedBwd : public MultiVertex {
public:
  Input<Vector<unsigned>> time;
  Input<Vector<unsigned>> lengths;
  Input<Vector<T>> deltaAll;
  Input<Vector<float>> packed;
  Vector<Input<Vector<T>>> fwd;
  Vector<Input<Vector<T>>> cell;
  Vector<Input<Vector<T>>> outGrad;
  Vector<InOut<Vector<T>>> dhCarry;
  Vector<InOut<Vector<T>>> dcState;
  Vector<InOut<Vector<T>>> delta;
  unsigned H;
  unsigned numUnits;
  unsigned steps;
  unsigned activation;
  unsigned recurrentActivation;
  bool rawCell;
  bool rawCandidate;
  bool hasOutGrad;
  bool popnnHardSigmoidGrad;
  unsigned cellClipMode; // the cell clip (cell::CellClip): 0 none
  float cellClipMin;
  float cellClipMax;
  cell::CellClip cellClip() const { return {cellClipMode, cellClipMin, cellClipMax}; }

  bool compute(unsigned workerId) {
    const unsigned rows = dcState.size(), i = time[0];
    if (i >= steps || dhCarry.size() != rows || fwd.size() != steps * rows * 4 ||
        cell.size() != steps * rows * 2 || delta.size() != steps * rows * 4 ||
        (hasOutGrad && outGrad.size() != steps * rows) ||
        deltaAll.size() != steps * rows * 4 * H)
      return false;
    const unsigned t = steps - 1 - i;
    unsigned lo, hi;
    ::aspen::detail::workerShare((numUnits + 15) / 16, workerId, numWorkers(), lo, hi);
    const bool fixed = recurrentActivation == unsigned(NonLinearityType::SIGMOID) &&
                       activation == unsigned(NonLinearityType::TANH);
    const T *next = t + 1 < steps ? deltaAll.data() + (t + 1) * rows * 4 * H : nullptr;
    packed::forBlockPairs(next, 4 * H, rows, lo, hi, packed.data(),
                          (unsigned long long)4 * H * packed::kPanel,
                          [&](unsigned row, unsigned b, const float *p) {
                            const unsigned k0 = 16 * b;
                            const unsigned m = numUnits - k0 < 16 ? numUnits - k0 : 16;
                            Row v;
                            load(v, t, row, k0, p, m);
                            if (fixed)
                              lstm_cell::bwdElements<T>(
                                  v, 0, 0, m, cell::Fixed<NonLinearityType::SIGMOID>(),
                                  cell::Fixed<NonLinearityType::TANH>(), cellClip());
                            else
                              lstm_cell::bwdElements<T>(
                                  v, 0, 0, m,
                                  cell::Dynamic{NonLinearityType(recurrentActivation),
                                                popnnHardSigmoidGrad},
                                  cell::Dynamic{NonLinearityType(activation),
                                                popnnHardSigmoidGrad},
                                  cellClip());
                          });
    return true;
  }

private:
  // One row's elements [k0, k0 + m) as bwdElements reads them (its row 0): segments from unit
  // k0 of the block, dhMM from the local product.
  struct Seg {
    T *p;
    ASPEN_HD T *data() const { return p; }
  };
  struct Row {
    Seg fwd[4], cell[2], outGrad[1], dhMM[1], dhCarry[1], dcState[1], delta[4];
    T mask[1];
    T mm[16];
    bool rawCell, rawCandidate, hasOutGrad;
  };
  void load(Row &v, unsigned t, unsigned row, unsigned k0, const float *product, unsigned m) {
    const unsigned rows = dcState.size(), at = t * rows + row;
    auto seg = [&](const T *p) { return Seg{const_cast<T *>(p) + k0}; };
    for (unsigned g = 0; g < 4; ++g) {
      v.fwd[g] = seg(fwd[at * 4 + g].data());
      v.delta[g] = seg(delta[at * 4 + g].data());
    }
    v.cell[0] = seg(cell[at * 2].data());
    v.cell[1] = seg(cell[at * 2 + 1].data());
    v.outGrad[0] = hasOutGrad ? seg(outGrad[at].data()) : v.cell[0]; // unread without
    v.dhCarry[0] = seg(dhCarry[row].data());
    v.dcState[0] = seg(dcState[row].data());
    for (unsigned j = 0; j < m; ++j)
      v.mm[j] = T(product[j]);
    v.dhMM[0] = Seg{v.mm};
    const unsigned length = lengths.size() == 1 ? lengths[0] : lengths[row];
    v.mask[0] = T(t < length ? 1.0f : 0.0f);
    v.rawCell = rawCell;
    v.rawCandidate = rawCandidate;
    v.hasOutGrad = hasOutGrad;
  }
};

template class LstmFusedBwd<float>;
template class LstmFusedBwd<half>;

// One backward step of the vanilla RNN's fused loop (Recurrent.cpp's rnnBwdSequence) for the
// units [firstUnit, firstUnit + U) of every row: delta_t = nl'(y_t) * (dy_t + delta_{t+1} .
// Wfb^T), the product from the packed panels of Wfb^T (zero at the last step) rounded to T, dy_t
// added and the gradient taken as the unfused step's addInPlace and nonLinearityInputGradient
// do. The clock counts i = time[0] up and the step is t = steps - 1 - i; deltaAll is the whole
// [steps][B][H] sequence of deltas, row t + 1 read and this vertex's units of row t written
// through `delta` (steps x B segments); y and dy (steps x B segments) are the step's inputs.
// Element-wise non-linearities only. Workers split pairs of 16-unit blocks.
template <class T> class RnnFusedBwd : public MultiVertex {
public:
  Input<Vector<unsigned>> time;
  Input<Vector<T>> deltaAll;
  Input<Vector<float>> packed;
  Vector<Input<Vector<T>>> y;
  Vector<Input<Vector<T>>> dy;
  Vector<InOut<Vector<T>>> delta;
  unsigned H;
  unsigned numUnits;
  unsigned steps;
  unsigned rows;
  unsigned nonLinearity;
  bool compute(unsigned workerId) {
    const unsigned i = time[0];
    if (i >= steps || y.size() != steps * rows || dy.size() != steps * rows ||
        delta.size() != steps * rows || deltaAll.size() != steps * rows * H)
      return false;
    const unsigned t = steps - 1 - i;
    unsigned lo, hi;
    ::aspen::detail::workerShare((numUnits + 15) / 16, workerId, numWorkers(), lo, hi);
    const T *next = t + 1 < steps ? deltaAll.data() + (t + 1) * rows * H : nullptr;
    packed::forBlockPairs(next, H, rows, lo, hi, packed.data(),
                          (unsigned long long)H * packed::kPanel,
                          [&](unsigned row, unsigned b, const float *p) {
                            const unsigned at = t * rows + row, k0 = 16 * b;
                            const unsigned m = numUnits - k0 < 16 ? numUnits - k0 : 16;
                            const T *ys = y[at].data() + k0, *gs = dy[at].data() + k0;
                            T *d = delta[at].data() + k0;
                            for (unsigned j = 0; j < m; ++j)
                              d[j] = cell::vanillaDelta(NonLinearityType(nonLinearity), ys[j],
                                                        T(p[j]), gs[j]);
                          });
    return true;
  }
};

template class RnnFusedBwd<float>;
template class RnnFusedBwd<half>;

// The fused loop's clock: next = time + 1, in the other of the loop's two counters, so the
// step's vertices read one while this writes the other in the same compute set.
class RnnAdvanceTime : public Vertex {
public:
  Input<Vector<unsigned>> time;
  Output<Vector<unsigned>> next;
  bool compute() {
    next[0] = time[0] + 1;
    return true;
  }
};

template class LstmFusedFwd<float>;
template class LstmFusedFwd<half>;

template class LstmCellFwd<float>;
template class LstmCellFwd<half>;
template class LstmCellBwd<float>;
template class LstmCellBwd<half>;
template class LstmCellRecompute<float>;
template class LstmCellRecompute<half>;
// Row `row`'s length from lengths ([B], or [1] for every row), capped at `steps`.
ASPEN_HD inline unsigned rowLength(const unsigned *lengths, unsigned count, unsigned row,
                                   unsigned steps) {
  const unsigned length = count == 1 ? lengths[0] : lengths[row];
  return length < steps ? length : steps;
}

// Dropout between the layers of a stack (rnn::dropoutSequence, docs/recurrent.md): element i of
// a [T, B, W] sequence, i = (tc * B + b) * W + column, is kept when
//   (mix(key + i) >> 11) >= threshold   (threshold = ceil(rate * 2^53))
// mix being SplitMix64's step, and becomes in * scale, else 0 (scale = 1 / (1 - rate), the
// product in float, rounded once to T). key = keyHi:keyLo, threshold = thresholdHi:thresholdLo.
// `in` and `out` list, per step and row, this vertex's columns [firstColumn, firstColumn + n)
// (steps x B segments). With oneStep the vertex takes step t = time[0] alone, else every step.
// tc is the step's place in the caller's order: t, or for reversed (a sequence held in a
// reverse layer's run order) len_b - 1 - t while t < len_b (lengths [B], or [1] for every row,
// capped at the steps). Workers split the rows.
template <class T> class RnnDropout : public MultiVertex {
public:
  Input<Vector<unsigned>> time;
  Input<Vector<unsigned>> lengths;
  Vector<Input<Vector<T>>> in;
  Vector<Output<Vector<T>>> out;
  unsigned batch;
  unsigned width;
  unsigned firstColumn;
  unsigned keyLo, keyHi;
  unsigned thresholdLo, thresholdHi;
  float scale;
  bool oneStep;
  bool reversed;

  static unsigned long long mix(unsigned long long z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  bool compute(unsigned workerId) {
    if (batch == 0 || in.size() != out.size() || out.size() % batch != 0)
      return false;
    const unsigned steps = out.size() / batch;
    const unsigned first = oneStep ? time[0] : 0u, last = oneStep ? first + 1 : steps;
    if (last > steps)
      return false;
    const unsigned long long key = (static_cast<unsigned long long>(keyHi) << 32) | keyLo;
    const unsigned long long threshold =
        (static_cast<unsigned long long>(thresholdHi) << 32) | thresholdLo;
    for (unsigned t = first; t < last; ++t)
      for (unsigned b = workerId; b < batch; b += numWorkers()) {
        const unsigned length = rowLength(lengths.data(), lengths.size(), b, steps);
        const unsigned tc = reversed && t < length ? length - 1 - t : t;
        const unsigned long long row =
            (static_cast<unsigned long long>(tc) * batch + b) * width + firstColumn;
        const unsigned s = t * batch + b;
        if (in[s].size() != out[s].size())
          return false;
        for (unsigned k = 0; k < out[s].size(); ++k) {
          const bool keep = (mix(key + row + k) >> 11) >= threshold;
          out[s][k] = T(float(in[s][k]) * (keep ? scale : 0.0f));
        }
      }
    return true;
  }
};

// A recurrent layer's final output state from its output sequence: row b's output at its last
// step -- step len_b - 1 forward, step 0 for a reverse layer (outputs in the caller's order) --
// or its initial state when len_b = 0 (lengths [B] or [1], capped at the steps). seq lists the
// row's steps (one segment each), init and out are the row's [W].
template <class T> class RnnFinalState : public Vertex {
public:
  Input<Vector<unsigned>> lengths;
  Vector<Input<Vector<T>>> seq;
  Input<Vector<T>> init;
  Output<Vector<T>> out;
  unsigned row;
  bool reverse;
  bool compute() {
    const unsigned length = rowLength(lengths.data(), lengths.size(), row, seq.size());
    if (init.size() != out.size())
      return false;
    const T *src = init.data();
    if (length > 0) {
      const unsigned t = reverse ? 0u : length - 1;
      if (seq[t].size() != out.size())
        return false;
      src = seq[t].data();
    }
    for (unsigned k = 0; k < out.size(); ++k)
      out[k] = src[k];
    return true;
  }
};

// The gradient of a layer's final output state (RnnFinalState's) folded into its output
// sequence's gradient: `grad` (the row's [W]) is added to the row's step at its last step --
// len_b - 1, or 0 for a reverse layer (caller's order) -- in `seq` (the row's steps, one segment
// each), and `rest` receives it when len_b = 0 (the final state is then the initial state),
// else zeros. Sums in float, rounded once to T.
template <class T> class RnnLastStepGrad : public Vertex {
public:
  Input<Vector<unsigned>> lengths;
  Vector<InOut<Vector<T>>> seq;
  Input<Vector<T>> grad;
  Output<Vector<T>> rest;
  unsigned row;
  bool reverse;
  bool compute() {
    const unsigned length = rowLength(lengths.data(), lengths.size(), row, seq.size());
    if (rest.size() != grad.size())
      return false;
    for (unsigned k = 0; k < rest.size(); ++k)
      rest[k] = T(length == 0 ? float(grad[k]) : 0.0f);
    if (length == 0)
      return true;
    const unsigned t = reverse ? 0u : length - 1;
    if (seq[t].size() != grad.size())
      return false;
    for (unsigned k = 0; k < grad.size(); ++k)
      seq[t][k] = T(float(seq[t][k]) + float(grad[k]));
    return true;
  }
};

template class RnnDropout<float>;
template class RnnLastStepGrad<float>;
template class RnnLastStepGrad<half>;
template class RnnDropout<half>;
template class RnnFinalState<float>;
template class RnnFinalState<half>;
template class RnnMaskedRows<float>;
template class RnnMaskedRows<half>;
template class LstmProjectionGrad<float>;
template class LstmProjectionGrad<half>;

} // namespace aspen::nn
