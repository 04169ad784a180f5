#!/usr/bin/env python3
"""tools/check_report.py catches what it is for: console errors and uncaught exceptions, charts without data
marks, a page whose self-check script did not run, a blank screenshot, and standalone SVG that is not XML.

usage: check_report_test.py CHECK_REPORT.py CHROMIUM
"""
import pathlib
import subprocess
import sys
import tempfile
import unittest

CHECKER, CHROMIUM = sys.argv[1], sys.argv[2]

# The same self-check as the pages edgc report writes: marks per chart into <body data-chart-marks>.
SELF_CHECK = ("<script>(function () { var m = {}; document.querySelectorAll('svg.chart').forEach(function (s) {"
              " m[s.id] = s.querySelectorAll('.mark').length; });"
              " document.body.setAttribute('data-chart-marks', JSON.stringify(m)); })();</script>")
CHART = "<svg class='chart' id='{id}' width='200' height='100'>{marks}</svg>"
BAR = "<rect class='mark bar' width='50' height='50' fill='#4e79a7'/>"


class CheckReportRejects(unittest.TestCase):
    def run_checker(self, body, script=SELF_CHECK, svg=None):
        with tempfile.TemporaryDirectory() as tmp:
            page = pathlib.Path(tmp) / "page.html"
            page.write_text(f"<!DOCTYPE html><html><body>{body}{script}</body></html>")
            extra = []
            if svg is not None:
                (pathlib.Path(tmp) / "svg").mkdir()
                (pathlib.Path(tmp) / "svg" / "chart.svg").write_text(svg)
                extra = ["--svg-dir", str(pathlib.Path(tmp) / "svg")]
            r = subprocess.run([sys.executable, CHECKER, str(page), str(pathlib.Path(tmp) / "shot.png"),
                                "--chromium", CHROMIUM, "--timeout", "60"] + extra,
                               capture_output=True, text=True, timeout=300)
            return r.returncode, r.stderr

    def test_console_error_and_uncaught_exception(self):
        code, err = self.run_checker(CHART.format(id="a", marks=BAR) +
                                     "<script>console.error('boom'); notDefined();</script>")
        self.assertEqual(code, 1, err)
        self.assertIn('console: "boom"', err)
        self.assertIn("Uncaught ReferenceError: notDefined is not defined", err)

    def test_chart_without_marks(self):
        code, err = self.run_checker(CHART.format(id="a", marks=BAR) + CHART.format(id="empty", marks=""))
        self.assertEqual(code, 1, err)
        self.assertIn("chart 'empty' drew no data marks", err)
        self.assertNotIn("chart 'a'", err)

    def test_page_whose_script_did_not_run(self):
        code, err = self.run_checker(CHART.format(id="a", marks=BAR), script="")
        self.assertEqual(code, 1, err)
        self.assertIn("self-check script did not run", err)

    def test_blank_screenshot(self):
        code, err = self.run_checker("<div style='visibility: hidden'>" + CHART.format(id="a", marks=BAR) + "</div>")
        self.assertEqual(code, 1, err)
        self.assertIn("blank", err)

    def test_standalone_svg_that_is_not_xml(self):
        code, err = self.run_checker(CHART.format(id="a", marks=BAR),
                                     svg="<svg xmlns='http://www.w3.org/2000/svg'><text>a & b</text></svg>")
        self.assertEqual(code, 1, err)
        self.assertIn("not well-formed XML", err)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
