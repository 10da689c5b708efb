#!/usr/bin/python3
"""torch.nn.LSTM's fastest inference time a run, for examples/lstm_demo.cpp to print beside
Aspen's: the same shape (T steps, batch B, input I, hidden H, float32, time-major, a random
initial state), under torch.no_grad(), one warm-up run and then --runs timed runs.

Prints one last line 'torch_ms <fastest ms>'; without torch it prints why and exits 1.
Usage: /usr/bin/python3 time_torch_lstm.py --steps T --batch B --input I --hidden H
       [--runs N] [--cuda]
"""
import argparse
import os
import sys
import time

# One OpenBLAS thread: torch.nn's fastest setting on this project's two-core machines (its own
# OpenMP threads and OpenBLAS's otherwise oversubscribe the cores; bench/torch_modules.py).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("steps", "batch", "input", "hidden"):
        parser.add_argument("--" + name, type=int, required=True)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--cuda", action="store_true")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("torch is not installed for " + sys.executable)
        return 1
    if args.cuda and not torch.cuda.is_available():
        print("torch here has no CUDA device")
        return 1
    device = torch.device("cuda" if args.cuda else "cpu")
    torch.manual_seed(1)
    lstm = torch.nn.LSTM(args.input, args.hidden).to(device)
    x = torch.rand(args.steps, args.batch, args.input, device=device) * 2 - 1
    state = tuple(torch.rand(1, args.batch, args.hidden, device=device) * 2 - 1 for _ in range(2))

    def synchronize():
        if args.cuda:
            torch.cuda.synchronize()

    best = float("inf")
    with torch.no_grad():
        for run in range(args.runs + 1):
            synchronize()
            start = time.perf_counter()
            lstm(x, state)
            synchronize()
            ms = (time.perf_counter() - start) * 1e3
            if run > 0:
                best = min(best, ms)
    print("torch_ms {:.4f}".format(best))
    return 0


if __name__ == "__main__":
    sys.exit(main())
