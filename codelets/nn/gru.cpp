// The GRU and AUGRU cells (aspen::nn::gru), forward and backward.
//
// Like the LSTM cells (rnn.cpp) a vertex holds R rows of the [B, H] state; its 2-D fields list,
// per row, one segment per gate in the canonical order (reset, update, candidate) whatever the
// weights' cell order. Arithmetic in float, half rounded once on store. Each worker takes whole
// rows (the AUGRU's attention gradient sums a row), processed in vectorisable chunks. Rows whose
// mask is 0 keep their state and write zeros (outputs, intermediates, gradients), carrying the
// state gradient unchanged.
//
// resetAfter false runs two phases a step around the product (r*h).Wo_c:
//   GruCellA  r = rho(xw_r + hw_r + b_r), u = rho(xw_u + hw_u + b_u) (AUGRU: u *= 1 - a), r*h
//   GruCellB  c = phi(xw_c + (r*h).Wo_c + b_c), h = u*h + (1-u)*c
// resetAfter true one: GruCellResetAfter with n = hw_c + bh_c and c = phi(xw_c + bx_c + r*n).
// Backward: GruBwdA (delta_c, delta_u, d(attention), dh*u) and GruBwdB (delta_r, + d(r*h)*r)
// around the product delta_c . Wo_c^T; GruBwdResetAfter in one phase.
#include "RnnCellMath.hpp"
#include "GruCellMath.hpp"
// after RnnCellMath.hpp, which brings the codelet headers (ASPEN_HD)
#include "PackedProduct.hpp"

namespace aspen::nn {


// Forward phase A (resetAfter false): per row, the reset and update gates (written to `gates`,
// 2 segments a row) and r*h (`rh`). xw: 3 segments a row (the pre-weighted input), hw: 2 (h.Wo_r,
// h.Wo_u), bias: 3; attention: this step's a per row (read when hasAttention).
template <class T> class GruCellA : public MultiVertex {
public:
  Vector<Input<Vector<T>>> xw;
  Vector<Input<Vector<T>>> hw;
  Vector<Input<Vector<T>>> bias;
  Vector<Input<Vector<T>>> h;
  Input<Vector<T>> attention;
  Input<Vector<T>> mask;
  Vector<Output<Vector<T>>> gates;
  Vector<Output<Vector<T>>> rh;
  // With the activation clip (activationClip > 0, ONNX's clip, element-wise activations only):
  // the clipped pre-activations of r and u, 2 segments a row (empty without).
  Vector<Output<Vector<T>>> pre;
  unsigned activation;
  unsigned recurrentActivation;
  bool hasAttention;
  float activationClip;
  bool compute(unsigned workerId) {
    using namespace gru_cell;
    const ActClip act{activationClip};
    const bool clipped = activationClip > 0.0f;
    for (unsigned r = workerId; r < h.size(); r += numWorkers()) {
      const unsigned n = h[r].size();
      T *outR = gates[2 * r].data(), *outU = gates[2 * r + 1].data(), *outRh = rh[r].data();
      if (float(mask[r]) == 0.0f) {
        zero(outR, n), zero(outU, n), zero(outRh, n);
        if (clipped)
          zero(pre[2 * r].data(), n), zero(pre[2 * r + 1].data(), n);
        continue;
      }
      const float keep = hasAttention ? 1.0f - float(attention[r]) : 1.0f;
      const T *xr = xw[3 * r + R].data(), *xu = xw[3 * r + U].data();
      const T *hr = hw[2 * r].data(), *hu = hw[2 * r + 1].data();
      const T *br = bias[R].data(), *bu = bias[U].data(), *hp = h[r].data();
      if (isSoftmaxKind(recurrentActivation)) {
        // Softmax over the row: its statistics first.
        auto preR = [&](unsigned k) { return float(xr[k]) + float(hr[k]) + float(br[k]); };
        auto preU = [&](unsigned k) { return float(xu[k]) + float(hu[k]) + float(bu[k]); };
        const RowStats sr = softmaxStats(n, preR), su = softmaxStats(n, preU);
        for (unsigned k = 0; k < n; ++k) {
          const float vr = activate(recurrentActivation, preR(k), sr);
          outR[k] = T(vr);
          outU[k] = T(activate(recurrentActivation, preU(k), su) * keep);
          outRh[k] = T(vr * float(hp[k]));
        }
        continue;
      }
      withActivations(recurrentActivation, activation, [&](auto rho, auto) {
        for (unsigned k0 = 0; k0 < n; k0 += kChunk) {
          const unsigned m = n - k0 < kChunk ? n - k0 : kChunk;
          float vr[kChunk], vu[kChunk], vh[kChunk];
          for (unsigned j = 0; j < m; ++j) {
            const unsigned k = k0 + j;
            vr[j] = float(xr[k]) + float(hr[k]) + float(br[k]);
            vu[j] = float(xu[k]) + float(hu[k]) + float(bu[k]);
            vh[j] = float(hp[k]);
          }
          if (clipped)
            for (unsigned j = 0; j < m; ++j) {
              vr[j] = act.apply(vr[j]);
              vu[j] = act.apply(vu[j]);
              pre[2 * r][k0 + j] = T(vr[j]);
              pre[2 * r + 1][k0 + j] = T(vu[j]);
            }
          for (unsigned j = 0; j < m; ++j) {
            vr[j] = rho.forward(vr[j]);
            vu[j] = rho.forward(vu[j]) * keep;
            vh[j] = vr[j] * vh[j];
          }
          for (unsigned j = 0; j < m; ++j) {
            outR[k0 + j] = T(vr[j]);
            outU[k0 + j] = T(vu[j]);
            outRh[k0 + j] = T(vh[j]);
          }
        }
      });
    }
    return true;
  }
};

// Forward phase B (resetAfter false): c = phi(xw_c + chw + b_c), h = u*h + (1-u)*c. Writes c (or
// its pre-activation, rawCandidate) to `c`, h to `h` (in place) and `out`, and h to hSave when
// saveH.
template <class T> class GruCellB : public MultiVertex {
public:
  Vector<Input<Vector<T>>> xw;
  Vector<Input<Vector<T>>> chw;
  Vector<Input<Vector<T>>> bias;
  Vector<Input<Vector<T>>> u;
  Vector<InOut<Vector<T>>> h;
  Input<Vector<T>> mask;
  Vector<Output<Vector<T>>> c;
  Vector<Output<Vector<T>>> out;
  Vector<Output<Vector<T>>> hSave;
  unsigned activation;
  bool rawCandidate;
  bool saveH;
  float activationClip; // ONNX's clip of the candidate's pre-activation (rawCandidate then)
  bool compute(unsigned workerId) {
    using namespace gru_cell;
    const ActClip act{activationClip};
    for (unsigned r = workerId; r < h.size(); r += numWorkers()) {
      const unsigned n = h[r].size();
      T *outC = c[r].data(), *outY = out[r].data(), *state = h[r].data();
      T *outH = saveH ? hSave[r].data() : outY;
      if (float(mask[r]) == 0.0f) {
        zero(outC, n), zero(outY, n), zero(outH, n);
        continue;
      }
      const T *xc = xw[r].data(), *hc = chw[r].data(), *bc = bias[0].data(), *uu = u[r].data();
      if (isSoftmaxKind(activation)) {
        auto preC = [&](unsigned k) { return float(xc[k]) + float(hc[k]) + float(bc[k]); };
        const RowStats sc = softmaxStats(n, preC);
        for (unsigned k = 0; k < n; ++k) {
          const float vc = activate(activation, preC(k), sc), vu = float(uu[k]);
          const float vh = vu * float(state[k]) + (1.0f - vu) * vc;
          outC[k] = T(vc);
          state[k] = T(vh);
          outY[k] = T(vh);
          if (saveH)
            outH[k] = T(vh);
        }
        continue;
      }
      withActivations(unsigned(NonLinearityType::SIGMOID), activation, [&](auto, auto phi) {
        for (unsigned k0 = 0; k0 < n; k0 += kChunk) {
          const unsigned m = n - k0 < kChunk ? n - k0 : kChunk;
          float pre[kChunk], vc[kChunk], vh[kChunk];
          for (unsigned j = 0; j < m; ++j) {
            const unsigned k = k0 + j;
            pre[j] = act.apply(float(xc[k]) + float(hc[k]) + float(bc[k]));
          }
          for (unsigned j = 0; j < m; ++j) {
            const unsigned k = k0 + j;
            vc[j] = phi.forward(pre[j]);
            const float vu = float(uu[k]);
            vh[j] = vu * float(state[k]) + (1.0f - vu) * vc[j];
          }
          for (unsigned j = 0; j < m; ++j) {
            const unsigned k = k0 + j;
            outC[k] = T(rawCandidate ? pre[j] : vc[j]);
            state[k] = T(vh[j]);
            outY[k] = T(vh[j]);
            if (saveH)
              outH[k] = T(vh[j]);
          }
        }
      });
    }
    return true;
  }
};

// Forward (resetAfter true): per row xw and hw 3 segments each, bias 6 (input r, u, c then
// recurrent r, u, c); inter n segments a row [r, u, c, (h), n].
template <class T> class GruCellResetAfter : public MultiVertex {
public:
  Vector<Input<Vector<T>>> xw;
  Vector<Input<Vector<T>>> hw;
  Vector<Input<Vector<T>>> bias;
  Vector<InOut<Vector<T>>> h;
  Input<Vector<T>> attention;
  Input<Vector<T>> mask;
  Vector<Output<Vector<T>>> inter;
  Vector<Output<Vector<T>>> out;
  Vector<Output<Vector<T>>> pre; // as GruCellA's
  unsigned activation;
  unsigned recurrentActivation;
  bool hasAttention;
  bool rawCandidate;
  bool saveH;
  float activationClip; // as GruCellA's, and the candidate's pre-activation (rawCandidate)
  bool compute(unsigned workerId) {
    using namespace gru_cell;
    const ActClip act{activationClip};
    const bool clipped = activationClip > 0.0f;
    const bool softmax = isSoftmaxKind(activation) || isSoftmaxKind(recurrentActivation);
    const unsigned ni = saveH ? 5u : 4u;
    for (unsigned r = workerId; r < h.size(); r += numWorkers()) {
      ResetAfterRow<T> w;
      w.n = h[r].size();
      w.sr = inter[ni * r].data(), w.su = inter[ni * r + 1].data();
      w.sc = inter[ni * r + 2].data(), w.sn = inter[ni * r + ni - 1].data();
      w.sh = saveH ? inter[ni * r + 3].data() : w.sc;
      w.state = h[r].data(), w.out = out[r].data();
      if (float(mask[r]) == 0.0f) {
        zero(w.sr, w.n), zero(w.su, w.n), zero(w.sc, w.n), zero(w.sh, w.n), zero(w.sn, w.n);
        zero(w.out, w.n);
        if (clipped)
          zero(pre[2 * r].data(), w.n), zero(pre[2 * r + 1].data(), w.n);
        continue;
      }
      w.keep = hasAttention ? 1.0f - float(attention[r]) : 1.0f;
      w.xr = xw[3 * r + R].data(), w.xu = xw[3 * r + U].data(), w.xc = xw[3 * r + C].data();
      w.hr = hw[3 * r + R].data(), w.hu = hw[3 * r + U].data(), w.hc = hw[3 * r + C].data();
      w.bxr = bias[0].data(), w.bxu = bias[1].data(), w.bxc = bias[2].data();
      w.bhr = bias[3].data(), w.bhu = bias[4].data(), w.bhc = bias[5].data();
      w.rawCandidate = rawCandidate, w.saveH = saveH;
      if (softmax)
        resetAfterSoftmaxRow(w, activation, recurrentActivation);
      else
        resetAfterChunkedRow(w, activation, recurrentActivation, act,
                             clipped ? pre[2 * r].data() : static_cast<T *>(nullptr),
                             clipped ? pre[2 * r + 1].data() : static_cast<T *>(nullptr));
    }
    return true;
  }
};


// Backward phase A (resetAfter false). fwd: 3 segments a row (r, u, c); delta: 3 segments a row
// in canonical order (this phase writes u and c); dhCarry: in, dh's carried part; out, dh * u
// (masked rows: dhMM + dhCarry); attGrad: this step's d(a) per row (when hasAttention).
template <class T> class GruBwdA : public MultiVertex {
public:
  Vector<Input<Vector<T>>> fwd;
  Vector<Input<Vector<T>>> hPrev;
  Vector<Input<Vector<T>>> outGrad;
  Vector<Input<Vector<T>>> dhMM;
  Vector<InOut<Vector<T>>> dhCarry;
  Input<Vector<T>> attention;
  Input<Vector<T>> mask;
  Vector<Output<Vector<T>>> delta;
  Output<Vector<T>> attGrad;
  // With the activation clip: the update's clipped pre-activation, 1 segment a row (the
  // candidate's is fwd's c, raw).
  Vector<Input<Vector<T>>> pre;
  unsigned activation;
  unsigned recurrentActivation;
  bool hasAttention;
  bool hasOutGrad;
  bool rawCandidate;
  bool popnnHardSigmoidGrad; // HARD_SIGMOID's gradient by popnn's rule (RnnCellMath.hpp)
  float activationClip;
  bool compute(unsigned workerId) {
    using namespace gru_cell;
    for (unsigned r = workerId; r < dhCarry.size(); r += numWorkers()) {
      const unsigned n = dhCarry[r].size();
      T *dU = delta[3 * r + U].data(), *dC = delta[3 * r + C].data(), *carry = dhCarry[r].data();
      const T *mm = dhMM[r].data();
      if (float(mask[r]) == 0.0f) {
        zero(dU, n), zero(dC, n);
        for (unsigned k = 0; k < n; ++k)
          carry[k] = T(float(mm[k]) + float(carry[k]));
        if (hasAttention)
          attGrad[r] = T(0.0f);
        continue;
      }
      const T *su = fwd[3 * r + U].data(), *sc = fwd[3 * r + C].data(), *hp = hPrev[r].data();
      const T *dy = outGrad[r].data();
      float dAttSum = 0.0f;
      if (isSoftmaxKind(activation) || isSoftmaxKind(recurrentActivation)) {
        // Softmax gradients need the row's sums of upstream * output first.
        const float keep = hasAttention ? 1.0f - float(attention[r]) : 1.0f;
        auto dhAt = [&](unsigned k) {
          return float(mm[k]) + float(carry[k]) + (hasOutGrad ? float(dy[k]) : 0.0f);
        };
        auto ut = [&](unsigned k) { return keep != 0.0f ? float(su[k]) / keep : 0.0f; };
        float dotC = 0.0f, dotU = 0.0f;
        for (unsigned k = 0; k < n; ++k) {
          const float dh = dhAt(k), u = float(su[k]), c = float(sc[k]);
          dotC += dh * (1.0f - u) * c;
          dotU += dh * (float(hp[k]) - c) * keep * ut(k);
        }
        for (unsigned k = 0; k < n; ++k) {
          const float dh = dhAt(k), u = float(su[k]), c = float(sc[k]);
          const float du = dh * (float(hp[k]) - c);
          dC[k] = T(gradient(activation, c, dh * (1.0f - u), dotC, popnnHardSigmoidGrad));
          dU[k] = T(gradient(recurrentActivation, ut(k), du * keep, dotU, popnnHardSigmoidGrad));
          dAttSum += -du * ut(k);
          carry[k] = T(dh * u);
        }
        if (hasAttention)
          attGrad[r] = T(dAttSum);
        continue;
      }
      withActivations(recurrentActivation, activation, [&](auto rho, auto phi) {
        const BwdCommon<decltype(rho), decltype(phi)> common{
            rho, phi, rawCandidate, hasAttention ? 1.0f - float(attention[r]) : 1.0f,
            ActClip{activationClip}};
        const T *pu = activationClip > 0.0f ? pre[r].data() : nullptr;
        dAttSum = bwdAElements(BwdARow<T>{su, sc, hp, dy, mm, carry, dU, dC, pu}, 0, n,
                               hasOutGrad, common);
      }, popnnHardSigmoidGrad);
      if (hasAttention)
        attGrad[r] = T(dAttSum);
    }
    return true;
  }
};

// Backward phase B (resetAfter false): drh = delta_c . Wo_c^T; writes delta_r (segment of
// `delta`, one a row) and adds drh * r to dhCarry.
template <class T> class GruBwdB : public MultiVertex {
public:
  Vector<Input<Vector<T>>> reset;
  Vector<Input<Vector<T>>> hPrev;
  Vector<Input<Vector<T>>> drh;
  Input<Vector<T>> mask;
  Vector<InOut<Vector<T>>> dhCarry;
  Vector<Output<Vector<T>>> delta;
  Vector<Input<Vector<T>>> pre; // the reset's clipped pre-activation, with the activation clip
  unsigned recurrentActivation;
  bool popnnHardSigmoidGrad; // HARD_SIGMOID's gradient by popnn's rule (RnnCellMath.hpp)
  float activationClip;
  bool compute(unsigned workerId) {
    using namespace gru_cell;
    for (unsigned r = workerId; r < dhCarry.size(); r += numWorkers()) {
      const unsigned n = dhCarry[r].size();
      T *dR = delta[r].data(), *carry = dhCarry[r].data();
      if (float(mask[r]) == 0.0f) {
        zero(dR, n);
        continue;
      }
      const T *sr = reset[r].data(), *hp = hPrev[r].data(), *g = drh[r].data();
      if (isSoftmaxKind(recurrentActivation)) {
        float dot = 0.0f;
        for (unsigned k = 0; k < n; ++k)
          dot += float(g[k]) * float(hp[k]) * float(sr[k]);
        for (unsigned k = 0; k < n; ++k) {
          const float rr = float(sr[k]), gg = float(g[k]);
          dR[k] = T(gradient(recurrentActivation, rr, gg * float(hp[k]), dot,
                             popnnHardSigmoidGrad));
          carry[k] = T(float(carry[k]) + gg * rr);
        }
        continue;
      }
      withActivations(recurrentActivation, unsigned(NonLinearityType::TANH),
                      [&](auto rho, auto) {
                        bwdBElements(sr, hp, g, dR, carry, 0, n, rho,
                                     activationClip > 0.0f ? pre[r].data() : nullptr,
                                     ActClip{activationClip});
                      },
                      popnnHardSigmoidGrad);
    }
    return true;
  }
};


// Backward (resetAfter true). fwd: 4 segments a row (r, u, c, n); deltaX: 3 segments a row
// (canonical; the gradients of x.Wi + bx: r, u, c), deltaH: 3 (of h.Wo + bh: r, u, n).
template <class T> class GruBwdResetAfter : public MultiVertex {
public:
  Vector<Input<Vector<T>>> fwd;
  Vector<Input<Vector<T>>> hPrev;
  Vector<Input<Vector<T>>> outGrad;
  Vector<Input<Vector<T>>> dhMM;
  Vector<InOut<Vector<T>>> dhCarry;
  Input<Vector<T>> attention;
  Input<Vector<T>> mask;
  Vector<Output<Vector<T>>> deltaX;
  Vector<Output<Vector<T>>> deltaH;
  Output<Vector<T>> attGrad;
  Vector<Input<Vector<T>>> pre; // with the activation clip: r's and u's, 2 segments a row
  unsigned activation;
  unsigned recurrentActivation;
  bool hasAttention;
  bool hasOutGrad;
  bool rawCandidate;
  bool popnnHardSigmoidGrad; // HARD_SIGMOID's gradient by popnn's rule (RnnCellMath.hpp)
  float activationClip;
  bool compute(unsigned workerId) {
    using namespace gru_cell;
    for (unsigned r = workerId; r < dhCarry.size(); r += numWorkers()) {
      const unsigned n = dhCarry[r].size();
      T *xR = deltaX[3 * r + R].data(), *xU = deltaX[3 * r + U].data(),
        *xC = deltaX[3 * r + C].data();
      T *hR = deltaH[3 * r + R].data(), *hU = deltaH[3 * r + U].data(),
        *hN = deltaH[3 * r + C].data();
      T *carry = dhCarry[r].data();
      const T *mm = dhMM[r].data();
      if (float(mask[r]) == 0.0f) {
        zero(xR, n), zero(xU, n), zero(xC, n), zero(hR, n), zero(hU, n), zero(hN, n);
        for (unsigned k = 0; k < n; ++k)
          carry[k] = T(float(mm[k]) + float(carry[k]));
        if (hasAttention)
          attGrad[r] = T(0.0f);
        continue;
      }
      const T *sr = fwd[4 * r].data(), *su = fwd[4 * r + 1].data(), *sc = fwd[4 * r + 2].data(),
              *sn = fwd[4 * r + 3].data(), *hp = hPrev[r].data(), *dy = outGrad[r].data();
      float dAttSum = 0.0f;
      if (isSoftmaxKind(activation) || isSoftmaxKind(recurrentActivation)) {
        const float keep = hasAttention ? 1.0f - float(attention[r]) : 1.0f;
        auto dhAt = [&](unsigned k) {
          return float(mm[k]) + float(carry[k]) + (hasOutGrad ? float(dy[k]) : 0.0f);
        };
        auto ut = [&](unsigned k) { return keep != 0.0f ? float(su[k]) / keep : 0.0f; };
        float dotC = 0.0f, dotU = 0.0f;
        for (unsigned k = 0; k < n; ++k) {
          const float dh = dhAt(k), u = float(su[k]), c = float(sc[k]);
          dotC += dh * (1.0f - u) * c;
          dotU += dh * (float(hp[k]) - c) * keep * ut(k);
        }
        auto dCandAt = [&](unsigned k) {
          return gradient(activation, float(sc[k]), dhAt(k) * (1.0f - float(su[k])), dotC,
                          popnnHardSigmoidGrad);
        };
        float dotR = 0.0f;
        for (unsigned k = 0; k < n; ++k)
          dotR += dCandAt(k) * float(sn[k]) * float(sr[k]);
        for (unsigned k = 0; k < n; ++k) {
          const float dh = dhAt(k), u = float(su[k]), c = float(sc[k]), rr = float(sr[k]);
          const float du = dh * (float(hp[k]) - c);
          const float dCand = dCandAt(k);
          const float dReset = gradient(recurrentActivation, rr, dCand * float(sn[k]), dotR,
                                             popnnHardSigmoidGrad);
          const float dUpd = gradient(recurrentActivation, ut(k), du * keep, dotU, popnnHardSigmoidGrad);
          xR[k] = hR[k] = T(dReset);
          xU[k] = hU[k] = T(dUpd);
          xC[k] = T(dCand);
          hN[k] = T(dCand * rr);
          dAttSum += -du * ut(k);
          carry[k] = T(dh * u);
        }
        if (hasAttention)
          attGrad[r] = T(dAttSum);
        continue;
      }
      withActivations(recurrentActivation, activation, [&](auto rho, auto phi) {
        const BwdCommon<decltype(rho), decltype(phi)> common{
            rho, phi, rawCandidate, hasAttention ? 1.0f - float(attention[r]) : 1.0f,
            ActClip{activationClip}};
        const bool clipped = activationClip > 0.0f;
        const BwdResetAfterRow<T> row{sr, su, sc, sn, hp, dy, mm, carry, xR, xU, xC, hR, hU, hN,
                                      clipped ? pre[2 * r].data() : nullptr,
                                      clipped ? pre[2 * r + 1].data() : nullptr};
        dAttSum = bwdResetAfterElements(row, 0, n, hasOutGrad, common);
      }, popnnHardSigmoidGrad);
      if (hasAttention)
        attGrad[r] = T(dAttSum);
    }
    return true;
  }
};

// One phase of one step of the GRU's fused loop for the units [firstUnit, firstUnit + U) of
// every row: the product with the packed panels fused with the cell, and the step's slicing and
// storing too (GruFused.cpp builds the loop):
//   phase 0 (resetAfter true): hw = hPrev . Wo for r, u and c, then GruCellResetAfter's cell;
//   phase 1 (resetAfter false): hw = hPrev . [Wo_r | Wo_u], then GruCellA's gates and r*h,
//     written to `rh` (U-element segments, one a row) for phase 2's product;
//   phase 2 (resetAfter false): chw = rhAll . Wo_c (r*h of every unit), then GruCellB's
//     candidate and state, with u read back from `inter`.
// t = time[0] (the absolute step) and i = t - begin, the step's place in the shard: xw is the
// shard's pre-weighted input ([steps][B][3H], canonical columns), attention its [steps][B]
// (when hasAttention), out its output (steps x B segments, or none) and inter the saved
// intermediates [r, u, c, (h), (n)], numInter segments a row and step, of step i when
// interPerStep, else of one step (an inference pass's scratch). Phases 0 and 2 read h_{t-1}
// from hPrev ([B][H]) and write h_t to hState (the other buffer, one segment a row). Each
// product is rounded to T before the cell adds it, as the product-then-cell step's matMul
// output is. A row past its length keeps its state and writes zeros; a block of rows all past
// their lengths skips its product. Element-wise activations only. Workers split blocks of 16
// units; each output is one worker's sum in one order.
template <class T> class GruFusedFwd : public MultiVertex {
public:
  Input<Vector<unsigned>> time;
  Input<Vector<unsigned>> lengths;
  Input<Vector<T>> hPrev;
  Input<Vector<T>> rhAll;
  Input<Vector<float>> packed;
  Input<Vector<T>> xw;
  Input<Vector<T>> attention;
  Input<Vector<T>> bias;
  Vector<InOut<Vector<T>>> hState;
  Vector<InOut<Vector<T>>> rh;
  Vector<InOut<Vector<T>>> out;
  Vector<InOut<Vector<T>>> inter;
  unsigned H;
  unsigned firstUnit;
  unsigned numUnits;
  unsigned begin;
  unsigned steps;
  unsigned rows;
  unsigned phase;
  unsigned activation;
  unsigned recurrentActivation;
  bool hasAttention;
  bool rawCandidate;
  bool saveH;
  bool saveN;
  bool interPerStep;

  bool compute(unsigned workerId) {
    const unsigned t = time[0];
    const unsigned n = numInter();
    if (t < begin || t - begin >= steps || phase > 2 ||
        inter.size() != (interPerStep ? steps : 1u) * rows * n ||
        (phase != 1 && hState.size() != rows) || (phase == 1 && rh.size() != rows) ||
        (out.size() != 0 && out.size() != steps * rows))
      return false;
    const unsigned step = t - begin;
    const unsigned blocks = (numUnits + 15) / 16;
    unsigned lo, hi;
    ::aspen::detail::workerShare(blocks, workerId, numWorkers(), lo, hi);
    const bool fixed = recurrentActivation == unsigned(NonLinearityType::SIGMOID) &&
                       activation == unsigned(NonLinearityType::TANH);
    // The gates a phase multiplies: from gate g0, ng of them (panels 16 H floats apart).
    const unsigned g0 = phase == 2 ? 2 : 0, ng = phase == 0 ? 3 : phase == 1 ? 2 : 1;
    const T *x = phase == 2 ? rhAll.data() : hPrev.data();
    // Blocks of 16 units; the candidate's phase (one gate) takes two blocks a pass where there
    // are, so that the kernel has two panels' sums in flight as the other phases do.
    const unsigned long long gateStride = (unsigned long long)H * packed::kPanel;
    for (unsigned b = lo; b < hi;) {
      const unsigned nb = phase == 2 && hi - b >= 2 ? 2 : 1;
      for (unsigned r0 = 0; r0 < rows; r0 += packed::kRows) {
        const unsigned rb = rows - r0 < packed::kRows ? rows - r0 : packed::kRows;
        bool any = false;
        for (unsigned r = 0; r < rb; ++r)
          any = any || active(t, r0 + r);
        // pre[block of the pass][r][gate - g0][unit - k0]
        float pre[2][packed::kRows][3][16];
        float acc[2 * packed::kRows * packed::kPanel];
        auto product = [&](const float *panel, unsigned np, unsigned long long stride) {
          for (unsigned i = 0; i < 2 * packed::kRows * packed::kPanel; ++i)
            acc[i] = 0.0f;
          packed::productRows(acc, x, H, r0, rb, panel, np, stride);
        };
        if (any && nb == 2) {
          product(packed.data() + (b * 3 + 2) * gateStride, 2, 3 * gateStride);
          for (unsigned q = 0; q < 2; ++q)
            for (unsigned r = 0; r < rb; ++r)
              for (unsigned j = 0; j < 16; ++j)
                pre[q][r][0][j] = acc[(q * packed::kRows + r) * packed::kPanel + j];
        }
        for (unsigned q0 = 0; any && nb == 1 && q0 < ng; q0 += 2) {
          const unsigned np = ng - q0 < 2 ? 1 : 2;
          product(packed.data() + (b * 3 + g0 + q0) * gateStride, np, gateStride);
          for (unsigned q = 0; q < np; ++q)
            for (unsigned r = 0; r < rb; ++r)
              for (unsigned j = 0; j < 16; ++j)
                pre[0][r][q0 + q][j] = acc[(q * packed::kRows + r) * packed::kPanel + j];
        }
        for (unsigned q = 0; q < nb; ++q) {
          const unsigned k0 = 16 * (b + q), k1 = k0 + 16 < numUnits ? k0 + 16 : numUnits;
          for (unsigned r = 0; r < rb; ++r) {
            const unsigned row = r0 + r;
            if (!active(t, row))
              holdRow(step, row, k0, k1);
            else if (fixed)
              cellRowFor(step, row, k0, k1, pre[q][r], cell::Fixed<NonLinearityType::SIGMOID>(),
                         cell::Fixed<NonLinearityType::TANH>());
            else
              cellRowFor(step, row, k0, k1, pre[q][r],
                         cell::Dynamic{NonLinearityType(recurrentActivation)},
                         cell::Dynamic{NonLinearityType(activation)});
          }
        }
      }
      b += nb;
    }
    return true;
  }

private:
  unsigned numInter() const { return 3u + (saveH ? 1u : 0u) + (saveN ? 1u : 0u); }
  bool active(unsigned t, unsigned row) const {
    return t < (lengths.size() == 1 ? lengths[0] : lengths[row]);
  }
  // Inter slot s of row `row` at the shard's step `step`, from unit k0 of the block.
  T *slot(unsigned step, unsigned row, unsigned s, unsigned k0) {
    return inter[((interPerStep ? step : 0u) * rows + row) * numInter() + s].data() + k0;
  }

  // An inactive row: what its phase writes is zero, and h_{t-1} is kept.
  void holdRow(unsigned step, unsigned row, unsigned k0, unsigned k1) {
    const unsigned m = k1 - k0;
    auto zero = [&](T *p) {
      for (unsigned j = 0; j < m; ++j)
        p[j] = T(0.0f);
    };
    if (phase == 1) {
      zero(slot(step, row, 0, k0));
      zero(slot(step, row, 1, k0));
      zero(rh[row].data() + k0);
      return;
    }
    for (unsigned s = phase == 0 ? 0 : 2; s < numInter(); ++s)
      zero(slot(step, row, s, k0));
    if (out.size() != 0)
      zero(out[step * rows + row].data() + k0);
    const T *from = hPrev.data() + row * H + firstUnit + k0;
    T *h = hState[row].data() + k0;
    for (unsigned j = 0; j < m; ++j)
      h[j] = from[j];
  }

  // The cell built for the host's widest vectors too, as LstmFusedFwd's (without contraction,
  // so every build rounds the same way); only the default (sigmoid, tanh) pair three times.
  template <class Rho, class Phi>
  void cellRowFor(unsigned step, unsigned row, unsigned k0, unsigned k1,
                  const float (*pre)[16], Rho rho, Phi phi) {
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
  cellRowAvx512(unsigned step, unsigned row, unsigned k0, unsigned k1, const float (*pre)[16],
                Rho rho, Phi phi) {
    cellRow(step, row, k0, k1, pre, rho, phi);
  }
  template <class Rho, class Phi>
  __attribute__((target("avx2,fma"), flatten)) void
  cellRowAvx2(unsigned step, unsigned row, unsigned k0, unsigned k1, const float (*pre)[16],
              Rho rho, Phi phi) {
    cellRow(step, row, k0, k1, pre, rho, phi);
  }
#endif
  template <class Rho, class Phi>
  ASPEN_FLATTEN void cellRowBaseline(unsigned step, unsigned row, unsigned k0, unsigned k1,
                                     const float (*pre)[16], Rho rho, Phi phi) {
    cellRow(step, row, k0, k1, pre, rho, phi);
  }

  // Elements [k0, k1) (at most 16) of an active row: the phase's cell, as GruCellResetAfter,
  // GruCellA and GruCellB compute it (the same operations in the same order).
  template <class Rho, class Phi>
  ASPEN_ALWAYS_INLINE void cellRow(unsigned step, unsigned row, unsigned k0, unsigned k1,
                                   const float (*pre)[16], Rho rho, Phi phi) {
    using namespace gru_cell;
    const unsigned m = k1 - k0, u0 = firstUnit + k0;
    const unsigned at = step * rows + row;
    const T *xr = xw.data() + at * 3 * H + u0, *xu = xr + H, *xc = xr + 2 * H;
    const T *hp = hPrev.data() + row * H + u0;
    const float keep = hasAttention ? 1.0f - float(attention[at]) : 1.0f;
    float vr[16], vu[16], vn[16], vp[16], vc[16], vh[16];
    if (phase == 0) {
      const T *bxr = bias.data() + u0, *bxu = bxr + H, *bxc = bxr + 2 * H;
      const T *bhr = bxr + 3 * H, *bhu = bxr + 4 * H, *bhc = bxr + 5 * H;
      for (unsigned j = 0; j < m; ++j) {
        vr[j] = (float(xr[j]) + float(bxr[j])) + (float(T(pre[R][j])) + float(bhr[j]));
        vu[j] = (float(xu[j]) + float(bxu[j])) + (float(T(pre[U][j])) + float(bhu[j]));
        vn[j] = float(T(pre[C][j])) + float(bhc[j]);
        vp[j] = float(xc[j]) + float(bxc[j]);
      }
      for (unsigned j = 0; j < m; ++j) {
        vr[j] = rho.forward(vr[j]);
        vu[j] = rho.forward(vu[j]) * keep;
        vp[j] = vp[j] + vr[j] * vn[j];
        vc[j] = phi.forward(vp[j]);
        vh[j] = vu[j] * float(hp[j]) + (1.0f - vu[j]) * vc[j];
      }
      T *sr = slot(step, row, 0, k0), *su = slot(step, row, 1, k0), *sc = slot(step, row, 2, k0);
      T *sn = slot(step, row, numInter() - 1, k0);
      for (unsigned j = 0; j < m; ++j) {
        sr[j] = T(vr[j]);
        su[j] = T(vu[j]);
        sc[j] = T(rawCandidate ? vp[j] : vc[j]);
        sn[j] = T(vn[j]);
      }
      storeState(step, row, k0, m, vh);
      return;
    }
    if (phase == 1) {
      const T *br = bias.data() + u0, *bu = br + H;
      for (unsigned j = 0; j < m; ++j) {
        vr[j] = float(xr[j]) + float(T(pre[0][j])) + float(br[j]);
        vu[j] = float(xu[j]) + float(T(pre[1][j])) + float(bu[j]);
        vh[j] = float(hp[j]);
      }
      for (unsigned j = 0; j < m; ++j) {
        vr[j] = rho.forward(vr[j]);
        vu[j] = rho.forward(vu[j]) * keep;
        vh[j] = vr[j] * vh[j];
      }
      T *sr = slot(step, row, 0, k0), *su = slot(step, row, 1, k0), *srh = rh[row].data() + k0;
      for (unsigned j = 0; j < m; ++j) {
        sr[j] = T(vr[j]);
        su[j] = T(vu[j]);
        srh[j] = T(vh[j]);
      }
      return;
    }
    const T *bc = bias.data() + 2 * H + u0;
    const T *su = slot(step, row, 1, k0);
    for (unsigned j = 0; j < m; ++j)
      vp[j] = float(xc[j]) + float(T(pre[0][j])) + float(bc[j]);
    for (unsigned j = 0; j < m; ++j) {
      vc[j] = phi.forward(vp[j]);
      const float u = float(su[j]);
      vh[j] = u * float(hp[j]) + (1.0f - u) * vc[j];
    }
    T *sc = slot(step, row, 2, k0);
    for (unsigned j = 0; j < m; ++j)
      sc[j] = T(rawCandidate ? vp[j] : vc[j]);
    storeState(step, row, k0, m, vh);
  }

  // h_t of an active row (phases 0 and 2): the other buffer, the output, the h slot.
  ASPEN_ALWAYS_INLINE void storeState(unsigned step, unsigned row, unsigned k0, unsigned m,
                                      const float *vh) {
    T *h = hState[row].data() + k0;
    for (unsigned j = 0; j < m; ++j)
      h[j] = T(vh[j]);
    if (out.size() != 0) {
      T *o = out[step * rows + row].data() + k0;
      for (unsigned j = 0; j < m; ++j)
        o[j] = T(vh[j]);
    }
    if (saveH) {
      T *sh = slot(step, row, 3, k0);
      for (unsigned j = 0; j < m; ++j)
        sh[j] = T(vh[j]);
    }
  }
};

template class GruFusedFwd<float>;
template class GruFusedFwd<half>;

template class GruCellA<float>;
template class GruCellA<half>;
template class GruCellB<float>;
template class GruCellB<half>;
template class GruCellResetAfter<float>;
template class GruCellResetAfter<half>;
template class GruBwdA<float>;
template class GruBwdA<half>;
template class GruBwdB<float>;
template class GruBwdB<half>;
template class GruBwdResetAfter<float>;
template class GruBwdResetAfter<half>;

// One backward step, or one phase of one, of the GRU's fused loop (GruFused.cpp) for the units
// [firstUnit, firstUnit + U) of every row, from the packed panels of Wo^T (16 units a panel,
// K = 3H rows: r, u, c), each product rounded to T as the unfused step's matMul output is,
// then the unfused vertices' element functions on it:
//   phase 0 (resetAfter): dhMM = deltaH_{t+1} . Wo^T (zero at the last step), then
//     GruBwdResetAfter's cell (bwdResetAfterElements); `next` is deltaH;
//   phase 1 (resetAfter false): dhMM = [delta_r | delta_u]_{t+1} . [Wo_r | Wo_u]^T, then
//     GruBwdA's (bwdAElements): delta_u and delta_c of step t, dhCarry = dh * u; `next` is
//     deltaX;
//   phase 2 (resetAfter false): d(r*h) = delta_c,t . Wo_c^T (every unit's delta_c, which
//     phase 1 wrote), then GruBwdB's (bwdBElements): delta_r of step t, dhCarry += d(r*h) * r.
// The clock counts i = time[0] up and the step is t = steps - 1 - i. `next` is the whole
// [steps][B][3H] sequence of the product's input (canonical columns), read in place while the
// vertex writes its units of row t through deltaX and deltaH (steps x B x 3 segments: step,
// row, gate; deltaH empty without resetAfter). fwd (steps x B x 4: r, u, c, n; 3 without n
// when resetAfter is false), hPrev (steps x B) and outGrad (steps x B, when hasOutGrad) are
// the step's inputs; dhCarry (one segment a row) is updated in place. A row past its length:
// as the unfused vertices' masked rows. With attention (an AUGRU, phases 0 and 1) `attention`
// is the [steps][B] sequence and attPartial (steps x B segments, one float a 16-unit block of
// this vertex) receives each block's sum of d(attention), in increasing unit: the loop sums a
// row's blocks after it (an unfused vertex sums the whole row at once). Element-wise
// activations only. Workers split pairs of 16-unit blocks.
template <class T> class GruFusedBwd : public MultiVertex {
public:
  Input<Vector<unsigned>> time;
  Input<Vector<unsigned>> lengths;
  Input<Vector<T>> next;
  Input<Vector<float>> packed;
  Vector<Input<Vector<T>>> fwd;
  Vector<Input<Vector<T>>> hPrev;
  Vector<Input<Vector<T>>> outGrad;
  Vector<InOut<Vector<T>>> dhCarry;
  Vector<InOut<Vector<T>>> deltaX;
  Vector<InOut<Vector<T>>> deltaH;
  Input<Vector<T>> attention;
  Vector<InOut<Vector<float>>> attPartial;
  unsigned H;
  unsigned numUnits;
  unsigned steps;
  unsigned phase;
  unsigned activation;
  unsigned recurrentActivation;
  bool hasOutGrad;
  bool hasAttention;
  bool rawCandidate;
  bool popnnHardSigmoidGrad;

  bool compute(unsigned workerId) {
    const unsigned rows = dhCarry.size(), i = time[0];
    const unsigned saved = phase == 0 ? 4 : 3; // fwd's segments a row and step
    const unsigned blocks = (numUnits + 15) / 16;
    if (i >= steps || phase > 2 || fwd.size() != steps * rows * saved ||
        hPrev.size() != steps * rows || deltaX.size() != steps * rows * 3 ||
        deltaH.size() != (phase == 0 ? steps * rows * 3 : 0) ||
        (hasOutGrad && outGrad.size() != steps * rows) || next.size() != steps * rows * 3 * H ||
        (hasAttention && (phase == 2 || attention.size() != steps * rows ||
                          attPartial.size() != steps * rows)))
      return false;
    for (unsigned j = 0; hasAttention && j < attPartial.size(); ++j)
      if (attPartial[j].size() != blocks)
        return false;
    const unsigned t = steps - 1 - i;
    unsigned lo, hi;
    ::aspen::detail::workerShare(blocks, workerId, numWorkers(), lo, hi);
    const unsigned long long stride = (unsigned long long)3 * H * packed::kPanel;
    const T *rowAfter = t + 1 < steps ? next.data() + (t + 1) * rows * 3 * H : nullptr;
    if (phase == 0)
      packed::forBlockPairs(rowAfter, 3 * H, rows, lo, hi, packed.data(), stride,
                            [&](unsigned row, unsigned b, const float *p) {
                              keepAttention(t, row, b, finishResetAfter(t, row, 16 * b, p));
                            });
    else if (phase == 1)
      packed::forBlockPairs(
          rowAfter, 2 * H, rows, lo, hi, packed.data(), stride,
          [&](unsigned row, unsigned b, const float *p) {
            keepAttention(t, row, b, finishA(t, row, 16 * b, p));
          },
          3 * H);
    else
      packed::forBlockPairs(
          next.data() + t * rows * 3 * H + 2 * H, H, rows, lo, hi,
          packed.data() + 2 * H * packed::kPanel, stride,
          [&](unsigned row, unsigned b, const float *p) { finishB(t, row, 16 * b, p); }, 3 * H);
    return true;
  }

private:
  unsigned units(unsigned k0) const { return numUnits - k0 < 16 ? numUnits - k0 : 16; }
  bool past(unsigned t, unsigned row) const {
    return t >= (lengths.size() == 1 ? lengths[0] : lengths[row]);
  }
  // The products rounded to T, as a matMul output is.
  static void rounded(const float *p, unsigned m, T *out) {
    for (unsigned j = 0; j < m; ++j)
      out[j] = T(p[j]);
  }
  // 1 - a_t for the row (1 without attention).
  float keep(unsigned t, unsigned row) const {
    return hasAttention ? 1.0f - float(attention[t * dhCarry.size() + row]) : 1.0f;
  }
  void keepAttention(unsigned t, unsigned row, unsigned b, float dAtt) {
    if (hasAttention)
      attPartial[t * dhCarry.size() + row][b] = dAtt;
  }
  // A row past its length passes dhMM + dhCarry on, as the unfused vertices' masked rows.
  static void carryPast(const T *mm, T *carry, unsigned m) {
    for (unsigned j = 0; j < m; ++j)
      carry[j] = T(float(mm[j]) + float(carry[j]));
  }

  // Each finish: row `row`'s units [k0, k0 + 16) of the block (fewer at its end) from their
  // products p.
  // Each returns the block's sum of d(attention) (zero past the row's length).
  float finishResetAfter(unsigned t, unsigned row, unsigned k0, const float *p) {
    using namespace gru_cell;
    const unsigned at = t * dhCarry.size() + row, m = units(k0);
    T mm[16];
    rounded(p, m, mm);
    T *carry = dhCarry[row].data() + k0;
    T *x[3], *h[3];
    for (unsigned g = 0; g < 3; ++g) {
      x[g] = deltaX[at * 3 + g].data() + k0;
      h[g] = deltaH[at * 3 + g].data() + k0;
    }
    if (past(t, row)) { // as GruBwdResetAfter's masked row
      for (unsigned g = 0; g < 3; ++g)
        zero(x[g], m), zero(h[g], m);
      carryPast(mm, carry, m);
      return 0.0f;
    }
    const T *s[4];
    for (unsigned g = 0; g < 4; ++g)
      s[g] = fwd[at * 4 + g].data() + k0;
    const T *hp = hPrev[at].data() + k0;
    const T *dy = hasOutGrad ? outGrad[at].data() + k0 : carry;
    const BwdResetAfterRow<T> v{s[0], s[1], s[2], s[3], hp, dy, mm, carry,
                                x[R], x[U], x[C], h[R], h[U], h[C]};
    float dAtt = 0.0f;
    withActivations(recurrentActivation, activation, [&](auto rho, auto phi) {
      const BwdCommon<decltype(rho), decltype(phi)> common{rho, phi, rawCandidate, keep(t, row)};
      dAtt = bwdResetAfterElements(v, 0, m, hasOutGrad, common);
    }, popnnHardSigmoidGrad);
    return dAtt;
  }

  float finishA(unsigned t, unsigned row, unsigned k0, const float *p) {
    using namespace gru_cell;
    const unsigned at = t * dhCarry.size() + row, m = units(k0);
    T mm[16];
    rounded(p, m, mm);
    T *carry = dhCarry[row].data() + k0;
    T *dU = deltaX[at * 3 + U].data() + k0, *dC = deltaX[at * 3 + C].data() + k0;
    if (past(t, row)) { // as GruBwdA's masked row
      zero(dU, m), zero(dC, m);
      carryPast(mm, carry, m);
      return 0.0f;
    }
    const T *hp = hPrev[at].data() + k0;
    const BwdARow<T> v{fwd[at * 3 + U].data() + k0, fwd[at * 3 + C].data() + k0, hp,
                       hasOutGrad ? outGrad[at].data() + k0 : carry, mm, carry, dU, dC};
    float dAtt = 0.0f;
    withActivations(recurrentActivation, activation, [&](auto rho, auto phi) {
      const BwdCommon<decltype(rho), decltype(phi)> common{rho, phi, rawCandidate, keep(t, row)};
      dAtt = bwdAElements(v, 0, m, hasOutGrad, common);
    }, popnnHardSigmoidGrad);
    return dAtt;
  }

  void finishB(unsigned t, unsigned row, unsigned k0, const float *p) {
    using namespace gru_cell;
    const unsigned at = t * dhCarry.size() + row, m = units(k0);
    T *dR = deltaX[at * 3 + R].data() + k0;
    if (past(t, row)) { // as GruBwdB's masked row
      zero(dR, m);
      return;
    }
    T g[16];
    rounded(p, m, g);
    const T *sr = fwd[at * 3 + R].data() + k0, *hp = hPrev[at].data() + k0;
    T *carry = dhCarry[row].data() + k0;
    withActivations(recurrentActivation, unsigned(NonLinearityType::TANH),
                    [&](auto rho, auto) { bwdBElements(sr, hp, g, dR, carry, 0, m, rho); },
                    popnnHardSigmoidGrad);
  }
};

template class GruFusedBwd<float>;
template class GruFusedBwd<half>;

} // namespace aspen::nn
