#!/usr/bin/python3
"""Aspen's convolutions (aspen::linalg, through bench_conv) against torch's F.conv2d and its two
gradients (aten::convolution_backward: oneDNN inside Debian's torch 1.13) on the CPU, layer by
layer in one run: ResNet-50's layers (the 7x7/2 stem, the 1x1 and 3x3 layers at 56, 28, 14 and
7, the 3x3/2 at 56) and VGG-16's 3x3 layers, at B = 1, 8 and 32; forward, backward data and
backward filter, as GFLOP/s (direct FLOPs: 2 * B * K * C * R * S * P * Q / groups) and the
torch / Aspen time ratio (above 1, Aspen is faster).

Method (bench/torch_modules.py's): each side's fastest of --reps runs after a warm-up, the two
sides alternating per layer (torch, Aspen, torch, Aspen; the fastest of both rounds), one
OpenBLAS thread on both sides and torch.set_num_threads(cores), Aspen's CPU executor on every
core. Aspen runs in bench_conv subprocesses (one per round), which build and compile the layer
first; only the runs are timed.

Usage: /usr/bin/python3 bench/torch_conv.py --bench build/bench/bench_conv [--quick]
       [--batches 1,8,32] [--nets resnet50,vgg16] [--layers NAME,...] [--reps N]
--quick: ResNet-50 only, B = 1 and 8. Prints a table and RESULT lines; the geometric means of
the ratios close it.
"""
import argparse
import math
import os
import subprocess
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch
import torch.nn.functional as F

# name, input channels, output channels, field (square), kernel, stride, padding
RESNET50 = [
    ("r50.stem7x7s2", 3, 64, 224, 7, 2, 3),
    ("r50.56.1x1.64-64", 64, 64, 56, 1, 1, 0),
    ("r50.56.3x3.64-64", 64, 64, 56, 3, 1, 1),
    ("r50.56.1x1.64-256", 64, 256, 56, 1, 1, 0),
    ("r50.56.1x1.256-64", 256, 64, 56, 1, 1, 0),
    ("r50.56.3x3s2.128-128", 128, 128, 56, 3, 2, 1),
    ("r50.28.1x1.128-512", 128, 512, 28, 1, 1, 0),
    ("r50.28.1x1.512-128", 512, 128, 28, 1, 1, 0),
    ("r50.28.3x3.128-128", 128, 128, 28, 3, 1, 1),
    ("r50.14.3x3.256-256", 256, 256, 14, 3, 1, 1),
    ("r50.14.1x1.256-1024", 256, 1024, 14, 1, 1, 0),
    ("r50.14.1x1.1024-256", 1024, 256, 14, 1, 1, 0),
    ("r50.7.3x3.512-512", 512, 512, 7, 3, 1, 1),
    ("r50.7.1x1.512-2048", 512, 2048, 7, 1, 1, 0),
    ("r50.7.1x1.2048-512", 2048, 512, 7, 1, 1, 0),
]
VGG16 = [
    ("vgg.224.3-64", 3, 64, 224, 3, 1, 1),
    ("vgg.224.64-64", 64, 64, 224, 3, 1, 1),
    ("vgg.112.128-128", 128, 128, 112, 3, 1, 1),
    ("vgg.56.256-256", 256, 256, 56, 3, 1, 1),
    ("vgg.28.512-512", 512, 512, 28, 3, 1, 1),
    ("vgg.14.512-512", 512, 512, 14, 3, 1, 1),
]
PASSES = ("fwd", "bwd", "wu")


def out_size(field, kernel, stride, padding):
    return (field + 2 * padding - kernel) // stride + 1


def flops(batch, cin, cout, field, kernel, stride, padding):
    p = out_size(field, kernel, stride, padding)
    return 2 * batch * cout * cin * kernel * kernel * p * p


def torch_times(batch, cin, cout, field, kernel, stride, padding, reps):
    """Fastest ms of each pass."""
    x = torch.rand(batch, cin, field, field) * 2 - 1
    w = torch.rand(cout, cin, kernel, kernel) * 2 - 1
    p = out_size(field, kernel, stride, padding)
    dy = torch.rand(batch, cout, p, p) * 2 - 1
    s, pad = [stride, stride], [padding, padding]
    calls = {
        "fwd": lambda: F.conv2d(x, w, None, stride, padding),
        "bwd": lambda: torch.ops.aten.convolution_backward(
            dy, x, w, None, s, pad, [1, 1], False, [0, 0], 1, [True, False, False]),
        "wu": lambda: torch.ops.aten.convolution_backward(
            dy, x, w, None, s, pad, [1, 1], False, [0, 0], 1, [False, True, False]),
    }
    result = {}
    with torch.no_grad():
        for name in PASSES:
            calls[name]()
            best = float("inf")
            for _ in range(reps):
                start = time.perf_counter()
                calls[name]()
                best = min(best, (time.perf_counter() - start) * 1e3)
            result[name] = best
    return result


def aspen_times(bench, batch, cin, cout, field, kernel, stride, padding, reps):
    """Fastest ms of each pass and the plan's method, from one bench_conv run."""
    command = [bench, "--batch", str(batch), "--field", f"{field},{field}", "--in", str(cin),
               "--out", str(cout), "--kernel", str(kernel), "--stride", str(stride),
               "--padding", str(padding), "--reps", str(reps)]
    text = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    result, method = {}, "?"
    for line in text.splitlines():
        if line.startswith("RESULT "):
            fields = dict(item.split("=", 1) for item in line.split()[1:])
            result[fields["pass"]] = float(fields["ms"])
            method = fields["method"]
    return result, method


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", default="build/bench/bench_conv")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--batches", default="1,8,32")
    parser.add_argument("--nets", default="resnet50,vgg16")
    parser.add_argument("--layers", default="")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    torch.set_num_threads(cores)
    batches = [1, 8] if args.quick else [int(b) for b in args.batches.split(",")]
    nets = ["resnet50"] if args.quick else args.nets.split(",")
    layers = (RESNET50 if "resnet50" in nets else []) + (VGG16 if "vgg16" in nets else [])
    if args.layers:
        wanted = set(args.layers.split(","))
        layers = [layer for layer in layers if layer[0] in wanted]
    print(f"torch {torch.__version__}, {cores} cores, OPENBLAS_NUM_THREADS="
          f"{os.environ['OPENBLAS_NUM_THREADS']}; GFLOP/s torch | Aspen, ratio torch/Aspen time")
    print(f"{'layer':<24} {'B':>3} {'method':>8}" +
          "".join(f" {p + ' torch':>10} {p + ' aspen':>10} {'ratio':>6}" for p in PASSES))
    ratios = {p: [] for p in PASSES}
    for batch in batches:
        for name, cin, cout, field, kernel, stride, padding in layers:
            shape = (batch, cin, cout, field, kernel, stride, padding)
            t = {p: float("inf") for p in PASSES}
            a = {p: float("inf") for p in PASSES}
            method = "?"
            for _ in range(2):
                for p, ms in torch_times(*shape, args.reps).items():
                    t[p] = min(t[p], ms)
                times, method = aspen_times(args.bench, *shape, args.reps)
                for p, ms in times.items():
                    a[p] = min(a[p], ms)
            gflop = flops(*shape) / 1e9
            row = f"{name:<24} {batch:>3} {method:>8}"
            for p in PASSES:
                ratio = t[p] / a[p]
                ratios[p].append(ratio)
                row += f" {gflop / t[p] * 1e3:>10.1f} {gflop / a[p] * 1e3:>10.1f} {ratio:>6.2f}"
                print(f"RESULT layer={name} B={batch} pass={p} torch_ms={t[p]:.3f} "
                      f"aspen_ms={a[p]:.3f} ratio={ratio:.3f} method={method}", file=sys.stderr)
            print(row, flush=True)
    for p in PASSES:
        if ratios[p]:
            mean = math.exp(sum(math.log(r) for r in ratios[p]) / len(ratios[p]))
            print(f"geometric mean torch/Aspen, {p}: {mean:.2f} over {len(ratios[p])} layers "
                  f"(min {min(ratios[p]):.2f}, max {max(ratios[p]):.2f})")


if __name__ == "__main__":
    main()
