// Loss, deltas and accuracy per row (aspen::nn::calcLoss, calcAccuracy).
// Loss vertices: one MultiVertex per tile holding whole rows (worker w takes rows w, w + n, ...);
// per-row results (loss, labels) are vectors with one element per row of the tile.
// Accuracy: one Vertex per tile writes the tile's count, and one vertex adds the counts to the
// running total. Computed in float for float and half.
#include "NnCodeletMath.hpp"

namespace aspen::nn {

// log(p + kNnLogEps) keeps the loss finite where a probability is 0: the smallest normal float.
constexpr float kNnLogEps = 1.17549435e-38f;

// One row. expected(i) is the target of element i (one-hot or soft labels).
//   cross-entropy: deltas = deltasScale * (p / S - e), loss = -sum(e * log(p / S + eps))
//   sum-squared:   deltas = p - e,                     loss = 1/2 sum((p - e)^2)
// with S = modelOutputScaling; terms with e == 0 add nothing to the cross-entropy.
template <bool CrossEntropy, class Probs, class Deltas, class Expected>
ASPEN_HD inline float nnLossRow(const Probs &probs, const Deltas &deltas, Expected expected,
                                float deltasScale, float modelOutputScaling) {
  float loss = 0.0f;
  for (unsigned i = 0; i < deltas.size(); ++i) {
    const float e = expected(i);
    if (CrossEntropy) {
      const float p = float(probs[i]) / modelOutputScaling;
      deltas[i] = deltasScale * (p - e);
      if (e != 0.0f)
        loss -= e * nnLog(p + kNnLogEps);
    } else {
      const float d = float(probs[i]) - e;
      deltas[i] = d;
      loss += 0.5f * d * d;
    }
  }
  return loss;
}

// A label equal to MASKED_LABEL_CODE (all bits set, -1 as a signed label) masks its row: loss 0,
// deltas 0. Any other label outside [0, C) matches no class (an all-zero one-hot row).
template <class LabelT> ASPEN_HD inline bool nnIsMasked(LabelT label) {
  return label == LabelT(-1);
}

template <class T, class LabelT, bool CrossEntropy> class LossLabels : public MultiVertex {
public:
  Vector<Input<Vector<T>>> probs;
  Input<Vector<LabelT>> labels;
  Vector<Output<Vector<T>>> deltas;
  Output<Vector<T>> loss;
  Input<T> deltasScale;
  Input<T> modelOutputScaling;
  bool compute(unsigned workerId) {
    for (unsigned r = workerId; r < deltas.size(); r += numWorkers()) {
      const LabelT label = labels[r];
      if (nnIsMasked(label)) {
        for (unsigned i = 0; i < deltas[r].size(); ++i)
          deltas[r][i] = 0.0f;
        loss[r] = 0.0f;
        continue;
      }
      loss[r] = nnLossRow<CrossEntropy>(
          probs[r], deltas[r],
          [&](unsigned i) { return static_cast<unsigned long long>(label) == i ? 1.0f : 0.0f; },
          float(*deltasScale), float(*modelOutputScaling));
    }
    return true;
  }
};

template <class T, bool CrossEntropy> class LossOneHot : public MultiVertex {
public:
  Vector<Input<Vector<T>>> probs;
  Vector<Input<Vector<T>>> expected;
  Vector<Output<Vector<T>>> deltas;
  Output<Vector<T>> loss;
  Input<T> deltasScale;
  Input<T> modelOutputScaling;
  bool compute(unsigned workerId) {
    for (unsigned r = workerId; r < deltas.size(); r += numWorkers())
      loss[r] = nnLossRow<CrossEntropy>(
          probs[r], deltas[r], [&](unsigned i) { return float(expected[r][i]); },
          float(*deltasScale), float(*modelOutputScaling));
    return true;
  }
};

// count = number of rows whose first maximum is at their (unmasked) label.
template <class T, class LabelT> class Accuracy : public Vertex {
public:
  Vector<Input<Vector<T>>> activations;
  Input<Vector<LabelT>> labels;
  Output<unsigned> count;
  bool compute() {
    unsigned correct = 0;
    for (unsigned r = 0; r < activations.size(); ++r) {
      const LabelT label = labels[r];
      if (!nnIsMasked(label) && activations[r].size() != 0 &&
          static_cast<unsigned long long>(label) == nnArgBest<true, T>(activations[r]))
        ++correct;
    }
    *count = correct;
    return true;
  }
};

// total += sum(partials)
class AccumulateCount : public Vertex {
public:
  Input<Vector<unsigned>> partials;
  InOut<unsigned> total;
  bool compute() {
    unsigned sum = 0;
    for (unsigned i = 0; i < partials.size(); ++i)
      sum += partials[i];
    *total += sum;
    return true;
  }
};

template class LossLabels<float, unsigned, true>;
template class LossLabels<float, unsigned, false>;
template class LossLabels<float, int, true>;
template class LossLabels<float, int, false>;
template class LossLabels<half, unsigned, true>;
template class LossLabels<half, unsigned, false>;
template class LossLabels<half, int, true>;
template class LossLabels<half, int, false>;
template class LossOneHot<float, true>;
template class LossOneHot<float, false>;
template class LossOneHot<half, true>;
template class LossOneHot<half, false>;
template class Accuracy<float, unsigned>;
template class Accuracy<float, int>;
template class Accuracy<half, unsigned>;
template class Accuracy<half, int>;

} // namespace aspen::nn
