#!/usr/bin/env python3
"""Writes the GPU benchmarks' figures as markdown for docs/performance.md (scripts/gpu-check.sh).

Usage: gpu_bench_report.py --index INDEX --out performance.md --date D --card C --commit X
                           [--about TEXT]
INDEX is tab-separated, one benchmark a line: name, arguments, seconds, exit status, and the file
holding its output. Known outputs (bench_gpu_launch, _copy, _matmul, and the recurrent layers'
RESULT lines) become tables; anything else, or a run that printed no figures (skipped, failed),
is quoted as printed.
"""

import argparse
import re
import sys

NUMBER = r"(-?[\d.]+(?:e[-+]?\d+)?|nan|-?inf)"


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def launch(lines):
    pattern = re.compile(r"per compute set: graph\s+" + NUMBER + r" us \| host\s+" + NUMBER +
                         r" us \| cudaMemsetAsync\s+" + NUMBER + r" us \| host/graph\s+" +
                         NUMBER + r"x \| graph/memset\s+" + NUMBER + r"x")
    rows, rest = [], []
    for line in lines:
        m = pattern.search(line)
        if m:
            rows.append(list(m.groups()))
        else:
            rest.append(line)
    header = ["CUDA graph µs", "host-driven µs", "cudaMemsetAsync µs", "host/graph",
              "graph/memset"]
    return rest, (table(header, rows) if rows else None)


def copy(lines):
    pattern = re.compile(r"^(\S.*?)\s+" + NUMBER + r" GB/s \| (.+?)\s+" + NUMBER +
                         r" GB/s \| (.+?)\s+" + NUMBER + r"x\s*$")
    rows, rest = [], []
    for line in lines:
        m = pattern.match(line)
        if m:
            what, gbps, peer, peer_gbps, ratio_name, ratio = m.groups()
            rows.append([what, gbps, peer, peer_gbps, f"{ratio} ({ratio_name})"])
        else:
            rest.append(line)
    header = ["operation", "GB/s", "against", "GB/s", "ratio"]
    return rest, (table(header, rows) if rows else None)


def matmul(lines):
    pattern = re.compile(r"^(\w+)\s+(\d+)\^3: aspen\s+" + NUMBER + r" GFLOP/s \| cuBLAS\s+" +
                         NUMBER + r" GFLOP/s \| aspen/cuBLAS\s+" + NUMBER +
                         r"x \| max \|difference\| (\S+) \(of max \|C\| (\S+)\)"
                         r"(?: \| built in " + NUMBER + r" s)?")
    rows, rest = [], []
    for line in lines:
        m = pattern.match(line)
        if m:
            rows.append([g if g is not None else "" for g in m.groups()])
        else:
            rest.append(line)
    header = ["type", "n (n×n×n)", "Aspen GFLOP/s", "cuBLAS GFLOP/s", "Aspen/cuBLAS",
              "max abs difference", "max abs C", "Aspen build s"]
    return rest, (table(header, rows) if rows else None)


def recurrent(lines):
    rows, rest = [], []
    for line in lines:
        if line.startswith("RESULT "):
            fields = dict(f.split("=", 1) for f in line.split()[2:] if "=" in f)
            rows.append([fields.get(k, "?") for k in
                         ("H", "B", "T", "aspen_ms", "cudnn_ms", "cudnn_over_aspen", "check",
                          "rel_diff")])
        elif re.match(r"^\s*H\s+B\s+aspen ms", line) or re.match(r"^\s*\d+\s+\d+\s+\S+", line):
            continue  # the printed table: the RESULT lines repeat it
        else:
            rest.append(line)
    header = ["H", "B", "T", "Aspen ms", "cuDNN ms", "cuDNN/Aspen", "check", "relative difference"]
    return rest, (table(header, rows) if rows else None)


PARSERS = {"bench_gpu_launch": launch, "bench_gpu_copy": copy, "bench_gpu_matmul": matmul,
           "bench_gpu_lstm": recurrent, "bench_gpu_gru": recurrent}


def section(name, arguments, seconds, status, text):
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    title = f"**{name}{' ' + arguments if arguments else ''}** ({seconds} s"
    title += ")" if status == "0" else f", exit {status}{' = time limit' if status == '124' else ''})"
    rest, figures = PARSERS.get(name, lambda ls: (ls, None))(lines)
    if figures is None:
        quoted = lines[:60] + ([f"[... {len(lines) - 60} more lines]"] if len(lines) > 60 else [])
        return f"{title}: no figures.\n\n```\n" + "\n".join(quoted or ["(no output)"]) + "\n```\n"
    caption = "; ".join(rest)
    return f"{title}{': ' + caption if caption else ''}\n\n{figures}\n"


def main():
    parser = argparse.ArgumentParser()
    for option in ("--index", "--out", "--date", "--card", "--commit"):
        parser.add_argument(option, required=True)
    parser.add_argument("--about", default="")
    args = parser.parse_args()
    parts = [f"## {args.date} — GPU benchmarks ({args.card}, commit {args.commit})\n"]
    if args.about:
        parts.append(args.about + "\n")
    try:
        with open(args.index, encoding="utf-8") as f:
            entries = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    except OSError:
        entries = []
    for entry in entries:
        if len(entry) != 5:
            continue
        name, arguments, seconds, status, path = entry
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            text = ""
        parts.append(section(name, arguments, seconds, status, text))
    if not entries:
        parts.append("No benchmark ran.\n")
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("\n".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
