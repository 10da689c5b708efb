// The GRU's and AUGRU's cell element functions (gru.cpp's vertices, the fused steps there and
// the persistent kernels of persistent.cpp): one definition, so that every path does the same
// operations with the same roundings. No standard library (NVRTC).
#pragma once

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

// One row of the reset-after cell (GruCellResetAfter): its inputs per gate (xw, hw; the input
// then the recurrent biases) and where it writes (the intermediates' r, u, c, h (sh, written
// with saveH) and n slots, the state, the output), n elements each; keep = 1 - attention.
template <class T> struct ResetAfterRow {
  const T *xr, *xu, *xc, *hr, *hu, *hc, *bxr, *bxu, *bxc, *bhr, *bhu, *bhc;
  T *sr, *su, *sc, *sh, *sn, *state, *out;
  unsigned n;
  float keep;
  bool rawCandidate, saveH;
  // Element k's results: r, u (after attention), the candidate's pre-activation, c, n, and h.
  ASPEN_HD void store(unsigned k, float vr, float vu, float pre, float vc, float vn,
                      float vh) const {
    sr[k] = T(vr);
    su[k] = T(vu);
    sc[k] = T(rawCandidate ? pre : vc);
    sn[k] = T(vn);
    if (saveH)
      sh[k] = T(vh);
    state[k] = T(vh);
    out[k] = T(vh);
  }
};

// A reset-after row whose activations include a softmax kind (over the row): each gate's
// statistics first, then every element.
template <class T>
ASPEN_HD inline void resetAfterSoftmaxRow(const ResetAfterRow<T> &w, unsigned activation,
                                          unsigned recurrentActivation) {
  const unsigned n = w.n;
  auto preR = [&](unsigned k) {
    return (float(w.xr[k]) + float(w.bxr[k])) + (float(w.hr[k]) + float(w.bhr[k]));
  };
  auto preU = [&](unsigned k) {
    return (float(w.xu[k]) + float(w.bxu[k])) + (float(w.hu[k]) + float(w.bhu[k]));
  };
  const RowStats sr = isSoftmaxKind(recurrentActivation) ? softmaxStats(n, preR) : RowStats();
  const RowStats su = isSoftmaxKind(recurrentActivation) ? softmaxStats(n, preU) : RowStats();
  auto vn = [&](unsigned k) { return float(w.hc[k]) + float(w.bhc[k]); };
  auto preC = [&](unsigned k) {
    return float(w.xc[k]) + float(w.bxc[k]) + activate(recurrentActivation, preR(k), sr) * vn(k);
  };
  const RowStats sc = isSoftmaxKind(activation) ? softmaxStats(n, preC) : RowStats();
  for (unsigned k = 0; k < n; ++k) {
    const float vr = activate(recurrentActivation, preR(k), sr);
    const float vu = activate(recurrentActivation, preU(k), su) * w.keep;
    const float pre = preC(k);
    const float vc = activate(activation, pre, sc);
    const float vh = vu * float(w.state[k]) + (1.0f - vu) * vc;
    w.store(k, vr, vu, pre, vc, vn(k), vh);
  }
}

// A reset-after row of element-wise activations, in chunks; with the activation clip (act),
// the clipped pre-activations of r and u go to clipR and clipU (else null).
template <class T>
ASPEN_HD inline void resetAfterChunkedRow(const ResetAfterRow<T> &w, unsigned activation,
                                          unsigned recurrentActivation, const ActClip &act,
                                          T *clipR, T *clipU) {
  const unsigned n = w.n;
  withActivations(recurrentActivation, activation, [&](auto rho, auto phi) {
    for (unsigned k0 = 0; k0 < n; k0 += kChunk) {
      const unsigned m = n - k0 < kChunk ? n - k0 : kChunk;
      float vr[kChunk], vu[kChunk], vn[kChunk], pre[kChunk], vc[kChunk], vh[kChunk];
      for (unsigned j = 0; j < m; ++j) {
        const unsigned k = k0 + j;
        vr[j] = (float(w.xr[k]) + float(w.bxr[k])) + (float(w.hr[k]) + float(w.bhr[k]));
        vu[j] = (float(w.xu[k]) + float(w.bxu[k])) + (float(w.hu[k]) + float(w.bhu[k]));
        vn[j] = float(w.hc[k]) + float(w.bhc[k]);
        pre[j] = float(w.xc[k]) + float(w.bxc[k]);
      }
      if (clipR)
        for (unsigned j = 0; j < m; ++j) {
          vr[j] = act.apply(vr[j]);
          vu[j] = act.apply(vu[j]);
          clipR[k0 + j] = T(vr[j]);
          clipU[k0 + j] = T(vu[j]);
        }
      for (unsigned j = 0; j < m; ++j) {
        const unsigned k = k0 + j;
        vr[j] = rho.forward(vr[j]);
        vu[j] = rho.forward(vu[j]) * w.keep;
        pre[j] = act.apply(pre[j] + vr[j] * vn[j]);
        vc[j] = phi.forward(pre[j]);
        vh[j] = vu[j] * float(w.state[k]) + (1.0f - vu[j]) * vc[j];
      }
      for (unsigned j = 0; j < m; ++j)
        w.store(k0 + j, vr[j], vu[j], pre[j], vc[j], vn[j], vh[j]);
    }
  });
}

} // namespace gru_cell

namespace gru_cell {

// The common part of the backward cells for one chunk: from r, u (after attention), c (or its
// pre-activation), h_{t-1} and dh, the candidate's and update's pre-activation gradients, the
// attention's gradient contribution and dh * u. act: ONNX's clip of the activations' inputs
// (the candidate's pre-activation cs is then saved raw, clipped); preU: the update gate's
// clipped pre-activation, read only with it.
template <class Rho, class Phi> struct BwdCommon {
  Rho rho;
  Phi phi;
  bool rawCandidate;
  float keep; // 1 - a (1 without attention)
  ActClip act = ActClip{0.0f};
  ASPEN_HD void operator()(float u, float cs, float hPrev, float dh, float &dCand, float &dUpd,
                           float &dAtt, float &dhU, float preU = 0.0f) const {
    const float c = rawCandidate ? phi.forward(cs) : cs;
    const float cAct = rawCandidate && phi.takesInput() ? cs : c;
    dCand = act.passes(cs) ? phi.gradient(cAct, dh * (1.0f - u)) : 0.0f;
    const float du = dh * (hPrev - c);
    // u = keep * ut, ut = rho(.): d(ut) = du * keep, and d(a) = -du * ut.
    const float ut = keep != 0.0f ? u / keep : 0.0f;
    dUpd = act.passes(preU) ? rho.gradient(ut, du * keep) : 0.0f;
    dAtt = -du * ut;
    dhU = dh * u;
  }
};

// One row of backward phase A (resetAfter false), the pointers at the row's first element:
// the saved u and c (or its pre-activation), h_{t-1}, dy (read when hasOutGrad), the incoming
// dhMM, the carried dh (dh * u on exit), and the update's and candidate's gradients.
template <class T> struct BwdARow {
  const T *su, *sc, *hp, *dy, *mm;
  T *carry, *dU, *dC;
  const T *pu = nullptr; // the update's clipped pre-activation (with the activation clip)
};

// Elements [lo, hi) of an active row of phase A; returns their sum of d(attention) in
// increasing k.
template <class T, class Common>
ASPEN_HD inline float bwdAElements(const BwdARow<T> &v, unsigned lo, unsigned hi,
                                   bool hasOutGrad, const Common &common) {
  float dAttSum = 0.0f;
  for (unsigned k = lo; k < hi; ++k) {
    const float dh =
        float(v.mm[k]) + float(v.carry[k]) + (hasOutGrad ? float(v.dy[k]) : 0.0f);
    float dCand, dUpd, dAtt, dhU;
    common(float(v.su[k]), float(v.sc[k]), float(v.hp[k]), dh, dCand, dUpd, dAtt, dhU,
           v.pu ? float(v.pu[k]) : 0.0f);
    v.dC[k] = T(dCand);
    v.dU[k] = T(dUpd);
    v.carry[k] = T(dhU);
    dAttSum += dAtt;
  }
  return dAttSum;
}

// Elements [lo, hi) of an active row of phase B (resetAfter false): from r, h_{t-1} and
// g = d(r*h), the reset's gradient dR, and dhCarry += g * r. pr: the reset's clipped
// pre-activation with the activation clip act (nullptr without).
template <class T, class Rho>
ASPEN_HD inline void bwdBElements(const T *sr, const T *hp, const T *g, T *dR, T *carry,
                                  unsigned lo, unsigned hi, const Rho &rho,
                                  const T *pr = nullptr, ActClip act = ActClip{0.0f}) {
  for (unsigned k = lo; k < hi; ++k) {
    const float rr = float(sr[k]), gg = float(g[k]);
    const bool passes = pr == nullptr || act.passes(float(pr[k]));
    dR[k] = T(passes ? rho.gradient(rr, gg * float(hp[k])) : 0.0f);
    carry[k] = T(float(carry[k]) + gg * rr);
  }
}

} // namespace gru_cell

namespace gru_cell {

// One row of the backward cell with resetAfter (element-wise activations), the pointers at the
// row's first element: the saved r, u, c (or its pre-activation), n and h_{t-1}, dy (read when
// hasOutGrad), the incoming dhMM, the carried dh (dh * u on exit), the gate gradients of
// x.Wi + bx (xR, xU, xC) and of h.Wo + bh (hR, hU, hN).
template <class T> struct BwdResetAfterRow {
  const T *sr, *su, *sc, *sn, *hp, *dy, *mm;
  T *carry, *xR, *xU, *xC, *hR, *hU, *hN;
  const T *pr = nullptr, *pu = nullptr; // clipped pre-activations (with the activation clip)
};

// Elements [lo, hi) of an active row; returns their sum of d(attention) in increasing k.
template <class T, class Common>
ASPEN_HD inline float bwdResetAfterElements(const BwdResetAfterRow<T> &v, unsigned lo,
                                            unsigned hi, bool hasOutGrad, const Common &common) {
  float dAttSum = 0.0f;
  for (unsigned k = lo; k < hi; ++k) {
    const float dh =
        float(v.mm[k]) + float(v.carry[k]) + (hasOutGrad ? float(v.dy[k]) : 0.0f);
    float dCand, dUpd, dAtt, dhU;
    common(float(v.su[k]), float(v.sc[k]), float(v.hp[k]), dh, dCand, dUpd, dAtt, dhU,
           v.pu ? float(v.pu[k]) : 0.0f);
    const float rr = float(v.sr[k]);
    const float dReset = v.pr == nullptr || common.act.passes(float(v.pr[k]))
                             ? common.rho.gradient(rr, dCand * float(v.sn[k]))
                             : 0.0f;
    v.xR[k] = v.hR[k] = T(dReset);
    v.xU[k] = v.hU[k] = T(dUpd);
    v.xC[k] = T(dCand);
    v.hN[k] = T(dCand * rr);
    v.carry[k] = T(dhU);
    dAttSum += dAtt;
  }
  return dAttSum;
}

} // namespace gru_cell

} // namespace aspen::nn
