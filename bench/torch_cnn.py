#!/usr/bin/python3
"""aspen_torch's CNN modules (Conv2d, BatchNorm2d, MaxPool2d) against torch.nn's on the CPU, side
by side in one run: a ResNet-18 basic block (64 channels at 56x56: conv 3x3, batch norm, relu,
conv 3x3, batch norm, the identity added, relu) and a VGG block (128 channels at 56x56: two conv
3x3 with relu, max pool 2x2), inference (eval mode, no gradients) and a training step (train
mode, forward and the backward of a dense output gradient made once a case, as a layer inside a
network receives), at B = 1, 8 and 32; and max pooling
(3x3/2, 64 channels at 112x112: ResNet's stem) and batch norm (64 at 112x112, 256 at 56x56)
alone, forward and backward.

Both sides hold the same parameters (state_dict) and see the same input; the forward outputs
must agree (relative 1e-3, else exit 1). Each side runs --reps (3) times after a warm-up (for
Aspen, the compile: reported apart), the two sides alternating; the table gives each one's
fastest run and torch / Aspen (above 1, Aspen is faster). torch gets
torch.set_num_threads(cores), one OpenBLAS thread on both sides (bench/torch_modules.py's
method), and glibc keeps freed memory (see _MALLOC below).

Usage: PYTHONPATH=<build>/python /usr/bin/python3 bench/torch_cnn.py [--quick] [--batches 1,8,32]
       [--reps N] [--cuda]
--quick: B = 1 and 8. --cuda: both sides on the GPU (scripts/gpu-check.sh), each time ending
with torch.cuda.synchronize().
"""
import argparse
import math
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# glibc hands blocks over its mmap threshold back to the system when they are freed, so whether a
# step's output (25 MB at B = 8) lands on fresh pages is luck, and a fresh page costs a fault:
# about 2.5 ms a MB on the virtual machines this runs on, more than a batch norm's arithmetic.
# Kept on the heap, freed memory is reused by both sides, as in a long-running training process.
# glibc reads these when the process starts: the script runs itself again with them set.
_MALLOC = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(1 << 40)}
if any(os.environ.get(k) != v for k, v in _MALLOC.items()):
    os.environ.update(_MALLOC)
    os.execv(sys.executable, [sys.executable] + sys.argv)

import torch

import aspen_torch

_CUDA = False


def _sync():
    if _CUDA:
        torch.cuda.synchronize()


class BasicBlock(torch.nn.Module):
    def __init__(self, nn, channels=64):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + x)


class VggBlock(torch.nn.Module):
    def __init__(self, nn, channels=128):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
        self.pool = nn.MaxPool2d(2)

    def forward(self, x):
        return self.pool(torch.relu(self.conv2(torch.relu(self.conv1(x)))))


CASES = [  # name, module factory, input shape without the batch
    ("resnet18.block.64@56", lambda nn: BasicBlock(nn), (64, 56, 56)),
    ("vgg.block.128@56", lambda nn: VggBlock(nn), (128, 56, 56)),
    ("maxpool.3x3s2.64@112", lambda nn: nn.MaxPool2d(3, 2, 1), (64, 112, 112)),
    ("batchnorm.64@112", lambda nn: nn.BatchNorm2d(64), (64, 112, 112)),
    ("batchnorm.256@56", lambda nn: nn.BatchNorm2d(256), (256, 56, 56)),
]


def step(module, x, training, grad=None):
    if training:
        xs = x.clone().requires_grad_()
        module(xs).backward(grad)
    else:
        with torch.no_grad():
            module(x)
    _sync()


def fastest_ms(fns, reps):
    """Each fn's fastest time in ms, the fns alternating over reps rounds."""
    times = [math.inf] * len(fns)
    for _ in range(reps):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            times[i] = min(times[i], (time.perf_counter() - start) * 1e3)
    return times


def main():
    global _CUDA
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--batches", default="1,8,32")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--cuda", action="store_true")
    args = parser.parse_args()
    _CUDA = args.cuda
    device = torch.device("cuda" if args.cuda else "cpu")
    cores = os.cpu_count() or 1
    torch.set_num_threads(cores)
    batches = [1, 8] if args.quick else [int(b) for b in args.batches.split(",")]
    print(f"torch {torch.__version__} on {device}, {cores} cores; fastest of {args.reps} runs in "
          "ms; ratio torch / Aspen (above 1, Aspen is faster)")
    print(f"{'case':<24} {'B':>3} {'mode':>9} {'torch':>10} {'aspen':>10} {'ratio':>6} "
          f"{'compile s':>9}")
    ratios, failed = [], False
    for batch in batches:
        for name, make, shape in CASES:
            torch.manual_seed(0)
            reference = make(torch.nn).to(device)
            mine = make(aspen_torch).to(device)
            mine.load_state_dict(reference.state_dict())
            x = torch.randn(batch, *shape, device=device)
            with torch.no_grad():  # the output's shape, in eval mode (no statistics update)
                out_shape = reference.eval()(x).shape
            for mode in ("inference", "training"):
                training = mode == "training"
                reference.train(training), mine.train(training)
                if not training:  # the same outputs (eval mode: no running-statistics update)
                    with torch.no_grad():
                        want, got = reference(x), mine(x)
                    scale = want.abs().max().item() + 1e-6
                    if (got - want).abs().max().item() > 1e-3 * scale:
                        print(f"FAIL: {name} B={batch}: outputs differ", file=sys.stderr)
                        failed = True
                # A dense output gradient, as a layer inside a network receives (the gradient of
                # .sum() is one value broadcast, which torch's kernels read from cache).
                grad = torch.randn(out_shape, device=device) if training else None
                start = time.perf_counter()
                step(mine, x, training, grad)  # warm-up: compiles Aspen's layers
                compile_s = time.perf_counter() - start
                step(reference, x, training, grad)
                t_torch, t_aspen = fastest_ms(
                    [lambda: step(reference, x, training, grad),
                     lambda: step(mine, x, training, grad)],
                    args.reps)
                ratio = t_torch / t_aspen
                ratios.append(ratio)
                print(f"{name:<24} {batch:>3} {mode:>9} {t_torch:>10.2f} {t_aspen:>10.2f} "
                      f"{ratio:>6.2f} {compile_s:>9.2f}", flush=True)
                print(f"RESULT case={name} B={batch} mode={mode} torch_ms={t_torch:.3f} "
                      f"aspen_ms={t_aspen:.3f} ratio={ratio:.3f}", file=sys.stderr)
    mean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"geometric mean torch/Aspen: {mean:.2f} over {len(ratios)} rows "
          f"(min {min(ratios):.2f}, max {max(ratios):.2f})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
