#!/usr/bin/python3
"""A small sequence classifier trained twice from the same seed: once with aspen_torch.LSTM, once
with torch.nn.LSTM. The two loss curves must agree within rounding.

The task: sequences of 8 features and 4 to 16 steps (a PackedSequence: variable lengths); the
class is whether the running sum of the first feature ends above zero. The model is a 2-layer
LSTM (hidden size 32) and a linear layer on the last layer's final hidden state. SGD with
momentum (an optimiser whose steps are proportional to the gradients, so rounding differences
stay rounding differences; Adam's first steps turn gradients that are zero up to rounding into
full steps of either sign), 300 steps of 32 sequences.

Run: PYTHONPATH=<build>/python /usr/bin/python3 examples/python/train_sequence_classifier.py
     [--steps N]. Exit status 0 when the curves agree (largest relative difference below 1e-3),
1 otherwise.
"""
import argparse
import sys
import time

import torch
from torch.nn.utils.rnn import pack_padded_sequence

import aspen_torch

FEATURES, HIDDEN, BATCH, MAX_STEPS = 8, 32, 32, 16
TOLERANCE = 1e-3  # the largest relative difference two loss curves that agree may have


class Classifier(torch.nn.Module):
    def __init__(self, lstm_class):
        super().__init__()
        self.lstm = lstm_class(FEATURES, HIDDEN, num_layers=2)
        self.head = torch.nn.Linear(HIDDEN, 2)

    def forward(self, packed):
        _, (h_n, _) = self.lstm(packed)
        return self.head(h_n[-1])


def batches(steps, seed, rows=slice(None)):
    """The same data for every run: (packed input, labels) per step, from the step's BATCH
    sequences those in rows (a data-parallel rank's share; all of them by default)."""
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        lengths = torch.randint(4, MAX_STEPS + 1, (BATCH,), generator=generator)
        x = torch.randn(MAX_STEPS, BATCH, FEATURES, generator=generator)
        mask = torch.arange(MAX_STEPS).unsqueeze(1) < lengths.unsqueeze(0)
        x = x * mask.unsqueeze(2)
        labels = (x[:, :, 0].sum(0) > 0).long()
        yield pack_padded_sequence(x[:, rows], lengths[rows], enforce_sorted=False), labels[rows]


def train(lstm_class, steps, rows=slice(None), wrap=None):
    """The Classifier with lstm_class from seed 0, trained on batches(steps, seed=1, rows):
    (the model, each step's loss, seconds a step). wrap(model) gives the module that runs the
    steps (a DistributedDataParallel around the model, say); by default the model itself."""
    torch.manual_seed(0)
    model = Classifier(lstm_class)
    trained = wrap(model) if wrap else model
    optimiser = torch.optim.SGD(trained.parameters(), lr=0.1, momentum=0.9)
    losses, start = [], time.perf_counter()
    for packed, labels in batches(steps, seed=1, rows=rows):
        # set_to_none: a parameter that the step gave no gradient keeps grad None, not zeros
        optimiser.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(trained(packed), labels)
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    return model, losses, (time.perf_counter() - start) / steps


def largest_relative_difference(losses, reference):
    """The bar two loss curves must meet: max over steps of |loss - reference| / |reference|."""
    return max(abs(a - r) / max(abs(r), 1e-12) for a, r in zip(losses, reference))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    torch.set_num_threads(1)  # the same arithmetic order every run
    _, aspen_losses, aspen_seconds = train(aspen_torch.LSTM, args.steps)
    _, torch_losses, torch_seconds = train(torch.nn.LSTM, args.steps)
    for step, (a, t) in enumerate(zip(aspen_losses, torch_losses)):
        if step % 50 == 0 or step == args.steps - 1:
            print(f"step {step:4d}: loss aspen_torch {a:.6f}  torch.nn {t:.6f}")
    accuracy_hint = "learnt" if aspen_losses[-1] < 0.5 * aspen_losses[0] else "did not learn"
    print(f"{args.steps} steps: final loss {aspen_losses[-1]:.4f} ({accuracy_hint}); "
          f"{1e3 * aspen_seconds:.2f} ms a step with aspen_torch, {1e3 * torch_seconds:.2f} ms "
          f"with torch.nn")
    worst = largest_relative_difference(aspen_losses, torch_losses)
    print(f"largest relative difference between the loss curves: {worst:.2e}")
    agree = worst < TOLERANCE
    print("the loss curves agree" if agree else "the loss curves DIFFER")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
