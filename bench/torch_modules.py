#!/usr/bin/python3
"""aspen_torch.LSTM and aspen_torch.GRU against torch.nn.LSTM and torch.nn.GRU on the CPU, side
by side in one run: inference (forward under torch.no_grad()) and a training step (forward,
then backward of the output's sum: input, state and weight gradients), on the LSTM benchmark's
DeepBench-style shapes: H in {256, 512, 1024}, B in {1, 4, 16, 64}, T in {25, 50, 100}, I = H.

Both modules hold the same parameters (state_dict) and see the same input; the forward outputs
must agree (relative 1e-4, else exit 1). Each time is the median of --reps runs after one warm-up
run (which, for Aspen, compiles the layer: its compile time is reported separately). torch gets
torch.set_num_threads(cores) and Aspen's CPU executor its default thread pool (the cores). The
table's last column is torch / Aspen: above 1, Aspen is faster. "RESULT" lines repeat it.

Usage: PYTHONPATH=<build>/python /usr/bin/python3 bench/torch_modules.py [--quick]
       [--max-h N] [--kinds lstm,gru] [--modes inference,training] [--reps N]
--quick: H 256, B {1, 16}, T 25. scripts/bench.sh runs it with --max-h 256 by default.
"""
import argparse
import os
import statistics
import sys
import time

import torch

import aspen_torch


def median_ms(fn, reps):
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(1e3 * (time.perf_counter() - start))
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--max-h", type=int, default=1024)
    parser.add_argument("--kinds", default="lstm,gru")
    parser.add_argument("--modes", default="inference,training")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    torch.set_num_threads(cores)
    hs, bs, ts = ([256], [1, 16], [25]) if args.quick else \
        ([h for h in (256, 512, 1024) if h <= args.max_h], [1, 4, 16, 64], [25, 50, 100])
    print(f"# aspen_torch vs torch.nn {torch.__version__} on {cores} cores (median of "
          f"{args.reps}; ratio = torch / aspen, above 1: Aspen faster)")
    print(f"{'layer':5} {'mode':9} {'H':>5} {'B':>3} {'T':>4} {'compile s':>9} "
          f"{'aspen ms':>9} {'torch ms':>9} {'ratio':>6}")
    status = 0
    for kind in args.kinds.split(","):
        ours, theirs = {"lstm": (aspen_torch.LSTM, torch.nn.LSTM),
                        "gru": (aspen_torch.GRU, torch.nn.GRU)}[kind]
        for H in hs:
            torch.manual_seed(0)
            reference = theirs(H, H)
            mine = ours(H, H)
            mine.load_state_dict(reference.state_dict())
            for B in bs:
                for T in ts:
                    x = torch.randn(T, B, H)
                    for mode in args.modes.split(","):
                        if mode == "inference":
                            def step(module):
                                with torch.no_grad():
                                    return module(x)[0]
                        else:
                            def step(module):
                                xs = x.clone().requires_grad_()
                                out = module(xs)[0]
                                out.sum().backward()
                                return out.detach()
                        start = time.perf_counter()
                        got = step(mine)  # compiles the layer
                        compile_s = time.perf_counter() - start
                        want = step(reference)
                        difference = ((got - want).abs().max() /
                                      want.abs().max().clamp_min(1e-30)).item()
                        if difference > 1e-4:
                            print(f"# {kind} {mode} H={H} B={B} T={T}: outputs differ by "
                                  f"{difference:.2e} relative", file=sys.stderr)
                            status = 1
                        aspen_ms = median_ms(lambda: step(mine), args.reps)
                        torch_ms = median_ms(lambda: step(reference), args.reps)
                        ratio = torch_ms / aspen_ms
                        print(f"{kind:5} {mode:9} {H:5} {B:3} {T:4} {compile_s:9.2f} "
                              f"{aspen_ms:9.2f} {torch_ms:9.2f} {ratio:6.2f}", flush=True)
                        print(f"RESULT torch_modules layer={kind} mode={mode} H={H} B={B} T={T} "
                              f"aspen_ms={aspen_ms:.3f} torch_ms={torch_ms:.3f} "
                              f"ratio={ratio:.3f}", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
