#!/usr/bin/env python3
"""docs_check.py finds each breach it exists for, and passes a tree that holds every rule.

    docs_check_tests.py DOCS_CHECK
"""
import os
import subprocess
import sys
import tempfile
import time

CHECKER = sys.argv[1]

SOURCE = """// An example.
int main() {
  // docs:begin body
  int answer = 42;
  return answer - 42;
  // docs:end body
}
"""

README = """# project

> about it

See [the writer](docs/writer.md#options) and [below](#usage).

| figure | median |
|---|---|
| `records_e2e_typed` | 340877 records/s |

## Usage

<!-- snippet: examples/first.cpp#body -->
```cpp
int answer = 42;
return answer - 42;
```

<!-- runs in a test -->
```sh
echo ran > proof
```
"""

PAGE = """# The writer

> About `jsonl.writer`.

## Options

<!-- snippet: examples/first.cpp -->
```cpp
// An example.
int main() {
  int answer = 42;
  return answer - 42;
}
```

Back to [the front door](../README.md#usage).
"""


def tree(files):
    root = tempfile.mkdtemp()
    for relative, text in files.items():
        path = os.path.join(root, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
    return root


def check(files, *extra):
    root = tree(files)
    result = subprocess.run([sys.executable, CHECKER, root, *extra], capture_output=True, text=True)
    return result.returncode, result.stdout + result.stderr, root


FIGURES = """# Performance

| figure | median | unit | runs |
|---|---:|---|---|
| records_e2e_typed | 340877 | records/s | 340877, 355103, 330079 |
"""

GOOD = {"README.md": README, "docs/writer.md": PAGE, "examples/first.cpp": SOURCE, "docs/PERFORMANCE.md": FIGURES}

CASES = [
    ("a README over 250 lines", {"README.md": README + "line\n" * 240}, "the front door holds at most 250"),
    ("a page over 400 lines", {"docs/writer.md": PAGE + "line\n" * 390}, "a page holds at most 400"),
    ("a page that does not say what it is about", {"docs/writer.md": PAGE.replace("> About", "About")},
     "a '> ' line naming its module or command"),
    ("a link to a file that is not there", {"README.md": README.replace("docs/writer.md#", "docs/write.md#")},
     "no file docs/write.md"),
    ("a link to a heading that is not there", {"README.md": README.replace("#options", "#option")},
     "has no heading #option"),
    ("a link within the page to a heading that is not there", {"README.md": README.replace("(#usage)", "(#use)")},
     "has no heading #use"),
    ("a C++ block that quotes no file", {"README.md": README.replace("<!-- snippet: examples/first.cpp#body -->\n", "")},
     "a cpp block that quotes no built file"),
    ("a block that differs from its file", {"docs/writer.md": PAGE.replace("return answer - 42;\n}", "return 0;\n}")},
     "differs from examples/first.cpp at its line 4"),
    ("a region that drifted in the file", {"examples/first.cpp": SOURCE.replace("int answer = 42;", "int answer = 41;")},
     "differs from examples/first.cpp#body at its line 1"),
    ("a snippet naming a region the file does not have",
     {"README.md": README.replace("first.cpp#body", "first.cpp#head")}, "has no region 'head'"),
    ("a README figure that is not the latest runs' median",
     {"docs/PERFORMANCE.md": FIGURES.replace("| 340877 |", "| 355103 |")},
     "`records_e2e_typed` shows 340877 records/s; docs/PERFORMANCE.md's median is 355103 records/s"),
    ("a snippet naming a file that is not there",
     {"README.md": README.replace("examples/first.cpp#body", "examples/second.cpp#body")},
     "the snippet's file examples/second.cpp does not exist"),
]


def main():
    failures = []
    code, output, _ = check(GOOD)
    if code != 0 or output.strip():
        failures.append(f"a tree that holds every rule was refused: {output!r}")
    for name, changes, expected in CASES:
        code, output, _ = check(dict(GOOD, **changes))
        if code != 1 or expected not in output:
            failures.append(f"{name}: expected exit 1 and {expected!r}, got {code}: {output!r}")

    bin_dir = tempfile.mkdtemp()
    work = os.path.join(tempfile.mkdtemp(), "work")
    code, output, _ = check(GOOD, "--run", bin_dir, work)
    ran = any("proof" in files for _, _, files in os.walk(work))
    if code != 0 or not ran:
        failures.append(f"a marked shell block that exits 0 was refused or not run: {code}, ran {ran}: {output!r}")
    code, output, _ = check(dict(GOOD, **{"README.md": README.replace("echo ran > proof", "false")}),
                            "--run", bin_dir, os.path.join(tempfile.mkdtemp(), "work"))
    if code != 1 or "the block marked to run exited 1" not in output:
        failures.append(f"a marked shell block that fails was not named: {code}: {output!r}")
    # A block that fails after starting something in the background: named at once, and
    # what it started does not outlive it.
    started = time.monotonic()
    code, output, _ = check(dict(GOOD, **{"README.md": README.replace("echo ran > proof", "sleep 600 &\nfalse")}),
                            "--run", bin_dir, os.path.join(tempfile.mkdtemp(), "work"))
    if code != 1 or "the block marked to run exited 1" not in output or time.monotonic() - started > 60:
        failures.append(f"a failing block's background job kept the run waiting: {code}: {output!r}")

    for failure in failures:
        print(failure)
    print(f"{len(CASES) + 4 - len(failures)} of {len(CASES) + 4} checks of docs_check.py hold")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
