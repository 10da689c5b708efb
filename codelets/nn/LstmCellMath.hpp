// The LSTM cell's element loops, forward and backward (LstmCellFwd and LstmCellBwd in rnn.cpp,
// the fused steps there, and the persistent kernels of persistent.cpp): one definition, so that
// every path does the same operations with the same roundings. V is a view with the fields
// those vertices have (gates, gatesIn, bias, cState, hState, out, inter, mask ... forward;
// fwd, cell, outGrad, dhMM, dhCarry, dcState, delta, mask ... backward), each a segment with
// data(). No standard library (NVRTC).
#pragma once

#include "RnnCellMath.hpp"

namespace aspen::nn {

namespace lstm_cell {

constexpr unsigned F = 0, I = 1, G = 2, O = 3;

using namespace ::aspen::nn::cell;

} // namespace lstm_cell


namespace lstm_cell {

using namespace ::aspen::nn::cell;

// Elements [lo, hi) of row r of the forward cell, element-wise activations rho (gates) and phi.
// act: ONNX's clip of the activations' inputs; with it the gate slots of `inter` hold the four
// (clipped) pre-activations rather than the gates, and phi takes c_t clipped.
template <class T, class V, class Rho, class Phi>
ASPEN_HD inline void fwdElements(V &v, unsigned r, unsigned lo, unsigned hi, Rho rho, Phi phi,
                                 const CellClip &clip, const ActClip act = ActClip{0.0f}) {
  const unsigned n = v.numInter();
  T *out = v.out[r].data();
  if (float(v.mask[r]) == 0.0f) {
    for (unsigned k = lo; k < hi; ++k)
      out[k] = T(0.0f);
    for (unsigned j = 0; j < n; ++j) {
      T *s = v.inter[n * r + j].data();
      for (unsigned k = lo; k < hi; ++k)
        s[k] = T(0.0f);
    }
    return;
  }
  const T *af = v.gates[4 * r + F].data(), *ai = v.gates[4 * r + I].data();
  const T *ag = v.gates[4 * r + G].data(), *ao = v.gates[4 * r + O].data();
  const T *xf = v.gatesIn[4 * r + F].data(), *xi = v.gatesIn[4 * r + I].data();
  const T *xg = v.gatesIn[4 * r + G].data(), *xo = v.gatesIn[4 * r + O].data();
  const T *bf = v.bias[F].data(), *bi = v.bias[I].data(), *bg = v.bias[G].data(),
          *bo = v.bias[O].data();
  T *c = v.cState[r].data(), *h = v.hState[r].data();
  const bool gates = v.saveMode != 0, cell = v.saveMode == 2, raw = v.rawCandidate;
  const bool in = v.hasGatesIn, rawGates = act.t > 0.0f;
  for (unsigned k0 = lo; k0 < hi; k0 += kChunk) {
    const unsigned m = hi - k0 < kChunk ? hi - k0 : kChunk;
    float f[kChunk], i[kChunk], g[kChunk], o[kChunk], preF[kChunk], preI[kChunk], preG[kChunk],
        preO[kChunk], cPrev[kChunk], cNew[kChunk], phiC[kChunk], hNew[kChunk];
    for (unsigned j = 0; j < m; ++j) {
      const unsigned k = k0 + j;
      preF[j] = v.preActivation(af[k], xf[k], in) + float(bf[k]);
      preI[j] = v.preActivation(ai[k], xi[k], in) + float(bi[k]);
      preG[j] = v.preActivation(ag[k], xg[k], in) + float(bg[k]);
      preO[j] = v.preActivation(ao[k], xo[k], in) + float(bo[k]);
      cPrev[j] = float(c[k]);
    }
    if (rawGates)
      for (unsigned j = 0; j < m; ++j) {
        preF[j] = act.apply(preF[j]);
        preI[j] = act.apply(preI[j]);
        preG[j] = act.apply(preG[j]);
        preO[j] = act.apply(preO[j]);
      }
    for (unsigned j = 0; j < m; ++j) {
      f[j] = rho.forward(preF[j]);
      i[j] = rho.forward(preI[j]);
      g[j] = phi.forward(preG[j]);
      o[j] = rho.forward(preO[j]);
      cNew[j] = f[j] * cPrev[j] + i[j] * g[j];
    }
    if (clip.mode != 0)
      for (unsigned j = 0; j < m; ++j)
        cNew[j] = clip.apply(cNew[j]);
    for (unsigned j = 0; j < m; ++j) {
      phiC[j] = phi.forward(rawGates ? act.apply(cNew[j]) : cNew[j]);
      hNew[j] = o[j] * phiC[j];
    }
    for (unsigned j = 0; j < m; ++j) {
      const unsigned k = k0 + j;
      c[k] = T(cNew[j]);
      h[k] = T(hNew[j]);
      out[k] = T(hNew[j]);
    }
    if (gates) {
      T *sf = v.inter[n * r + F].data(), *si = v.inter[n * r + I].data();
      T *sg = v.inter[n * r + G].data(), *so = v.inter[n * r + O].data();
      for (unsigned j = 0; j < m; ++j) {
        const unsigned k = k0 + j;
        sf[k] = T(rawGates ? preF[j] : f[j]);
        si[k] = T(rawGates ? preI[j] : i[j]);
        sg[k] = T(raw ? preG[j] : g[j]);
        so[k] = T(rawGates ? preO[j] : o[j]);
      }
    }
    if (cell) {
      T *sc = v.inter[n * r + 4].data(), *sp = v.inter[n * r + 5].data();
      for (unsigned j = 0; j < m; ++j) {
        sc[k0 + j] = T(raw ? cNew[j] : phiC[j]);
        sp[k0 + j] = T(cPrev[j]);
      }
    }
    if (v.saveH) {
      T *sh = v.inter[n * r + n - 1].data();
      for (unsigned j = 0; j < m; ++j)
        sh[k0 + j] = T(hNew[j]);
    }
  }
}

// Elements [lo, hi) of row r of the backward cell (element-wise activations).
// clip: the forward's cell clip; the cell segment then holds c_t (rawCell, as the builders
// arrange), at a bound where it was clipped. act: the forward's clip of the activations' inputs;
// the gate segments then hold the clipped pre-activations (and the cell segment c_t), and the
// gradient stops where an input was clipped.
template <class T, class V, class Rho, class Phi>
ASPEN_HD inline void bwdElements(V &v, unsigned r, unsigned lo, unsigned hi, Rho rho, Phi phi,
                                 const CellClip &clip, const ActClip act = ActClip{0.0f}) {
  T *dF = v.delta[4 * r + F].data(), *dI = v.delta[4 * r + I].data();
  T *dG = v.delta[4 * r + G].data(), *dO = v.delta[4 * r + O].data();
  T *carry = v.dhCarry[r].data(), *dc = v.dcState[r].data();
  const T *mm = v.dhMM[r].data();
  if (float(v.mask[r]) == 0.0f) {
    for (unsigned k = lo; k < hi; ++k) {
      dF[k] = dI[k] = dG[k] = dO[k] = T(0.0f);
      carry[k] = T(float(mm[k]) + float(carry[k]));
    }
    return;
  }
  const T *sf = v.fwd[4 * r + F].data(), *si = v.fwd[4 * r + I].data();
  const T *sg = v.fwd[4 * r + G].data(), *so = v.fwd[4 * r + O].data();
  const T *sc = v.cell[2 * r].data(), *sp = v.cell[2 * r + 1].data();
  const T *dy = v.outGrad[r].data();
  const bool rawCell = v.rawCell, rawCand = v.rawCandidate, hasOutGrad = v.hasOutGrad;
  const bool phiTakesInput = phi.takesInput(), rawGates = act.t > 0.0f;
  for (unsigned k0 = lo; k0 < hi; k0 += kChunk) {
    const unsigned m = hi - k0 < kChunk ? hi - k0 : kChunk;
    float f[kChunk], i[kChunk], gs[kChunk], o[kChunk], cs[kChunk], cPrev[kChunk], dh[kChunk],
        dcIn[kChunk], rF[kChunk], rI[kChunk], rG[kChunk], rO[kChunk], rC[kChunk];
    for (unsigned j = 0; j < m; ++j) {
      const unsigned k = k0 + j;
      f[j] = float(sf[k]);
      i[j] = float(si[k]);
      gs[j] = float(sg[k]);
      o[j] = float(so[k]);
      cs[j] = float(sc[k]);
      cPrev[j] = float(sp[k]);
      dh[j] = float(mm[k]) + float(carry[k]) + (hasOutGrad ? float(dy[k]) : 0.0f);
      dcIn[j] = float(dc[k]);
    }
    for (unsigned j = 0; j < m; ++j) {
      const float fv = rawGates ? rho.forward(f[j]) : f[j];
      const float iv = rawGates ? rho.forward(i[j]) : i[j];
      const float ov = rawGates ? rho.forward(o[j]) : o[j];
      const float g = rawCand ? phi.forward(gs[j]) : gs[j];
      const float phiIn = rawGates ? act.apply(cs[j]) : cs[j];
      const float phiC = rawCell ? phi.forward(phiIn) : cs[j];
      const float cAct = rawCell && phiTakesInput ? phiIn : phiC;
      rO[j] = act.passes(o[j]) ? rho.gradient(ov, dh[j] * phiC) : 0.0f;
      const float dPhi = act.passes(cs[j]) ? phi.gradient(cAct, dh[j] * ov) : 0.0f;
      const float dCellOut = dPhi + dcIn[j];
      const float dCell = clip.passes(cs[j]) ? dCellOut : 0.0f;
      rI[j] = act.passes(i[j]) ? rho.gradient(iv, dCell * g) : 0.0f;
      rG[j] = act.passes(gs[j]) ? phi.gradient(rawCand && phiTakesInput ? gs[j] : g, dCell * iv)
                                : 0.0f;
      rF[j] = act.passes(f[j]) ? rho.gradient(fv, dCell * cPrev[j]) : 0.0f;
      rC[j] = dCell * fv;
    }
    for (unsigned j = 0; j < m; ++j) {
      const unsigned k = k0 + j;
      dF[k] = T(rF[j]);
      dI[k] = T(rI[j]);
      dG[k] = T(rG[j]);
      dO[k] = T(rO[j]);
      dc[k] = T(rC[j]);
      carry[k] = T(0.0f);
    }
  }
}

} // namespace lstm_cell

} // namespace aspen::nn
