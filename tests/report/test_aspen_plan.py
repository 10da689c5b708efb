#!/usr/bin/python3
"""aspen-plan's command line, checked for structure (never for timing numbers).

Runs aspen-plan on small layers and checks: the printed sections and rows; the JSON report
against docs/profile-report.schema.json and against the numbers the flags imply (sizes, plan
choices, per-tile statistics recomputed from the per-tile bytes); the Chrome trace (valid JSON,
the fields Perfetto needs, one complete event per compile pass, load and timeline event); the
progress line (on a terminal only, never with --quiet); the exit statuses and messages of bad
usage, refused options and a plan that does not fit; and, with --only html, the HTML report in
headless Chromium (check_html_report.py).

Usage: test_aspen_plan.py --aspen-plan PATH --schema PATH --work DIR [--only cli|html]
Exit status 0 when every check passed.
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys

import jsonschema  # Debian's python3-jsonschema

failures = []


def check(condition, what):
    print(("ok    " if condition else "FAIL  ") + what)
    if not condition:
        failures.append(what)
    return condition


def run(args, tty=False, timeout=600):
    """aspen-plan's exit status, stdout and stderr; with tty, run under script(1) so that
    stderr is a terminal (its output then comes back on stdout)."""
    if tty:
        command = " ".join(shlex.quote(a) for a in args)
        args = ["script", "-qefc", command, "/dev/null"]
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def rows(stdout, section):
    """The '  name  value' rows printed under a section heading."""
    lines = stdout.splitlines()
    if section not in lines:
        return {}
    found = {}
    for line in lines[lines.index(section) + 1:]:
        if not line.startswith("  "):
            break
        name, _, value = line.strip().partition("  ")
        found[name.strip()] = value.strip()
    return found


def load(path):
    with open(path) as f:
        return json.load(f)


def cli_checks(plan, schema, work):
    validator = jsonschema.Draft202012Validator(schema)
    small = ["--input-size", "8", "--output-size", "16", "--batch-size", "4", "--sequence-size", "6"]

    # A dry run of an LSTM: every section, nothing measured, a valid report.
    report_path = os.path.join(work, "lstm.json")
    rc, out, err = run([plan, "lstm", *small, "--phase", "all", "--json", report_path])
    check(rc == 0, f"lstm dry run exits 0 (got {rc}; stderr {err!r})")
    check(err == "", "no progress line when stderr is not a terminal")
    for section in ["Plan", "Graph", "Memory", "Time"]:
        check(section in out.splitlines(), f"lstm dry run prints section {section}")
    check("Compute sets and kernels" not in out, "a dry run prints no measured tables")
    plan_rows, graph_rows, memory_rows = rows(out, "Plan"), rows(out, "Graph"), rows(out, "Memory")
    for name in ["shards", "WU cadence", "recomputation", "FLOPs (layer)"]:
        check(name in plan_rows, f"Plan row '{name}'")
    for name in ["compute sets", "vertices", "copies", "kernels"]:
        check(name in graph_rows, f"Graph row '{name}'")
    for name in ["tiles used", "per tile", "per tile at once", "total"]:
        check(name in memory_rows, f"Memory row '{name}'")
    check(re.search(r"min .+, mean .+, max .+ \(tile \d+\)", memory_rows.get("per tile", "")),
          "per tile row gives min, mean and max")
    check(re.search(r"a run estimated", rows(out, "Time").get("program 0", "")),
          "Time row gives the estimate of program 0")

    report = load(report_path)
    try:
        validator.validate(report)
        check(True, "lstm report matches the schema")
    except jsonschema.ValidationError as e:
        check(False, f"lstm report matches the schema: {e.message} at {list(e.absolute_path)}")
    context = report.get("context", {})
    layer = context.get("layer", {})
    check(context.get("tool") == "aspen-plan" and context.get("mode") == "dry-run",
          "context names the tool and the mode")
    check((layer.get("T"), layer.get("B"), layer.get("I"), layer.get("H")) == (6, 4, 8, 16),
          "context.layer has the flags' sizes")
    check(layer.get("kind") == "lstm" and layer.get("phase") == "all", "context.layer kind, phase")
    memory = report["memory"]
    tiles = memory["tileBytes"]
    check(len(tiles) == report["target"]["tiles"] == 132, "one tileBytes entry per h200 tile")
    per_tile = memory["perTile"]
    check(per_tile["max"] == max(tiles) and per_tile["min"] == min(tiles)
          and per_tile["total"] == sum(tiles)
          and abs(per_tile["mean"] - sum(tiles) / len(tiles)) < 1e-6 * max(1, per_tile["mean"])
          and tiles[per_tile["maxTile"]] == max(tiles),
          "perTile statistics agree with tileBytes")
    check(memory["tilesUsed"] == sum(1 for t in tiles if t),
          "tilesUsed counts the tiles with bytes")
    check(all(p <= t for p, t in zip(memory["tilePeakBytes"], tiles)),
          "no tile holds more at once than is mapped to it")
    check(report["execution"]["runs"] == 0 and not report["timeline"]["events"],
          "a dry run records no runs")
    check(str(memory["tilesUsed"]) in memory_rows.get("tiles used", ""),
          "printed tiles used agrees with the report")
    check(graph_rows.get("compute sets") == str(len(report["computeSets"])),
          "printed compute sets agree with the report")
    check(graph_rows.get("vertices") == str(report["vertices"]["total"]),
          "printed vertices agree with the report")
    passes = [p["name"] for p in report["compile"]["passes"]]
    check(passes[0] == "verify" and len(passes) == 10, f"ten compile passes, verify first ({passes})")

    # popnn's options through flags and --option: shards, the WU cadence, recomputation.
    report_path = os.path.join(work, "lstm-sharded.json")
    rc, out, err = run([plan, "lstm", *small, "--phase", "all", "--target", "ipu2", "--tiles",
                        "16", "--shards", "2", "--option", "rnnStepsPerWU=2",
                        "--recomputation-mode", "cellAndTanh", "--json", report_path])
    check(rc == 0, f"sharded lstm exits 0 ({err!r})")
    plan_rows = rows(out, "Plan")
    check(plan_rows.get("shards", "").startswith("2 "), f"shards row says 2 ({plan_rows})")
    check("every 2 backward steps" in plan_rows.get("WU cadence", ""), "WU cadence row says 2")
    check(plan_rows.get("recomputation") == "cellAndTanh", "recomputation row")
    sharded = load(report_path)
    check(sharded["context"]["plan"]["numShards"] == 2
          and sharded["context"]["plan"]["stepsPerWU"] == 2
          and sharded["context"]["plan"]["recomputation"] == "cellAndTanh",
          "context.plan has the options' choices")
    check(sharded["context"]["layer"]["options"].get("rnnStepsPerWU") == "2",
          "context.layer.options keeps --option")
    check(len(sharded["memory"]["tileBytes"]) == 16, "--tiles 16 gives 16 tiles")

    # A stack in one call: its layers, directions and dropout in the summary and the report.
    report_path = os.path.join(work, "gru-stack.json")
    rc, out, err = run([plan, "gru", *small, "--phase", "all", "--num-layers", "2",
                        "--direction", "bidirectional", "--dropout", "0.25", "--json",
                        report_path])
    check(rc == 0, f"bidirectional gru stack exits 0 ({err!r})")
    check("layers=2 bidirectional dropout=0.25" in out.splitlines()[0],
          f"the summary names the stack ({out.splitlines()[0]!r})")
    stack = load(report_path)
    layer = stack["context"]["layer"]
    check(layer.get("numLayers") == 2 and layer.get("direction") == "bidirectional"
          and layer.get("dropout") == 0.25 and layer.get("stackSchedule") == "layerByLayer",
          f"context.layer has the stack ({layer})")
    rc, out, err = run([plan, "lstm", *small, "--num-layers", "2", "--target", "cpu"])
    check(rc == 0 and "layers=2 schedule=wavefront" in out.splitlines()[0],
          f"an LSTM stack of 4 rows on the CPU runs as a wavefront ({out.splitlines()[:1]!r})")
    rc, out, err = run([plan, "rnn", *small, "--phase", "all", "--num-layers", "3",
                        "--direction", "bidirectional", "--target", "cpu", "--run"])
    check(rc == 0 and "layers=3 bidirectional schedule=layerByLayer" in out.splitlines()[0],
          f"a vanilla RNN stack plans and runs, layer by layer ({out.splitlines()[:1]!r}, "
          f"{err!r})")

    # A run: measured tables beside the estimates, a timeline, and a valid Chrome trace.
    report_path = os.path.join(work, "gru-run.json")
    trace_path = os.path.join(work, "gru-run.trace.json")
    rc, out, err = run([plan, "gru", *small, "--phase", "bwd", "--target", "ipu2", "--tiles",
                        "8", "--run", "--runs", "2", "--json", report_path, "--trace", trace_path])
    check(rc == 0, f"gru --run exits 0 ({err!r})")
    for title in ["Compute sets and kernels", "Copies", "Program steps"]:
        check(any(line.startswith(title) for line in out.splitlines()),
              f"--run prints the {title} table")
    report = load(report_path)
    try:
        validator.validate(report)
        check(True, "gru run report matches the schema")
    except jsonschema.ValidationError as e:
        check(False, f"gru run report matches the schema: {e.message}")
    events = report["timeline"]["events"]
    check(report["execution"]["runs"] == 2 and report["timeline"]["recordedRuns"] == 2,
          "two runs measured and recorded")
    check(sum(1 for e in events if e["kind"] == "program") == 2, "two program events")
    check(all(e["start"] >= report["load"]["start"] for e in events), "events follow the load")
    executed = sum(cs["calls"] for cs in report["computeSets"])
    check(sum(1 for e in events if e["kind"] == "computeSet") == executed,
          "one timeline event per compute set execution")
    trace = load(trace_path)
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    check(all({"name", "ph", "ts", "dur", "pid", "tid"} <= set(e) for e in complete)
          and all(isinstance(e["ts"], (int, float)) and e["dur"] >= 0 for e in complete),
          "trace events have name, ph, ts, dur, pid and tid")
    check(len(complete) == len(report["compile"]["passes"]) + 1 + len(events),
          "one trace event per compile pass, the load and each timeline event")
    named = {e["tid"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    check({e["tid"] for e in complete} <= named, "every trace lane has a thread_name")
    check(trace.get("displayTimeUnit") == "ms", "trace displayTimeUnit")

    # The other layers. The convolution: forward, backward data and weight deltas, planned
    # "library" for the H200 (cuDNN or im2col + cuBLASLt calls) and the CPU.
    conv_flags = ["--field", "{9,8}", "--kernel-size", "3", "--input-channels", "3",
                  "--output-channels", "4", "--batch-size", "2", "--padding", "1", "--stride", "2"]
    for layer, flags in [("rnn", small + ["--phase", "wu"]),
                         ("matmul", ["--m", "16", "--k", "32", "--n", "8"]),
                         ("matmul", ["--m", "16", "--k", "32", "--n", "8", "--groups", "3",
                                     "--run", "--runs", "1"]),
                         ("conv", conv_flags),
                         ("conv", conv_flags + ["--target", "cpu", "--run", "--runs", "1"])]:
        path = os.path.join(work, f"{layer}.json")
        rc, out, err = run([plan, layer, *flags, "--json", path])
        check(rc == 0 and "Memory" in out.splitlines(), f"{layer} {' '.join(flags)} plans ({err!r})")
        try:
            validator.validate(load(path))
            check(True, f"{layer} report matches the schema")
        except jsonschema.ValidationError as e:
            check(False, f"{layer} report matches the schema: {e.message}")
    matmul = load(os.path.join(work, "matmul.json"))
    check(matmul["context"]["layer"]["flops"] == 2 * 3 * 16 * 32 * 8, "grouped matmul flops")
    check("method" in json.dumps(matmul["context"]["plan"]), "matmul context has the plan")
    conv = load(os.path.join(work, "conv.json"))
    conv_plan = conv["context"]["plan"]
    check(sorted(conv_plan) == ["backwardData", "forward", "weightUpdate"]
          and all(p["method"] == "library" for p in conv_plan.values()),
          f"conv context has the three passes' library plans ({sorted(conv_plan)})")
    # 2 images x 4 filters x 3 channels x (taps meeting real input: 5x4 outputs of a 3x3 kernel
    # over the padded 9x8 field, 12 + 15 for rows and 10 + 12 + ... counted below) x 2 x 3 passes.
    rows_met = sum(1 for o in range(5) for k in range(3) if 0 <= 2 * o + k - 1 < 9)
    cols_met = sum(1 for o in range(4) for k in range(3) if 0 <= 2 * o + k - 1 < 8)
    check(conv["context"]["layer"]["flops"] == 3 * 2 * (2 * 4 * 3 * rows_met * cols_met),
          f"conv flops ({conv['context']['layer']['flops']})")
    rc, out, _ = run([plan, "conv", *conv_flags, "--target", "ipu2"])
    check(rc == 0 and "direct" in out and "no convolution calls" in out,
          "conv on the IPU model plans the direct vertices (3 channels x 9 taps) and says why")

    # The progress line: on a terminal only, and never with --quiet.
    rc, out, _ = run([plan, "lstm", *small], tty=True)
    check(rc == 0 and "compiling: pass" in out, "a terminal shows the progress line")
    rc, out, _ = run([plan, "lstm", *small, "--quiet"], tty=True)
    check(rc == 0 and out.strip() == "", f"--quiet prints nothing ({out[:200]!r})")

    # Bad usage (2), refused options (2), a plan that does not fit (1).
    for args, status, pattern in [
            (["lstm", "--no-such-flag"], 2, r"unknown flag '--no-such-flag'"),
            (["lstm", "--target", "tpu"], 2, r"--target 'tpu' is not one of"),
            (["lstm", "--tiles", "4", "--target", "cpu"], 2, r"--tiles applies to model targets"),
            (["lstm", "--run", "--dry-run"], 2, r"exclude each other"),
            (["lstm", "--option", "numShards=0"], 2, r"refused the options.*numShards"),
            (["lstm", "--option", "nokey"], 2, r"is not key=value"),
            (["pool"], 2, r"'pool' is not a layer"),
            (["conv", "--pass", "SIDEWAYS"], 2, r"--pass"),
            (["conv", "--field", "{5,5}", "--kernel-size", "7"], 1, r"kernel.*is larger than"),
            (["lstm", "--target", "ipu2", "--tiles", "2", "--sequence-size", "100",
              "--batch-size", "16", "--input-size", "128", "--output-size", "128",
              "--phase", "all"], 1,
             r"does not fit the target: tile \d+ needs \d+ bytes.*largest tensors live there"
             r".*\n  '[^']+' float \[\d+(,\d+)*\]: \d+ bytes on tile \d+, (always live|live from)")]:
        rc, out, err = run([plan, *args])
        check(rc == status and re.search(pattern, err, re.S),
              f"aspen-plan {' '.join(args)} exits {status} with /{pattern[:40]}/ "
              f"(got {rc}: {err[:300]!r})")


def html_checks(plan, checker, work):
    for mode, expect in [("--run", True), ("--dry-run", False)]:
        page = os.path.join(work, f"report{mode}.html")
        rc, _, err = run([plan, "lstm", "--input-size", "8", "--output-size", "16",
                          "--batch-size", "4", "--sequence-size", "6", "--phase", "all",
                          "--target", "ipu2", "--tiles", "24", mode, "--runs", "2",
                          "--html", page, "--quiet"])
        check(rc == 0, f"aspen-plan {mode} --html exits 0 ({err!r})")
        with open(page) as f:
            text = f.read()
        check(not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text),
              "the page fetches nothing from a network")
        args = ["/usr/bin/python3", checker, page] + (["--expect-timeline"] if expect else [])
        p = subprocess.run(args, capture_output=True, text=True, timeout=300)
        print(p.stdout.strip())
        check(p.returncode == 0, f"the {mode} page renders its charts in Chromium ({p.stderr[-500:]!r})")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--aspen-plan", required=True)
    parser.add_argument("--schema", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--only", choices=["cli", "html"])
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    if args.only != "html":
        cli_checks(args.aspen_plan, load(args.schema), args.work)
    if args.only != "cli":
        checker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_html_report.py")
        html_checks(args.aspen_plan, checker, args.work)
    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
