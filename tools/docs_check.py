#!/usr/bin/env python3
"""Holds the documentation to what a reader relies on:

1. README.md is a front door: at most 250 lines.
2. Every page under docs/ is at most 400 lines and says at its top what it is about: the
   first line after its title is a quote (`> ...`) naming the module or command. The
   pages tools/bench/run writes (PERFORMANCE.md and the parts it copies in) are figures,
   not pages, and are left out of both rules.
3. Every link in README.md, CHANGELOG.md and docs/ resolves: a relative file exists, and
   an anchor (`#...`) names a heading of its page, as GitHub spells a heading's anchor.
   Links to other sites are not followed.
4. Every C++ and CMake block is a quote of a file that the build compiles: the line before
   its fence is `<!-- snippet: PATH -->` (the whole file) or `<!-- snippet: PATH#NAME -->`
   (the lines between `docs:begin NAME` and `docs:end NAME` comments, dedented), and the
   block equals it byte for byte. Marker comments are never part of a quote.
5. A figure in a README.md table (a row whose first cell is a figure of docs/PERFORMANCE.md
   in backticks) shows that figure's median and unit as PERFORMANCE.md has them, so the
   front door's figures are the latest runs' and never drift from them.
6. With --run BIN_DIR WORK_DIR: every shell block marked `<!-- runs in a test -->` runs in
   a fresh folder of WORK_DIR under `bash -euo pipefail`, with BIN_DIR first on PATH, and
   must exit 0.

    docs_check.py ROOT [--run BIN_DIR WORK_DIR]

Prints each breach as `file:line: what`, and exits 1 when there is any.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap

README_LINES = 250
PAGE_LINES = 400
# Written by tools/bench/run, which copies the other two into PERFORMANCE.md.
GENERATED = {"docs/PERFORMANCE.md", "docs/bench_targets.md", "docs/recording_measurements.md"}
QUOTED_LANGUAGES = {"cpp", "c++", "cmake"}
SNIPPET = re.compile(r"^<!-- snippet: (?P<path>[^#\s]+)(?:#(?P<name>[\w-]+))? -->$")
RUNS = "<!-- runs in a test -->"
REGION = re.compile(r"^\s*(?://|#)\s*docs:(?P<edge>begin|end) (?P<name>[\w-]+)\s*$")
LINK = re.compile(r"(?<!\\)\[(?:[^\]\\]|\\.)*\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+|~~~+)(?P<info>[^`]*)$")


class Page:
    """A Markdown page: its lines, its fenced blocks and the anchors of its headings."""

    def __init__(self, root, relative):
        self.relative = relative
        with open(os.path.join(root, relative), encoding="utf-8") as file:
            self.lines = file.read().split("\n")
        if self.lines and self.lines[-1] == "":
            self.lines.pop()
        self.blocks = []  # (first line index of the fence, info, content lines, indent)
        self.prose = []  # (line index, text) outside fenced blocks
        self._read_blocks()
        self.anchors = self._anchors()

    def _read_blocks(self):
        open_fence = None
        for index, line in enumerate(self.lines):
            match = FENCE.match(line)
            if open_fence is None:
                if match:
                    open_fence = (index, match["fence"], match["info"].strip(), len(match["indent"]), [])
                else:
                    self.prose.append((index, line))
            elif match and match["fence"].startswith(open_fence[1]) and not match["info"].strip():
                start, _, info, indent, content = open_fence
                self.blocks.append((start, info, content, indent))
                open_fence = None
            else:
                indent = open_fence[3]
                open_fence[4].append(line[indent:] if line.startswith(" " * indent) else line.lstrip())
        if open_fence is not None:
            self.blocks.append((open_fence[0], open_fence[2], open_fence[4], open_fence[3]))

    def _anchors(self):
        seen = {}
        anchors = set()
        for _, line in self.prose:
            match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not match:
                continue
            slug = github_anchor(match.group(1))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            anchors.add(slug if count == 0 else f"{slug}-{count}")
        for _, line in self.prose:
            for name in re.findall(r'<a (?:name|id)="([^"]+)"', line):
                anchors.add(name)
        return anchors


def github_anchor(heading):
    """The anchor GitHub gives a heading: its text without markup, lower case, each
    character but letters, digits, '-', '_' and spaces dropped, spaces as '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").replace("*", "")
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def pages_of(root):
    relatives = ["README.md"]
    if os.path.exists(os.path.join(root, "CHANGELOG.md")):
        relatives.append("CHANGELOG.md")
    docs = os.path.join(root, "docs")
    if os.path.isdir(docs):
        for folder, _, files in sorted(os.walk(docs)):
            for name in sorted(files):
                if name.endswith(".md"):
                    relatives.append(os.path.relpath(os.path.join(folder, name), root))
    return relatives


def quoted_text(root, path, name):
    """The text a snippet marker names, or an error."""
    full = os.path.abspath(os.path.join(root, path))
    if not full.startswith(os.path.abspath(root) + os.sep) or not os.path.isfile(full):
        return None, f"the snippet's file {path} does not exist"
    with open(full, encoding="utf-8") as file:
        lines = file.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if name is None:
        return [line for line in lines if not REGION.match(line)], None
    inside = None
    for index, line in enumerate(lines):
        match = REGION.match(line)
        if match and match["name"] == name:
            if match["edge"] == "begin" and inside is None:
                inside = []
                continue
            if match["edge"] == "end" and inside is not None:
                return textwrap.dedent("\n".join(inside)).split("\n"), None
        elif inside is not None and not match:
            inside.append(line)
    return None, f"{path} has no region '{name}' (docs:begin {name} ... docs:end {name})"


def check_page(root, page, breaches):
    where = page.relative
    if where == "README.md" and len(page.lines) > README_LINES:
        breaches.append(f"{where}:1: {len(page.lines)} lines; the front door holds at most {README_LINES}")
    if where.startswith("docs/") and where not in GENERATED:
        if len(page.lines) > PAGE_LINES:
            breaches.append(f"{where}:1: {len(page.lines)} lines; a page holds at most {PAGE_LINES}")
        body = [line for line in page.lines[1:] if line.strip()]
        if not page.lines or not page.lines[0].startswith("# ") or not body or not body[0].startswith("> "):
            breaches.append(f"{where}:1: a page opens with its '# title', then a '> ' line naming its module or command")

    for index, text in page.prose:
        for match in LINK.finditer(re.sub(r"`[^`]*`", "", text)):
            problem = link_problem(root, page, match["target"])
            if problem:
                breaches.append(f"{where}:{index + 1}: {problem}")

    for start, info, content, _ in page.blocks:
        language = info.split()[0].lower() if info else ""
        marker = page.lines[start - 1].strip() if start > 0 else ""
        snippet = SNIPPET.match(marker)
        if language in QUOTED_LANGUAGES and not snippet:
            breaches.append(f"{where}:{start + 1}: a {language} block that quotes no built file "
                            f"(put <!-- snippet: PATH#NAME --> on the line before it)")
        if snippet:
            expected, error = quoted_text(root, snippet["path"], snippet["name"])
            if error:
                breaches.append(f"{where}:{start}: {error}")
            elif content != expected:
                differing = next((i for i, pair in enumerate(zip(content, expected)) if pair[0] != pair[1]),
                                 min(len(content), len(expected)))
                breaches.append(f"{where}:{start + 2 + differing}: the block differs from "
                                f"{snippet['path']}{'#' + snippet['name'] if snippet['name'] else ''} "
                                f"at its line {differing + 1}")


def medians(root):
    """Each figure of docs/PERFORMANCE.md: its median and unit, as the table spells them."""
    path = os.path.join(root, "docs", "PERFORMANCE.md")
    figures = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as file:
            for line in file:
                cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
                if len(cells) == 4 and cells[0] and cells[0] not in ("figure", "---"):
                    figures.setdefault(cells[0], f"{cells[1]} {cells[2]}")
    return figures


def check_figures(root, page, breaches):
    figures = medians(root)
    for index, text in page.prose:
        cells = [cell.strip() for cell in text.strip().strip("|").split("|")] if text.startswith("|") else []
        name = cells[0][1:-1] if cells and cells[0].startswith("`") and cells[0].endswith("`") else None
        if name in figures and (len(cells) < 2 or cells[1] != figures[name]):
            shown = cells[1] if len(cells) > 1 else "nothing"
            breaches.append(f"{page.relative}:{index + 1}: `{name}` shows {shown}; "
                            f"docs/PERFORMANCE.md's median is {figures[name]}")


def link_problem(root, page, target):
    if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # another site, or mailto:
        return None
    path, _, anchor = target.partition("#")
    folder = os.path.dirname(os.path.join(root, page.relative))
    full = os.path.normpath(os.path.join(folder, path)) if path else os.path.join(root, page.relative)
    if not os.path.exists(full):
        return f"link to {target}: no file {os.path.relpath(full, root)}"
    if anchor:
        if not full.endswith(".md") or os.path.isdir(full):
            return f"link to {target}: an anchor into something that is not a page"
        anchors = Page(root, os.path.relpath(full, root)).anchors
        if anchor not in anchors:
            return f"link to {target}: {os.path.relpath(full, root)} has no heading #{anchor}"
    return None


def run_block(script, folder, environment, timeout=240):
    """Runs `script` under bash in a session of its own; its exit status (None when it ran
    past `timeout`) and its output. Whatever it left running (a server it started, when a
    step after it failed) is killed with it."""
    with open(os.path.join(folder, ".output"), "w+") as output:
        process = subprocess.Popen(["bash", "-euo", "pipefail", "-c", script], cwd=folder, env=environment,
                                   stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()
        output.seek(0)
        return code, output.read()


def run_marked(root, pages, bin_dir, work_dir, breaches):
    ran = 0
    for page in pages:
        for start, info, content, _ in page.blocks:
            if start == 0 or page.lines[start - 1].strip() != RUNS:
                continue
            ran += 1
            folder = os.path.join(work_dir, f"{page.relative.replace('/', '_')}-{start + 1}")
            shutil.rmtree(folder, ignore_errors=True)
            os.makedirs(folder)
            environment = dict(os.environ, PATH=os.path.abspath(bin_dir) + os.pathsep + os.environ.get("PATH", ""))
            code, output = run_block("\n".join(content), folder, environment)
            if code != 0:
                tail = output.strip().splitlines()[-5:]
                breaches.append(f"{page.relative}:{start + 1}: the block marked to run "
                                f"{'timed out' if code is None else f'exited {code}'}: " + " | ".join(tail))
    return ran


def main(argv):
    if len(argv) not in (2, 5) or (len(argv) == 5 and argv[2] != "--run"):
        print("usage: docs_check.py ROOT [--run BIN_DIR WORK_DIR]", file=sys.stderr)
        return 2
    root = argv[1]
    pages = [Page(root, relative) for relative in pages_of(root)]
    breaches = []
    if len(argv) == 5:
        ran = run_marked(root, pages, argv[3], argv[4], breaches)
        if ran == 0:
            breaches.append("README.md:1: no shell block is marked to run")
    else:
        for page in pages:
            check_page(root, page, breaches)
        check_figures(root, pages[0], breaches)
    for breach in breaches:
        print(breach)
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
