#!/usr/bin/python3
"""Check that an Aspen profile page renders its charts in headless Chromium.

Usage: check_html_report.py PAGE.html [--chromium PATH] [--expect-timeline]

Loads the page with `chromium --headless --dump-dom`, parses the DOM after the
page's script ran and compares the charts against the report JSON embedded in
the page (<script id="aspen-report" type="application/json">).

Exit status: 0 pass, 1 fail, 2 usage error or Chromium missing.
Standard library only, so it runs with Debian's /usr/bin/python3.
"""

import argparse
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag = tag
        self.attrs = attrs
        self.parent = parent
        self.children = []
        self.text = []

    def iter(self):
        yield self
        for child in self.children:
            yield from child.iter()

    def classes(self):
        return (self.attrs.get("class") or "").split()

    def all_text(self):
        return "".join(t for n in self.iter() for t in n.text)


class DomBuilder(html.parser.HTMLParser):
    """Builds a small tree; enough to find elements by id, tag and class."""

    # Elements with no end tag in HTML; SVG elements are always closed in the
    # serialized DOM, so they need no special case.
    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link",
            "meta", "source", "track", "wbr"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {}, None)
        self.cur = self.root

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: (v if v is not None else "") for k, v in attrs}, self.cur)
        self.cur.children.append(node)
        if tag not in self.VOID:
            self.cur = node

    def handle_startendtag(self, tag, attrs):
        self.cur.children.append(Node(tag, {k: (v or "") for k, v in attrs}, self.cur))

    def handle_endtag(self, tag):
        # Walk up to the matching open element; ignore stray end tags.
        node = self.cur
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.cur = node.parent

    def handle_data(self, data):
        self.cur.text.append(data)


def find(root, tag=None, id_=None, cls=None):
    return [n for n in root.iter()
            if (tag is None or n.tag == tag)
            and (id_ is None or n.attrs.get("id") == id_)
            and (cls is None or cls in n.classes())]


def dump_dom(chromium, page):
    url = "file://" + os.path.abspath(page)
    # A private profile directory lets several checks run at once.
    with tempfile.TemporaryDirectory(prefix="aspen-chromium-") as profile:
        cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu",
               "--user-data-dir=" + profile, "--dump-dom", url]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    if proc.returncode != 0 or not proc.stdout.strip():
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-5:]
        raise RuntimeError("chromium exited with %d and %d bytes of DOM: %s"
                           % (proc.returncode, len(proc.stdout), " | ".join(tail)))
    return proc.stdout.decode("utf-8", "replace")


def path_points(d):
    """Number of M/L commands in an SVG path (the page writes only those)."""
    return len(re.findall(r"[MLml]", d))


def check(dom, expect_timeline):
    """Returns (failures, summary parts)."""
    fail, done = [], []
    builder = DomBuilder()
    builder.feed(dom)
    root = builder.root

    bodies = find(root, "body")
    if not bodies:
        return ["no <body> in the dumped DOM"], done
    body = bodies[0]
    if "data-render-error" in body.attrs:
        fail.append("page reported a render error: " + body.attrs["data-render-error"])
    if body.attrs.get("data-no-report") == "true":
        fail.append("page has no report data (placeholder not replaced)")
        return fail, done
    if body.attrs.get("data-rendered") != "true" and "data-render-error" not in body.attrs:
        fail.append('<body> lacks data-rendered="true" (script did not finish)')

    scripts = find(root, "script", id_="aspen-report")
    if not scripts:
        return fail + ['no <script id="aspen-report"> element'], done
    try:
        report = json.loads(scripts[0].all_text())
    except ValueError as e:
        return fail + ["embedded report JSON does not parse: %s" % e], done
    if not isinstance(report, dict):
        return fail + ["embedded report is not a JSON object"], done
    memory = report.get("memory") or {}

    # Tile chart: one rect.tile-bar per tile, count written by the page.
    svg = find(root, "svg", id_="tile-memory-chart")
    tile_bytes = memory.get("tileBytes")
    if not svg:
        fail.append('no <svg id="tile-memory-chart">')
    elif not isinstance(tile_bytes, list):
        fail.append("report has no memory.tileBytes list")
    else:
        svg = svg[0]
        expected = len(tile_bytes)
        bars = len(find(svg, "rect", cls="tile-bar"))
        data_tiles = svg.attrs.get("data-tiles")
        if data_tiles != str(expected):
            fail.append("tile chart data-tiles=%r but the report has %d tiles" % (data_tiles, expected))
        target_tiles = (report.get("target") or {}).get("tiles")
        if target_tiles != expected:
            fail.append("memory.tileBytes has %d entries but target.tiles is %r" % (expected, target_tiles))
        if bars != expected:
            fail.append("tile chart has %d rect.tile-bar, expected %d" % (bars, expected))
        done.append("%d tile bars" % bars)

    # Memory over steps: one path per program with steps, >= 1 point per step.
    svg = find(root, "svg", id_="memory-steps-chart")
    liveness = [p for p in (memory.get("liveness") or []) if p.get("steps")]
    if not svg:
        fail.append('no <svg id="memory-steps-chart">')
    elif not liveness:
        if "no liveness data" not in svg[0].all_text():
            fail.append('memory steps chart: report has no liveness but the chart lacks "no liveness data"')
        done.append("no liveness")
    else:
        paths = find(svg[0], "path", cls="memory-line")
        for prog in liveness:
            want = len(prog["steps"])
            mine = [p for p in paths if p.attrs.get("data-program") == str(prog.get("program"))]
            if not mine:
                fail.append("memory steps chart: no path.memory-line for program %r" % prog.get("program"))
                continue
            got = path_points(mine[0].attrs.get("d", ""))
            if got < want:
                fail.append("memory steps chart: program %r path has %d points for %d steps"
                            % (prog.get("program"), got, want))
        done.append("%d memory lines" % len(paths))

    # Timeline: one rect.event per event, one rect.compile-pass per pass.
    svg = find(root, "svg", id_="timeline-chart")
    timeline = report.get("timeline") or {}
    events = timeline.get("events") or []
    passes = (report.get("compile") or {}).get("passes") or []
    if not svg:
        fail.append('no <svg id="timeline-chart">')
    else:
        svg = svg[0]
        got_events = len(find(svg, "rect", cls="event"))
        got_passes = len(find(svg, "rect", cls="compile-pass"))
        if got_events != len(events):
            fail.append("timeline has %d rect.event, expected %d" % (got_events, len(events)))
        if got_passes != len(passes):
            fail.append("timeline has %d rect.compile-pass, expected %d" % (got_passes, len(passes)))
        if not events:
            if expect_timeline:
                fail.append("--expect-timeline given but the report has no timeline events")
            if not any("not run" in n.all_text() for n in find(svg, "text")):
                fail.append('timeline has no events but does not say "not run"')
        done.append("%d timeline events, %d compile passes" % (got_events, got_passes))
    return fail, done


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("page")
    ap.add_argument("--chromium", default=None, help="Chromium binary (default: chromium on PATH)")
    ap.add_argument("--expect-timeline", action="store_true",
                    help="fail when the report has no timeline events")
    args = ap.parse_args()  # exits with status 2 on usage errors

    if not os.path.isfile(args.page):
        print("check_html_report: no such page: %s" % args.page)
        return 2
    chromium = args.chromium or shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium or not os.access(chromium, os.X_OK):
        print("check_html_report: chromium not found (%s)" % (args.chromium or "not on PATH"))
        return 2
    try:
        dom = dump_dom(chromium, args.page)
    except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
        print("check_html_report: FAIL %s: %s" % (args.page, e))
        return 1

    fail, done = check(dom, args.expect_timeline)
    name = os.path.basename(args.page)
    if fail:
        print("check_html_report: FAIL %s: %s" % (name, "; ".join(fail)))
        return 1
    print("check_html_report: OK %s: rendered, %s" % (name, ", ".join(done)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
