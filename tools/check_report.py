#!/usr/bin/env python3
"""Opens a page written by `edgc report` in headless Chromium and fails on anything a reader would see broken.

usage: tools/check_report.py REPORT.html SCREENSHOT.png [--svg-dir DIR] [--chromium PATH] [--timeout S] [--width PX]

In a real browser (Debian's `chromium`; python3 standard library only) it checks that
  * the page logs no console message and throws no uncaught exception;
  * the page's own script ran, found charts, and every chart drew data marks: the script writes
    {chart id: number of marks} into <body data-chart-marks>, read back here through --dump-dom;
  * a full-page screenshot is written to SCREENSHOT.png and is not blank;
  * with --svg-dir, every standalone chart there is well-formed XML (stricter than the HTML parser) with data marks.
Chromium's own stderr noise (D-Bus, GPU, sandbox warnings) is ignored: only lines it logs for the page's console
count. Each browser run has a time limit, and its whole process group is killed afterwards.

Exit codes: 0 all checks passed, 1 a check failed, 2 bad usage (no such file, no browser).
"""
import argparse
import html.parser
import json
import os
import pathlib
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
import zlib

# Chromium prints page console output as "[pid:tid:time:INFO:CONSOLE:12] "message", source: URL (12)" (older
# releases: "CONSOLE(12)"); uncaught exceptions arrive the same way, as "Uncaught ...".
CONSOLE_LINE = re.compile(r":CONSOLE[(:]|Uncaught ")
MAX_SCREENSHOT_HEIGHT = 16384  # Chromium's largest surface
MIN_INK_FRACTION = 0.005  # share of image bytes that differ from the background, below which a page is blank


class CheckFailed(Exception):
    pass


def find_chromium(given):
    if given:
        return given
    if os.environ.get("EDGC_CHROMIUM"):
        return os.environ["EDGC_CHROMIUM"]
    for name in ("chromium", "chromium-browser", "google-chrome-stable", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def run_browser(chromium, profile, extra, url, timeout):
    """One headless run: (stdout, stderr). The process group is killed when it ends or times out."""
    cmd = [chromium, "--headless", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
           "--no-default-browser-check", "--disable-extensions", "--hide-scrollbars", "--mute-audio",
           "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000", "--user-data-dir=" + profile]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--no-sandbox")  # Chromium refuses to start its sandbox as root (containers, CI)
    cmd += extra + [url]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        proc.communicate()
        raise CheckFailed(f"chromium did not finish within {timeout} s: {' '.join(cmd)}")
    finally:
        kill_group(proc.pid)  # renderer and GPU helpers may outlive the browser process
    return out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def console_errors(stderr):
    """The page's console lines, without Chromium's "[pid:tid:time:INFO:CONSOLE:1] " prefix."""
    return [line.split("] ", 1)[-1].strip() for line in stderr.splitlines() if CONSOLE_LINE.search(line)]


class BodyAttributes(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.body = None

    def handle_starttag(self, tag, attrs):
        if tag == "body" and self.body is None:
            self.body = dict(attrs)


def chart_marks(dom):
    parser = BodyAttributes()
    parser.feed(dom)
    if parser.body is None:
        raise CheckFailed("the DOM Chromium dumped has no <body>: the page did not load")
    raw = parser.body.get("data-chart-marks")
    if raw is None:
        raise CheckFailed("<body> has no data-chart-marks: the page's self-check script did not run")
    marks = json.loads(raw)
    height = int(parser.body.get("data-page-height", "0") or 0)
    return marks, height


def ink_fraction(png):
    """Share of the decompressed image bytes that differ from the most common values (the background).

    PNG filters turn flat areas into runs of one byte value (zero for Sub/Up/Paeth, the colour for None), so a
    blank page scores close to 0 and a page with text and charts clearly above; no pixel-exact decoding needed."""
    data = png.read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise CheckFailed(f"{png} is not a PNG file")
    pos, idat = 8, []
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IDAT":
            idat.append(data[pos + 8:pos + 8 + length])
        if kind == b"IEND":
            break
        pos += 12 + length
    raw = zlib.decompress(b"".join(idat))
    sample = raw[:: max(1, len(raw) // 200000)]
    common = sorted(set(sample), key=sample.count, reverse=True)[:4]
    background = sum(raw.count(bytes([b])) for b in common)
    return 1.0 - background / max(1, len(raw))


def check_svg_files(svg_dir):
    """Failures of the standalone .svg files: not XML, or no data marks."""
    files = sorted(pathlib.Path(svg_dir).glob("*.svg"))
    if not files:
        return [f"no .svg files in {svg_dir}"]
    failures = []
    for f in files:
        try:
            root = ElementTree.parse(f).getroot()
        except ElementTree.ParseError as e:
            failures.append(f"{f}: not well-formed XML: {e}")
            continue
        marks = sum(1 for e in root.iter() if "mark" in e.get("class", "").split())
        if marks == 0:
            failures.append(f"{f}: no data marks")
    return failures


def check(args):
    page = pathlib.Path(args.html).resolve()
    if not page.is_file():
        print(f"check_report: {args.html}: no such file", file=sys.stderr)
        return 2
    chromium = find_chromium(args.chromium)
    if chromium is None:
        print("check_report: no chromium found (install Debian's chromium, or pass --chromium)", file=sys.stderr)
        return 2
    shot = pathlib.Path(args.screenshot).resolve()
    shot.parent.mkdir(parents=True, exist_ok=True)
    if shot.exists():
        shot.unlink()
    url = page.as_uri()
    start = time.monotonic()
    failures = []
    with tempfile.TemporaryDirectory(prefix="edgc-check-report-") as profile:
        # 1. Run the page, read back what its script wrote, and collect console messages.
        dom, err = run_browser(chromium, profile, [f"--window-size={args.width},1000", "--dump-dom"], url,
                               args.timeout)
        failures += [f"console: {line}" for line in console_errors(err)]
        marks, height = chart_marks(dom)
        if not marks:
            failures.append("the page has no charts (no <svg class=\"chart\">)")
        failures += [f"chart '{name}' drew no data marks" for name, n in marks.items() if n == 0]

        # 2. A screenshot of the whole page at the same width.
        height = min(max(height, 600), MAX_SCREENSHOT_HEIGHT)
        _, err = run_browser(chromium, profile, [f"--window-size={args.width},{height}", f"--screenshot={shot}"],
                             url, args.timeout)
        failures += [f"console: {line}" for line in console_errors(err) if f"console: {line}" not in failures]
    if args.svg_dir:
        failures += check_svg_files(args.svg_dir)
    if not shot.is_file():
        failures.append(f"chromium wrote no screenshot to {shot}")
    elif shot.stat().st_size < args.min_png_bytes:
        failures.append(f"screenshot {shot} is only {shot.stat().st_size} bytes: the page looks blank")
    else:
        ink = ink_fraction(shot)
        if ink < MIN_INK_FRACTION:
            failures.append(f"screenshot {shot} is blank ({ink:.2%} of it differs from the background)")

    elapsed = time.monotonic() - start
    summary = ", ".join(f"{name} {n}" for name, n in marks.items())
    if failures:
        print(f"check_report: {page}: FAILED ({elapsed:.1f} s)", file=sys.stderr)
        for f in failures:
            print(f"  {f}", file=sys.stderr)
        return 1
    print(f"check_report: {page}: ok in {elapsed:.1f} s; {len(marks)} charts (marks: {summary}); "
          f"screenshot {shot} ({args.width}x{height})")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("html", help="the page written by edgc report")
    ap.add_argument("screenshot", help="where to write the full-page PNG")
    ap.add_argument("--svg-dir", help="also check the standalone charts written there")
    ap.add_argument("--chromium", help="browser binary (default: $EDGC_CHROMIUM, else chromium on PATH)")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per browser run (default 60)")
    ap.add_argument("--width", type=int, default=1280, help="window width in pixels (default 1280)")
    ap.add_argument("--min-png-bytes", type=int, default=10000, help="smaller screenshots count as blank")
    args = ap.parse_args()
    try:
        return check(args)
    except CheckFailed as e:
        print(f"check_report: {args.html}: FAILED: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
