#!/usr/bin/env python3
"""A run report as a browser shows it: Debian's Chromium, headless, loads the page with
the network off; the check fails on any console message, on a chart whose drawn points
are not the data-points it claims (or none), and on a block missing from the page; then
it keeps a screenshot of the page.

    check_report_page.py REPORT.html SCREENSHOT.png BLOCK...
"""
import html.parser
import os
import shutil
import subprocess
import sys
import tempfile


class Page(html.parser.HTMLParser):
    """The charts (data-points claimed, points drawn) and data-block names of a DOM."""

    def __init__(self):
        super().__init__()
        self.charts = []  # [claimed, drawn]
        self.blocks = set()
        self.in_chart = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "svg" and "chart" in (attrs.get("class") or "").split():
            self.charts.append([int(attrs.get("data-points", "-1")), 0])
            self.in_chart = True
        elif self.in_chart and "point" in (attrs.get("class") or "").split():
            self.charts[-1][1] += 1
        if "data-block" in attrs:
            self.blocks.add(attrs["data-block"])

    def handle_endtag(self, tag):
        if tag == "svg":
            self.in_chart = False


def chromium(profile, *arguments):
    browser = shutil.which("chromium")
    if not browser:
        sys.exit("chromium is not installed (tools/setup installs it)")
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
               f"--user-data-dir={profile}", "--proxy-server=127.0.0.1:9", "--enable-logging=stderr", "--v=0",
               *arguments]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)


def main():
    report, screenshot, *blocks = sys.argv[1:]
    url = "file://" + os.path.abspath(report)
    with tempfile.TemporaryDirectory() as profile:
        shown = chromium(profile, "--dump-dom", url)
        console = [line for line in shown.stderr.splitlines() if ":CONSOLE" in line]
        if console:
            sys.exit(f"{report}: the browser's console says:\n" + "\n".join(console))
        page = Page()
        page.feed(shown.stdout)
        if not page.charts:
            sys.exit(f"{report}: no chart in the page")
        for index, (claimed, drawn) in enumerate(page.charts):
            if drawn == 0 or claimed != drawn:
                sys.exit(f"{report}: chart {index} claims {claimed} data points and draws {drawn}")
        missing = sorted(set(blocks) - page.blocks)
        if missing:
            sys.exit(f"{report}: no block {', '.join(missing)} (the page has {', '.join(sorted(page.blocks))})")
        os.makedirs(os.path.dirname(os.path.abspath(screenshot)), exist_ok=True)
        chromium(profile, "--window-size=1300,4400", f"--screenshot={os.path.abspath(screenshot)}", url)
    if not os.path.exists(screenshot) or os.path.getsize(screenshot) == 0:
        sys.exit(f"{report}: no screenshot at {screenshot}")
    print(f"{report}: {len(page.charts)} charts, every data point drawn, blocks {', '.join(sorted(page.blocks))}; "
          f"screenshot {screenshot}")


if __name__ == "__main__":
    main()
