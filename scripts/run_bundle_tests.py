#!/usr/bin/env python3
"""Runs the tests of a GPU bundle's manifest (tests.tsv, written by scripts/gpu-bundle.sh).

Each manifest line is one test: name, labels, skip regex, environment, then the command (program
bundle-relative, arguments exactly as CTest passes them), tab-separated; labels and environment
entries are separated by ';'. The runner starts the tests in parallel with a time limit each, the
control-flow tests first (their failures say the most about the CUDA executor), then the rest.
A test is skipped when its output matches its skip regex (CTest's SKIP_REGULAR_EXPRESSION), passed
when it exits 0, failed otherwise. Every test's output goes to one log, each block between
separator lines. Failed tests then run once more with CUDA_MODULE_LOADING=EAGER (another log):
those that pass so are named in the summary and still count as failures.

What counts as a failure depends on --expect:
  gpu     (a GPU is present) any test that fails, times out, does not run or is skipped;
  no-gpu  (dry run without a GPU) a 'gpu' test that passes or fails instead of skipping (except
          those labelled 'nogpu', which run everywhere and must pass), a 'gpu_codegen' test that
          does not pass (it needs only the CUDA toolkit), any timeout or test not run.

The summary goes to standard output, one "FAIL: ..." line per kind of failure; progress goes to
standard error. Exit status 0 when nothing failed, 1 otherwise, 2 on a usage or manifest error.
The environment is inherited (scripts/gpu-check.sh sets the bundle's ASPEN_* variables), plus
each test's own; tests run in --workdir.
"""

import argparse
import concurrent.futures
import os
import re
import signal
import subprocess
import sys
import threading
import time

# Test names about control flow (programs' Repeat/If/Switch, CUDA graph conditional nodes).
CONTROL_FLOW = re.compile(r"\b(Repeat\w*|If|Switch|[Cc]ontrol[- ]flow|countedForLoop|"
                          r"around a loop|CUDA graphs?|conditional)\b")
MAX_LOGGED_BYTES = 256 * 1024  # per test run: the head and the tail beyond this


class Test:
    def __init__(self, line_number, fields):
        self.line_number = line_number
        self.name = fields[0]
        self.labels = [label for label in fields[1].split(";") if label]
        self.skip = re.compile(fields[2]) if fields[2] else None
        self.env = {}
        for entry in (e for e in fields[3].split(";") if e):
            key, sep, value = entry.partition("=")
            if not sep or not key:
                raise ValueError(f"environment entry '{entry}' is not NAME=VALUE")
            self.env[key] = value
        self.command = fields[4:]


def read_manifest(path):
    tests = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            fields = line.split("\t")
            if len(fields) < 5 or not fields[0] or not fields[4]:
                raise ValueError(f"{path}:{number}: expected name, labels, skip regex, "
                                 "environment and a command, tab-separated")
            try:
                tests.append(Test(number, fields))
            except (ValueError, re.error) as e:
                raise ValueError(f"{path}:{number}: {e}") from e
    return tests


def shell_words(argv):
    quoted = []
    for word in argv:
        if word and re.fullmatch(r"[\w@%+=:,./-]+", word):
            quoted.append(word)
        else:
            quoted.append("'" + word.replace("'", "'\\''") + "'")
    return " ".join(quoted)


def clipped(text):
    data = text.encode("utf-8", "replace")
    if len(data) <= MAX_LOGGED_BYTES:
        return text
    half = MAX_LOGGED_BYTES // 2
    return (data[:half].decode("utf-8", "replace") +
            f"\n[... {len(data) - 2 * half} bytes left out ...]\n" +
            data[-half:].decode("utf-8", "replace"))


class Runner:
    def __init__(self, args, tests, log_path, what=""):
        self.args = args
        self.what = what
        self.bundle = os.path.abspath(args.bundle)
        self.total = len(tests)
        self.log = open(log_path, "w", encoding="utf-8")
        self.lock = threading.Lock()
        self.done = 0
        self.deadline = time.monotonic() + args.deadline

    def left(self):
        return self.deadline - time.monotonic()

    def run(self, test, extra_env):
        """One run of `test`: (status, seconds, detail); status is passed, failed, skipped,
        timeout or not-run."""
        left = self.left()
        if left < 1:
            result = ("not-run", 0.0, "no time left before the run's deadline", "")
            self.record(test, extra_env, result)
            return result[:3]
        limit = min(self.args.timeout, left)
        program = os.path.join(self.bundle, test.command[0])
        env = dict(os.environ)
        env.update(test.env)
        env.update(extra_env)
        start = time.monotonic()
        try:
            process = subprocess.Popen([program] + test.command[1:], cwd=self.args.workdir,
                                       env=env, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        except OSError as e:
            result = ("failed", 0.0, f"cannot start: {e}", "")
            self.record(test, extra_env, result)
            return result[:3]
        timed_out = False
        try:
            output, _ = process.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                output, _ = process.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                output = b"[output lost: the test's processes did not exit after SIGKILL]\n"
        seconds = time.monotonic() - start
        text = output.decode("utf-8", "replace")
        rc = process.returncode
        if timed_out:
            why = "the run's deadline" if limit < self.args.timeout else "its time limit"
            result = ("timeout", seconds, f"killed after {limit:.0f} s ({why})", text)
        elif test.skip and test.skip.search(text):
            result = ("skipped", seconds, f"exit {rc}, output matches the skip regex", text)
        elif rc == 0:
            result = ("passed", seconds, "exit 0", text)
        else:
            detail = f"exit {rc}" if rc > 0 else f"killed by signal {-rc}"
            result = ("failed", seconds, detail, text)
        self.record(test, extra_env, result)
        return result[:3]

    def record(self, test, extra_env, result):
        status, seconds, detail, text = result
        env = {**test.env, **extra_env}
        with self.lock:
            self.done += 1
            head = f"[{self.done}/{self.total}] {status.upper()} {test.name}"
            self.log.write("=" * 100 + "\n")
            self.log.write(f"==== {head} ({seconds:.1f} s; {detail})\n")
            self.log.write(f"==== labels: {';'.join(test.labels) or '-'}; environment: "
                           f"{' '.join(f'{k}={v}' for k, v in env.items()) or '-'}\n")
            self.log.write(f"==== command: {shell_words(test.command)}\n")
            self.log.write("-" * 100 + "\n")
            body = clipped(text)
            self.log.write(body if body.endswith("\n") or not body else body + "\n")
            self.log.write(f"==== end of {test.name}\n")
            self.log.flush()
            if status in ("failed", "timeout") or self.done % 20 == 0 or self.done == self.total:
                print(f"  {self.what}{head} ({seconds:.1f} s)", file=sys.stderr, flush=True)

    def run_all(self, tests, extra_env):
        results = {}
        with concurrent.futures.ThreadPoolExecutor(max_workers=self.args.jobs) as pool:
            futures = {pool.submit(self.run, t, extra_env): t for t in tests}
            for future in concurrent.futures.as_completed(futures):
                results[futures[future]] = future.result()
        return results


def names(tests, results, limit=25):
    listed = [f"  {t.name} ({results[t][2]}, {results[t][1]:.1f} s)" for t in tests[:limit]]
    if len(tests) > limit:
        listed.append(f"  ... and {len(tests) - limit} more")
    return "\n".join(listed)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--bundle", default=here, help="the bundle (default: this file's folder)")
    parser.add_argument("--manifest", help="default: BUNDLE/tests.tsv")
    parser.add_argument("--log", required=True, help="every test's output")
    parser.add_argument("--rerun-log", required=True, help="the eager reruns' output")
    parser.add_argument("-j", "--jobs", type=int, default=min(8, os.cpu_count() or 1))
    parser.add_argument("--timeout", type=float, default=120, help="seconds a test may take")
    parser.add_argument("--deadline", type=float, default=240,
                        help="seconds for everything, reruns included")
    parser.add_argument("--expect", choices=["gpu", "no-gpu"], default="gpu")
    parser.add_argument("--workdir", default=".", help="the tests' working directory")
    parser.add_argument("--filter", help="only tests whose name matches this regex")
    args = parser.parse_args()
    args.jobs = max(1, args.jobs)
    started = time.monotonic()
    try:
        tests = read_manifest(args.manifest or os.path.join(args.bundle, "tests.tsv"))
    except (OSError, ValueError) as e:
        print(f"FAIL: tests: cannot read the manifest: {e}")
        return 2
    if args.filter:
        tests = [t for t in tests if re.search(args.filter, t.name)]
    if not tests:
        print("FAIL: tests: the manifest lists no tests")
        return 1
    ordered = ([t for t in tests if CONTROL_FLOW.search(t.name)] +
               [t for t in tests if not CONTROL_FLOW.search(t.name)])

    runner = Runner(args, ordered, args.log)
    results = runner.run_all(ordered, {})
    counts = {}
    for status, _, _ in results.values():
        counts[status] = counts.get(status, 0) + 1
    print(f"tests: {len(tests)} in {time.monotonic() - started:.0f} s (-j {args.jobs}, "
          f"control flow first): " +
          ", ".join(f"{counts.get(s, 0)} {s}" for s in
                    ("passed", "failed", "skipped", "timeout", "not-run")))

    labels = sorted({label for t in tests for label in t.labels})
    for label in labels:
        tally = {}
        for t in tests:
            if label in t.labels:
                tally[results[t][0]] = tally.get(results[t][0], 0) + 1
        print(f"  label {label}: " + ", ".join(f"{n} {s}" for s, n in sorted(tally.items())))

    def having(*statuses, label=None, without=None):
        return [t for t in tests if results[t][0] in statuses and
                (label is None or label in t.labels) and
                (without is None or without not in t.labels)]

    problems = []  # (message, tests)
    if args.expect == "gpu":
        problems.append(("failed", having("failed")))
        problems.append(("timed out", having("timeout")))
        problems.append(("skipped on a machine with a GPU (checked nothing)", having("skipped")))
    else:
        problems.append(("'gpu' tests passed or failed instead of skipping without a GPU",
                         having("passed", "failed", label="gpu", without="nogpu")))
        problems.append(("'nogpu' tests (they run everywhere) did not pass",
                         having("failed", "skipped", label="nogpu")))
        problems.append(("'gpu_codegen' tests (they need only the toolkit) did not pass",
                         having("failed", "skipped", label="gpu_codegen")))
        problems.append(("timed out", having("timeout")))
    problems.append(("not run (the run's deadline came first)", having("not-run")))
    for message, bad in problems:
        if bad:
            print(f"FAIL: tests: {len(bad)} {message}:\n{names(bad, results)}")

    # Every failed test once more with the CUDA modules loaded eagerly (not lazily, CUDA's
    # default): a test that passes so points at lazy loading, not at the test's own subject.
    runner.log.close()
    failed = having("failed", "timeout")
    if not failed or runner.left() < 5:
        with open(args.rerun_log, "w", encoding="utf-8") as log:
            log.write("No test failed: nothing rerun.\n" if not failed else
                      f"{len(failed)} tests failed, but no time was left to rerun them.\n")
        if failed:
            print(f"reruns: none ({len(failed)} failed tests, but no time left)")
    else:
        rerunner = Runner(args, failed, args.rerun_log, "eager rerun ")
        rerunner.deadline = runner.deadline
        again = rerunner.run_all(failed, {"CUDA_MODULE_LOADING": "EAGER"})
        rerunner.log.close()
        eager = [t for t in failed if again[t][0] == "passed"]
        print(f"reruns with CUDA_MODULE_LOADING=EAGER: {len(eager)} of {len(failed)} failed "
              "tests pass eagerly (they still count as failures)" +
              (f":\n{names(eager, again)}" if eager else ""))
    print(f"tests: done in {time.monotonic() - started:.0f} s")
    return 1 if any(bad for _, bad in problems) else 0


if __name__ == "__main__":
    sys.exit(main())
