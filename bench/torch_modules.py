#!/usr/bin/python3
"""aspen_torch.LSTM, GRU and RNN against torch.nn.LSTM, GRU and RNN on the CPU, side
by side in one run: inference (forward under torch.no_grad()) and a training step (forward,
then backward of the output's sum: input, state and weight gradients), on the LSTM benchmark's
DeepBench-style shapes: H in {256, 512, 1024}, B in {1, 4, 16, 64}, T in {25, 50, 100}, I = H.

Both modules hold the same parameters (state_dict) and see the same input; the forward outputs
must agree (relative 1e-4, else exit 1). Each module runs --reps (5) times after one warm-up run
(which, for Aspen, compiles the layer: its compile time is reported separately); the two
modules' runs alternate, each after a --settle pause, and the table gives each one's fastest
run: on two shared cores, torch.nn's times have slow spells of 10-20x that last several runs
(torch alone, no Aspen in the process: a GRU inference at H = 256, B = 16, T = 25 took 8-13 ms,
and 97-204 ms in its first run after a change of shape), which a median of 5 still catches.
The RESULT lines carry the medians too. torch gets torch.set_num_threads(cores) and Aspen's
CPU executor its default thread pool (the cores). The table's last column is torch / Aspen:
above 1, Aspen is faster.

Usage: PYTHONPATH=<build>/python /usr/bin/python3 bench/torch_modules.py [--quick]
       [--max-h N] [--hidden H,...] [--batches B,...] [--steps T,...]
       [--kinds lstm,gru,rnn,rnn_relu]
       [--modes inference,training] [--reps N] [--settle S] [--device cpu|cpu:N] [--cuda]
       [--layers L] [--bidirectional] [--proj-size P]
--quick: H 256, B {1, 16}, T 25. scripts/bench.sh runs it with --max-h 256 by default.
--layers, --bidirectional: a stack of L layers, each in both directions (the layer column
reads e.g. lstm2b); --bidirectional --layers 2 are the configurations people use most.
--proj-size P: LSTM projections (proj_size, the column reads e.g. lstm3p256); the speech
models' shape is --layers 3 --hidden 1024 --proj-size 256.
--options JSON: Aspen's layer options for its modules (e.g. '{"stackSchedule": "wavefront"}'
against '{"stackSchedule": "layerByLayer"}', each against torch.nn in its own run).
--cuda: both modules on the GPU (scripts/gpu-check.sh runs it there with --quick); each time
then ends with torch.cuda.synchronize().
"""
import argparse
import functools
import os
import statistics
import sys
import time

# OpenBLAS, which both sides call, reads its thread count when torch loads it. One thread is
# torch.nn's fastest setting on the two cores measured (its own OpenMP threads and OpenBLAS's
# otherwise oversubscribe them: GRU inference at H = 256, B = 64, T = 25 took 26 ms with one
# OpenBLAS thread, 110-175 ms in slow spells with two) and Aspen's too (its executor spreads
# the layer over the cores itself). Set OPENBLAS_NUM_THREADS to measure another setting.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import torch

import aspen_torch


_CUDA = False


def _synchronize():
    """With --cuda, waits for the GPU: a time covers the work, not just its launch."""
    if _CUDA:
        torch.cuda.synchronize()


def interleaved_times_ms(fns, reps, settle_s):
    """Each fn's (fastest, median) time in ms over reps rounds, every round timing each fn once
    in turn, so that the machine's slow spells (it is shared) fall on both sides alike. Each
    timed call starts settle_s after the previous one ended: OpenBLAS's worker threads busy-wait
    about 0.1 s after a call and torch's OpenMP threads after a parallel region, and back to
    back each side would run against the other's spinning threads."""
    times = [[] for _ in fns]
    for _ in range(reps):
        for fn, spent in zip(fns, times):
            time.sleep(settle_s)
            _synchronize()
            start = time.perf_counter()
            fn()
            _synchronize()
            spent.append(1e3 * (time.perf_counter() - start))
    return [(min(spent), statistics.median(spent)) for spent in times]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--cuda", action="store_true",
                        help="both modules on the GPU (torch.nn: cuDNN; Aspen: its GPU device), "
                             "TF32 off on both sides")
    parser.add_argument("--max-h", type=int, default=1024)
    parser.add_argument("--kinds", default="lstm,gru")
    parser.add_argument("--modes", default="inference,training")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--device", default="cpu",
                        help="the aspen_torch backend's device: cpu (a tile per core), cpu:N")
    parser.add_argument("--hidden", default=None,
                        help="e.g. 512 (default: 256, 512, 1024 up to --max-h)")
    parser.add_argument("--batches", default=None, help="e.g. 1,16 (default: 1,4,16,64)")
    parser.add_argument("--steps", default=None, help="e.g. 25 (default: 25,50,100)")
    parser.add_argument("--layers", type=int, default=1, help="layers in the stack (1)")
    parser.add_argument("--proj-size", type=int, default=0,
                        help="LSTM proj_size (0: none)")
    parser.add_argument("--bidirectional", action="store_true",
                        help="every layer in both directions")
    parser.add_argument("--options", default=None,
                        help="a JSON object of Aspen's layer options for the Aspen modules, e.g. "
                             "'{\"stackSchedule\": \"wavefront\"}'")
    parser.add_argument("--layer-by-layer", action="store_true",
                        help="a stack's layers and directions each one backend call (the "
                             "modules' one_call = False), not the stack in one call")
    parser.add_argument("--settle", type=float, default=0.15,
                        help="seconds between timed calls (see interleaved_times_ms)")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    torch.set_num_threads(cores)
    hs, bs, ts = ([256], [1, 16], [25]) if args.quick else \
        ([h for h in (256, 512, 1024) if h <= args.max_h], [1, 4, 16, 64], [25, 50, 100])
    if args.hidden:
        hs = [int(h) for h in args.hidden.split(",")]
    if args.batches:
        bs = [int(b) for b in args.batches.split(",")]
    if args.steps:
        ts = [int(t) for t in args.steps.split(",")]
    global _CUDA
    _CUDA = args.cuda
    device = torch.device("cuda" if args.cuda else "cpu")
    if args.cuda:
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
        if args.device == "cpu":
            args.device = f"gpu:{torch.cuda.current_device()}"
    backend = aspen_torch.Backend(args.device, 64)
    print(f"# aspen_torch vs torch.nn {torch.__version__} on {cores} cores, OPENBLAS_NUM_THREADS="
          f"{os.environ['OPENBLAS_NUM_THREADS']}, aspen device {args.device} (fastest of "
          f"{args.reps}; ratio = torch / aspen, above 1: Aspen faster)")
    print(f"{'layer':9} {'mode':9} {'H':>5} {'B':>3} {'T':>4} {'compile s':>9} "
          f"{'aspen ms':>9} {'torch ms':>9} {'ratio':>6}")
    status = 0
    stack = {"num_layers": args.layers, "bidirectional": args.bidirectional}
    if args.proj_size:
        stack["proj_size"] = args.proj_size
    for cell in args.kinds.split(","):
        relu = {"nonlinearity": "relu"}
        ours, theirs = {"lstm": (aspen_torch.LSTM, torch.nn.LSTM),
                        "gru": (aspen_torch.GRU, torch.nn.GRU),
                        "rnn": (aspen_torch.RNN, torch.nn.RNN),
                        "rnn_relu": (functools.partial(aspen_torch.RNN, **relu),
                                     functools.partial(torch.nn.RNN, **relu))}[cell]
        if args.proj_size and cell != "lstm":
            print(f"# {cell}: no projection (proj_size is the LSTM's)", file=sys.stderr)
            continue
        kind = cell
        if args.layers != 1 or args.bidirectional or args.proj_size:
            kind += f"{args.layers}{'b' if args.bidirectional else ''}"
        if args.proj_size:
            kind += f"p{args.proj_size}"
        for H in hs:
            torch.manual_seed(0)
            reference = theirs(H, H, **stack).to(device)
            mine = ours(H, H, backend=backend, options=args.options, **stack).to(device)
            mine.load_state_dict(reference.state_dict())
            mine.one_call = not args.layer_by_layer
            for B in bs:
                for T in ts:
                    x = torch.randn(T, B, H, device=device)
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
                        (aspen_ms, aspen_median), (torch_ms, torch_median) = interleaved_times_ms(
                            [lambda: step(mine), lambda: step(reference)], args.reps,
                            args.settle)
                        ratio = torch_ms / aspen_ms
                        print(f"{kind:9} {mode:9} {H:5} {B:3} {T:4} {compile_s:9.2f} "
                              f"{aspen_ms:9.2f} {torch_ms:9.2f} {ratio:6.2f}", flush=True)
                        print(f"RESULT torch_modules layer={kind} mode={mode} H={H} B={B} T={T} "
                              f"aspen_ms={aspen_ms:.3f} torch_ms={torch_ms:.3f} "
                              f"ratio={ratio:.3f} aspen_median_ms={aspen_median:.3f} "
                              f"torch_median_ms={torch_median:.3f}", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
