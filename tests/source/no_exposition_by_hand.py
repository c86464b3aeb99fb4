"""No Prometheus exposition written by hand in a folder: what a tool exposes comes from
prometheus-cpp's serializer (its own families) and jsonl's renderers (the writers'),
never from `# TYPE` and `# HELP` lines pasted into strings.

    no_exposition_by_hand.py FOLDER

Prints each `file:line` that writes one, and exits 1 when there is any.
"""
import os
import re
import sys

folder = sys.argv[1]
if not os.path.isdir(folder) or not any(os.scandir(folder)):
    sys.exit(f"no_exposition_by_hand: no folder {folder} with files in it")
found = []
for directory, _, names in os.walk(folder):
    for name in sorted(names):
        path = os.path.join(directory, name)
        if not name.endswith((".cpp", ".cppm", ".hpp")):
            continue
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if re.search(r'"[^"]*# (TYPE|HELP) ', line):
                    found.append(f"{os.path.relpath(path, folder)}:{number}: {line.strip()}")
for line in found:
    print(line)
sys.exit(1 if found else 0)
