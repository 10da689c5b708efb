#!/usr/bin/python3
"""train_sequence_classifier.py's classifier (a 2-layer aspen_torch.LSTM and a linear layer)
trained data-parallel: one process a rank, each with a DistributedDataParallel (Gloo) around the
model and its share of each step's 32 sequences (16 each with 2 ranks), against one process
trained on all 32 from the same seed.

A rank's loss is cross_entropy's mean over its sequences and DDP averages the ranks' gradients,
so the averaged gradient is the gradient of the mean loss over all 32: the ranks take the single
process's steps, up to rounding. The script checks, on every rank:
- every parameter has a gradient from the last step (DDP, find_unused_parameters=False, already
  refuses a step's forward when a parameter had none in the step before);
- after training, the parameters and the last gradients are bitwise equal on every rank;
- the mean over ranks of each step's loss follows the single process's loss curve within 1e-3
  relative (the single-process example's bar).

Run: PYTHONPATH=<build>/python /usr/bin/python3 -m torch.distributed.run --nproc_per_node=2
     --redirects 1 --tee 1 examples/python/train_sequence_classifier_ddp.py [--steps N]
(Debian's torch 1.13 launcher cannot parse its own default --redirects/--tee "0" on Python 3.11,
whose enum.IntFlag no longer lists a zero member: "1", each rank's stdout through a log file and
teed to the console, is a value it can parse. --rdzv_backend=c10d --rdzv_endpoint=localhost:0
lets two launches run at once, each on ports of its own.)
Exit status 0 on every rank when the checks pass, 1 otherwise (torchrun then exits non-zero).
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import aspen_torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_sequence_classifier import (BATCH, TOLERANCE,  # noqa: E402 (after the path)
                                       largest_relative_difference, train)


def from_every_rank(tensor):
    """tensor as each rank has it, stacked in rank order."""
    parts = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, tensor)
    return torch.stack(parts)


def same_on_every_rank(tensor):
    copies = from_every_rank(tensor)
    return all(torch.equal(copies[0], copy) for copy in copies[1:])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args()
    torch.set_num_threads(1)  # the same arithmetic order every run, and one core a rank
    dist.init_process_group("gloo")
    rank, ranks = dist.get_rank(), dist.get_world_size()
    if BATCH % ranks:
        raise SystemExit(f"{ranks} ranks cannot share a step's {BATCH} sequences evenly")
    share = BATCH // ranks

    model, rank_losses, ddp_seconds = train(
        aspen_torch.LSTM, args.steps, rows=slice(rank * share, (rank + 1) * share),
        wrap=lambda model: DistributedDataParallel(model, find_unused_parameters=False))
    without_gradient = [name for name, p in model.named_parameters() if p.grad is None]
    parameters = torch.cat([p.detach().flatten() for p in model.parameters()])
    gradients = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).flatten()
                           for p in model.parameters()])
    parameters_equal = same_on_every_rank(parameters)
    gradients_equal = same_on_every_rank(gradients)
    mean_losses = torch.tensor(rank_losses, dtype=torch.float64)
    dist.all_reduce(mean_losses)  # a sum over ranks of equal shares' means: / ranks is the mean
    mean_losses = (mean_losses / ranks).tolist()

    # Every rank trains the single process itself (one core each: no longer than on rank 0 alone).
    _, losses, one_seconds = train(aspen_torch.LSTM, args.steps)
    worst = largest_relative_difference(mean_losses, losses)

    failures = []
    if without_gradient:
        failures.append(f"no gradient for {', '.join(without_gradient)}")
    if not parameters_equal:
        failures.append("the ranks' parameters differ")
    if not gradients_equal:
        failures.append("the ranks' last gradients differ")
    if not worst < TOLERANCE:
        failures.append(f"the loss curves differ by {worst:.2e} relative (bar {TOLERANCE:.0e})")
    if rank == 0:
        for step, (mean, one) in enumerate(zip(mean_losses, losses)):
            if step % 25 == 0 or step == args.steps - 1:
                print(f"step {step:4d}: loss DDP mean over ranks {mean:.6f}  one process {one:.6f}")
        print(f"{args.steps} steps: {ranks} ranks x {share} sequences {1e3 * ddp_seconds:.2f} ms "
              f"a step, one process x {BATCH} sequences {1e3 * one_seconds:.2f} ms a step")
    if failures:  # from every rank that fails: a rank's own single-process run may differ
        print(f"DDP FAILED on rank {rank}: {'; '.join(failures)}")
    elif rank == 0:
        print(f"DDP ok: {ranks} ranks' parameters bitwise equal after {args.steps} steps; "
              f"largest relative difference from one process on all {BATCH} sequences "
              f"{worst:.2e}")
    dist.destroy_process_group()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
