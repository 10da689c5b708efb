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


class Classifier(torch.nn.Module):
    def __init__(self, lstm_class):
        super().__init__()
        self.lstm = lstm_class(FEATURES, HIDDEN, num_layers=2)
        self.head = torch.nn.Linear(HIDDEN, 2)

    def forward(self, packed):
        _, (h_n, _) = self.lstm(packed)
        return self.head(h_n[-1])


def batches(steps, seed):
    """The same data for both runs: (packed input, labels) per step."""
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        lengths = torch.randint(4, MAX_STEPS + 1, (BATCH,), generator=generator)
        x = torch.randn(MAX_STEPS, BATCH, FEATURES, generator=generator)
        mask = torch.arange(MAX_STEPS).unsqueeze(1) < lengths.unsqueeze(0)
        x = x * mask.unsqueeze(2)
        labels = (x[:, :, 0].sum(0) > 0).long()
        yield pack_padded_sequence(x, lengths, enforce_sorted=False), labels


def train(lstm_class, steps):
    torch.manual_seed(0)
    model = Classifier(lstm_class)
    optimiser = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses, start = [], time.perf_counter()
    for packed, labels in batches(steps, seed=1):
        optimiser.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(packed), labels)
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    return losses, (time.perf_counter() - start) / steps


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    torch.set_num_threads(1)  # the same arithmetic order every run
    aspen_losses, aspen_seconds = train(aspen_torch.LSTM, args.steps)
    torch_losses, torch_seconds = train(torch.nn.LSTM, args.steps)
    worst = 0.0
    for step, (a, t) in enumerate(zip(aspen_losses, torch_losses)):
        worst = max(worst, abs(a - t) / max(abs(t), 1e-12))
        if step % 50 == 0 or step == args.steps - 1:
            print(f"step {step:4d}: loss aspen_torch {a:.6f}  torch.nn {t:.6f}")
    accuracy_hint = "learnt" if aspen_losses[-1] < 0.5 * aspen_losses[0] else "did not learn"
    print(f"{args.steps} steps: final loss {aspen_losses[-1]:.4f} ({accuracy_hint}); "
          f"{1e3 * aspen_seconds:.2f} ms a step with aspen_torch, {1e3 * torch_seconds:.2f} ms "
          f"with torch.nn")
    print(f"largest relative difference between the loss curves: {worst:.2e}")
    agree = worst < 1e-3
    print("the loss curves agree" if agree else "the loss curves DIFFER")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
