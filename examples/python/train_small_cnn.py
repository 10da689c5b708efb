#!/usr/bin/python3
"""A small CNN trained twice from the same seed: once with aspen_torch's Conv2d, BatchNorm2d,
MaxPool2d and AvgPool2d, once with torch.nn's. The two loss curves must agree within rounding.

The task: 12x12 single-channel images the script makes, each a bright bar (horizontal or
vertical, at a random place) on noise; the class is the bar's direction. The model: conv 3x3
(8 channels) - batch norm - relu - max pool 2x2 - conv 3x3 (16 channels, stride 1, padding 1) -
batch norm - relu - average pool over the field - linear head. SGD with momentum, 200 steps of
32 images; then the two models, in eval mode, classify held-out images.

Run: PYTHONPATH=<build>/python /usr/bin/python3 examples/python/train_small_cnn.py [--steps N].
Exit status 0 when the curves agree (largest relative difference below 1e-3) and the model
learnt, 1 otherwise.
"""
import argparse
import sys
import time

import torch

import aspen_torch

SIZE, BATCH = 12, 32


class Net(torch.nn.Module):
    def __init__(self, nn):
        super().__init__()
        self.features = torch.nn.Sequential(
            nn.Conv2d(1, 8, 3), nn.BatchNorm2d(8), torch.nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), torch.nn.ReLU(),
            nn.AvgPool2d(5))
        self.head = torch.nn.Linear(16, 2)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


def images(count, generator):
    """count images with a bar and their labels (0 horizontal, 1 vertical)."""
    labels = torch.randint(0, 2, (count,), generator=generator)
    x = 0.3 * torch.randn(count, 1, SIZE, SIZE, generator=generator)
    where = torch.randint(1, SIZE - 1, (count,), generator=generator)
    for i in range(count):
        if labels[i] == 0:
            x[i, 0, where[i], :] += 1.5
        else:
            x[i, 0, :, where[i]] += 1.5
    return x, labels


def train(nn, steps):
    torch.manual_seed(0)
    model = Net(nn)
    optimiser = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    generator = torch.Generator().manual_seed(1)
    losses, start = [], time.perf_counter()
    for _ in range(steps):
        x, labels = images(BATCH, generator)
        optimiser.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), labels)
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    seconds = (time.perf_counter() - start) / steps
    model.eval()
    with torch.no_grad():
        x, labels = images(256, torch.Generator().manual_seed(2))
        accuracy = (model(x).argmax(1) == labels).float().mean().item()
    return losses, seconds, accuracy


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    torch.set_num_threads(1)  # the same arithmetic order every run
    aspen_losses, aspen_seconds, aspen_accuracy = train(aspen_torch, args.steps)
    torch_losses, torch_seconds, torch_accuracy = train(torch.nn, args.steps)
    worst = 0.0
    for step, (a, t) in enumerate(zip(aspen_losses, torch_losses)):
        worst = max(worst, abs(a - t) / max(abs(t), 1e-12))
        if step % 40 == 0 or step == args.steps - 1:
            print(f"step {step:4d}: loss aspen_torch {a:.6f}  torch.nn {t:.6f}")
    print(f"{args.steps} steps: held-out accuracy {aspen_accuracy:.3f} with aspen_torch, "
          f"{torch_accuracy:.3f} with torch.nn; {1e3 * aspen_seconds:.2f} ms a step with "
          f"aspen_torch, {1e3 * torch_seconds:.2f} ms with torch.nn")
    print(f"largest relative difference between the loss curves: {worst:.2e}")
    agree = worst < 1e-3
    learnt = aspen_accuracy > 0.9
    print("the loss curves agree" if agree else "the loss curves DIFFER")
    if not learnt:
        print("the model did not learn the task")
    return 0 if agree and learnt else 1


if __name__ == "__main__":
    sys.exit(main())
