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

namespace aspen::nn {

namespace gru_cell {

using namespace ::aspen::nn::cell;
constexpr unsigned R = 0, U = 1, C = 2;

// The dispatch of a row loop: (rho, phi) fixed for sigmoid / tanh, at run time otherwise
// (popnnHardSigmoid: as Dynamic's; only gradients read it).
template <class Body>
ASPEN_HD inline void withActivations(unsigned rec, unsigned act, Body body,
                                     bool popnnHardSigmoid = false) {
  if (rec == unsigned(NonLinearityType::SIGMOID) && act == unsigned(NonLinearityType::TANH))
    body(Fixed<NonLinearityType::SIGMOID>(), Fixed<NonLinearityType::TANH>());
  else
    body(Dynamic{NonLinearityType(rec), popnnHardSigmoid},
         Dynamic{NonLinearityType(act), popnnHardSigmoid});
}

template <class T> ASPEN_HD inline void zero(T *p, unsigned n) {
  for (unsigned k = 0; k < n; ++k)
    p[k] = T(0.0f);
}

} // namespace gru_cell

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
  unsigned activation;
  unsigned recurrentActivation;
  bool hasAttention;
  bool compute(unsigned workerId) {
    using namespace gru_cell;
    for (unsigned r = workerId; r < h.size(); r += numWorkers()) {
      const unsigned n = h[r].size();
      T *outR = gates[2 * r].data(), *outU = gates[2 * r + 1].data(), *outRh = rh[r].data();
      if (float(mask[r]) == 0.0f) {
        zero(outR, n), zero(outU, n), zero(outRh, n);
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
  bool compute(unsigned workerId) {
    using namespace gru_cell;
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
            pre[j] = float(xc[k]) + float(hc[k]) + float(bc[k]);
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
  unsigned activation;
  unsigned recurrentActivation;
  bool hasAttention;
  bool rawCandidate;
  bool saveH;
  bool compute(unsigned workerId) {
    using namespace gru_cell;
    const unsigned ni = saveH ? 5u : 4u;
    for (unsigned r = workerId; r < h.size(); r += numWorkers()) {
      const unsigned n = h[r].size();
      T *sr = inter[ni * r].data(), *su = inter[ni * r + 1].data(), *sc = inter[ni * r + 2].data();
      T *sh = saveH ? inter[ni * r + 3].data() : sc, *sn = inter[ni * r + ni - 1].data();
      T *sr_ = sr, *su_ = su, *sc_ = sc, *sh_ = sh, *sn_ = sn;
      T *state = h[r].data(), *outY = out[r].data();
      if (float(mask[r]) == 0.0f) {
        zero(sr, n), zero(su, n), zero(sc, n), zero(sh, n), zero(sn, n), zero(outY, n);
        continue;
      }
      const float keep = hasAttention ? 1.0f - float(attention[r]) : 1.0f;
      const T *xr = xw[3 * r + R].data(), *xu = xw[3 * r + U].data(), *xc = xw[3 * r + C].data();
      const T *hr = hw[3 * r + R].data(), *hu = hw[3 * r + U].data(), *hc = hw[3 * r + C].data();
      const T *bxr = bias[0].data(), *bxu = bias[1].data(), *bxc = bias[2].data();
      const T *bhr = bias[3].data(), *bhu = bias[4].data(), *bhc = bias[5].data();
      if (isSoftmaxKind(activation) || isSoftmaxKind(recurrentActivation)) {
        auto preR = [&](unsigned k) {
          return (float(xr[k]) + float(bxr[k])) + (float(hr[k]) + float(bhr[k]));
        };
        auto preU = [&](unsigned k) {
          return (float(xu[k]) + float(bxu[k])) + (float(hu[k]) + float(bhu[k]));
        };
        const RowStats sr = isSoftmaxKind(recurrentActivation) ? softmaxStats(n, preR) : RowStats();
        const RowStats su = isSoftmaxKind(recurrentActivation) ? softmaxStats(n, preU) : RowStats();
        auto vn = [&](unsigned k) { return float(hc[k]) + float(bhc[k]); };
        auto preC = [&](unsigned k) {
          return float(xc[k]) + float(bxc[k]) + activate(recurrentActivation, preR(k), sr) * vn(k);
        };
        const RowStats sc = isSoftmaxKind(activation) ? softmaxStats(n, preC) : RowStats();
        for (unsigned k = 0; k < n; ++k) {
          const float vr = activate(recurrentActivation, preR(k), sr);
          const float vu = activate(recurrentActivation, preU(k), su) * keep;
          const float pre = preC(k);
          const float vc = activate(activation, pre, sc);
          const float vh = vu * float(state[k]) + (1.0f - vu) * vc;
          sr_[k] = T(vr);
          su_[k] = T(vu);
          sc_[k] = T(rawCandidate ? pre : vc);
          sn_[k] = T(vn(k));
          if (saveH)
            sh_[k] = T(vh);
          state[k] = T(vh);
          outY[k] = T(vh);
        }
        continue;
      }
      withActivations(recurrentActivation, activation, [&](auto rho, auto phi) {
        for (unsigned k0 = 0; k0 < n; k0 += kChunk) {
          const unsigned m = n - k0 < kChunk ? n - k0 : kChunk;
          float vr[kChunk], vu[kChunk], vn[kChunk], pre[kChunk], vc[kChunk], vh[kChunk];
          for (unsigned j = 0; j < m; ++j) {
            const unsigned k = k0 + j;
            vr[j] = (float(xr[k]) + float(bxr[k])) + (float(hr[k]) + float(bhr[k]));
            vu[j] = (float(xu[k]) + float(bxu[k])) + (float(hu[k]) + float(bhu[k]));
            vn[j] = float(hc[k]) + float(bhc[k]);
            pre[j] = float(xc[k]) + float(bxc[k]);
          }
          for (unsigned j = 0; j < m; ++j) {
            const unsigned k = k0 + j;
            vr[j] = rho.forward(vr[j]);
            vu[j] = rho.forward(vu[j]) * keep;
            pre[j] = pre[j] + vr[j] * vn[j];
            vc[j] = phi.forward(pre[j]);
            vh[j] = vu[j] * float(state[k]) + (1.0f - vu[j]) * vc[j];
          }
          for (unsigned j = 0; j < m; ++j) {
            const unsigned k = k0 + j;
            sr[k] = T(vr[j]);
            su[k] = T(vu[j]);
            sc[k] = T(rawCandidate ? pre[j] : vc[j]);
            sn[k] = T(vn[j]);
            if (saveH)
              sh[k] = T(vh[j]);
            state[k] = T(vh[j]);
            outY[k] = T(vh[j]);
          }
        }
      });
    }
    return true;
  }
};

namespace gru_cell {

// The common part of the backward cells for one chunk: from r, u (after attention), c (or its
// pre-activation), h_{t-1} and dh, the candidate's and update's pre-activation gradients, the
// attention's gradient contribution and dh * u.
template <class Rho, class Phi> struct BwdCommon {
  Rho rho;
  Phi phi;
  bool rawCandidate;
  float keep; // 1 - a (1 without attention)
  ASPEN_HD void operator()(float u, float cs, float hPrev, float dh, float &dCand, float &dUpd,
                           float &dAtt, float &dhU) const {
    const float c = rawCandidate ? phi.forward(cs) : cs;
    const float cAct = rawCandidate && phi.takesInput() ? cs : c;
    dCand = phi.gradient(cAct, dh * (1.0f - u));
    const float du = dh * (hPrev - c);
    // u = keep * ut, ut = rho(.): d(ut) = du * keep, and d(a) = -du * ut.
    const float ut = keep != 0.0f ? u / keep : 0.0f;
    dUpd = rho.gradient(ut, du * keep);
    dAtt = -du * ut;
    dhU = dh * u;
  }
};

} // namespace gru_cell

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
  unsigned activation;
  unsigned recurrentActivation;
  bool hasAttention;
  bool hasOutGrad;
  bool rawCandidate;
  bool popnnHardSigmoidGrad; // HARD_SIGMOID's gradient by popnn's rule (RnnCellMath.hpp)
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
            rho, phi, rawCandidate, hasAttention ? 1.0f - float(attention[r]) : 1.0f};
        for (unsigned k = 0; k < n; ++k) {
          const float dh =
              float(mm[k]) + float(carry[k]) + (hasOutGrad ? float(dy[k]) : 0.0f);
          float dCand, dUpd, dAtt, dhU;
          common(float(su[k]), float(sc[k]), float(hp[k]), dh, dCand, dUpd, dAtt, dhU);
          dC[k] = T(dCand);
          dU[k] = T(dUpd);
          carry[k] = T(dhU);
          dAttSum += dAtt;
        }
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
  unsigned recurrentActivation;
  bool popnnHardSigmoidGrad; // HARD_SIGMOID's gradient by popnn's rule (RnnCellMath.hpp)
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
                        for (unsigned k = 0; k < n; ++k) {
                          const float rr = float(sr[k]), gg = float(g[k]);
                          dR[k] = T(rho.gradient(rr, gg * float(hp[k])));
                          carry[k] = T(float(carry[k]) + gg * rr);
                        }
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
  unsigned activation;
  unsigned recurrentActivation;
  bool hasAttention;
  bool hasOutGrad;
  bool rawCandidate;
  bool popnnHardSigmoidGrad; // HARD_SIGMOID's gradient by popnn's rule (RnnCellMath.hpp)
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
            rho, phi, rawCandidate, hasAttention ? 1.0f - float(attention[r]) : 1.0f};
        for (unsigned k = 0; k < n; ++k) {
          const float dh =
              float(mm[k]) + float(carry[k]) + (hasOutGrad ? float(dy[k]) : 0.0f);
          float dCand, dUpd, dAtt, dhU;
          common(float(su[k]), float(sc[k]), float(hp[k]), dh, dCand, dUpd, dAtt, dhU);
          const float rr = float(sr[k]);
          const float dReset = rho.gradient(rr, dCand * float(sn[k]));
          xR[k] = hR[k] = T(dReset);
          xU[k] = hU[k] = T(dUpd);
          xC[k] = T(dCand);
          hN[k] = T(dCand * rr);
          carry[k] = T(dhU);
          dAttSum += dAtt;
        }
      }, popnnHardSigmoidGrad);
      if (hasAttention)
        attGrad[r] = T(dAttSum);
    }
    return true;
  }
};

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

} // namespace aspen::nn
