#!/usr/bin/env python3
"""Checks three rules of C++20 modules that clang 19 does not enforce and GCC does:

1. No header from outside the project first included after an import. In a translation
   unit, once the first `import` or module declaration is seen, an `#include` may only
   repeat an outside header the unit already included (its guard makes it empty), or
   bring a project header that no module unit's global module fragment includes, whose
   own includes obey the same rule (project headers are followed transitively). GCC
   rejects an include that brings declarations an imported module's global module
   fragment also holds (GCC bug 99000), and accepts one whose declarations were all
   seen before; an outside header is not followed, so whatever it holds is assumed to
   clash, and a header that builds today cannot break when an outside header changes.
2. Every interface partition (`export module M:p;`) is exported by its module's
   primary interface (`export import :p;`), as [module.unit]/3 requires.
3. No macro defined in a module unit's global module fragment. A macro there changes
   what a header declares in this unit alone: an implementation macro (xxHash's
   XXH_INLINE_ALL) pulls C headers into an `extern "C"` block, and GCC then refuses the
   standard library's declarations against the imported module's ("conflicting
   language linkage"). Such a header goes in a unit that is no module unit.

    module_rules.py COMPILE_COMMANDS SOURCE_ROOT

The translation units are the entries of COMPILE_COMMANDS whose files lie under
SOURCE_ROOT. A quoted include is resolved against the including file's folder, then the
entry's -I and -iquote folders; one in angle brackets against the -I folders. Only
files under SOURCE_ROOT are followed; a header is read once per unit (every project
header has `#pragma once`). Conditional compilation is not evaluated: every directive
counts. Prints each breach as `file:line: what`, and exits 1 when there is any.
"""
import json
import os
import re
import shlex
import sys
from dataclasses import dataclass

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
IMPORT = re.compile(r'^\s*(?:export\s+)?import\s+([\w.:]+|<[^>]+>|"[^"]+")\s*;')
MODULE_DECLARATION = re.compile(r'^\s*(export\s+)?module\s+([\w.]+)(?::(\w+))?\s*;')
EXPORTED_PARTITION = re.compile(r'^\s*export\s+import\s+:(\w+)\s*;')


@dataclass
class Unit:
    file: str
    quote_dirs: list
    angle_dirs: list


def code_lines(path):
    """The file's lines with comments blanked, numbered from 1."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return [(number, re.sub(r"//.*", "", line)) for number, line in enumerate(text.split("\n"), 1)]


def units(compile_commands, source_root):
    with open(compile_commands, encoding="utf-8") as f:
        entries = json.load(f)
    found = []
    for entry in entries:
        directory = entry["directory"]
        file = os.path.normpath(os.path.join(directory, entry["file"]))
        if not file.startswith(source_root + os.sep):
            continue
        arguments = entry.get("arguments") or shlex.split(entry["command"])
        quote_dirs, angle_dirs = [], []
        index = 0
        while index < len(arguments):
            argument = arguments[index]
            for flag, lists in (("-iquote", [quote_dirs]), ("-I", [quote_dirs, angle_dirs])):
                if argument == flag and index + 1 < len(arguments):
                    value = arguments[index + 1]
                    index += 1
                elif argument.startswith(flag) and argument != flag:
                    value = argument[len(flag):]
                else:
                    continue
                for target in lists:
                    target.append(os.path.normpath(os.path.join(directory, value)))
                break
            index += 1
        found.append(Unit(file, quote_dirs, angle_dirs))
    return found


def resolve(unit, including_file, delimiter, name, source_root):
    folders = ([os.path.dirname(including_file)] + unit.quote_dirs) if delimiter == '"' else unit.angle_dirs
    for folder in folders:
        candidate = os.path.normpath(os.path.join(folder, name))
        if os.path.isfile(candidate):
            return candidate if candidate.startswith(source_root + os.sep) else None
    return None


def include_breaches(unit, source_root, fragment_headers):
    """`file:line: ...` for every include after an import that could bring a declaration
    an imported module's global module fragment holds."""
    breaches = []
    expanded = set()
    outside_seen = set()
    first_import = None

    def walk(path, chain):
        nonlocal first_import
        expanded.add(path)
        for number, line in code_lines(path):
            where = f"{os.path.relpath(path, source_root)}:{number}"
            if IMPORT.match(line) or MODULE_DECLARATION.match(line):
                if first_import is None and not re.match(r"^\s*module\s*;", line):
                    first_import = where
                continue
            include = INCLUDE.match(line)
            if not include:
                continue
            delimiter, name = include.groups()
            spelled = f"{delimiter}{name}{'>' if delimiter == '<' else delimiter}"
            header = resolve(unit, path, delimiter, name, source_root)
            if header is None:
                if first_import is not None and spelled not in outside_seen:
                    via = "".join(f" (included from {c})" for c in reversed(chain))
                    breaches.append(f"{where}: #include {spelled} after the import or module declaration at "
                                    f"{first_import}{via}")
                outside_seen.add(spelled)
            elif header not in expanded:
                if first_import is not None and header in fragment_headers:
                    via = "".join(f" (included from {c})" for c in reversed(chain))
                    breaches.append(f"{where}: #include {spelled}, which a global module fragment includes, after "
                                    f"the import or module declaration at {first_import}{via}")
                    continue
                walk(header, chain + [where])

    walk(unit.file, [])
    return breaches


def fragment_includes(unit, source_root):
    """The project headers a module unit's global module fragment brings, transitively."""
    found = set()

    def walk(path, in_fragment):
        for _, line in code_lines(path):
            if path == unit.file:
                if GLOBAL_MODULE_FRAGMENT.match(line):
                    in_fragment = True
                    continue
                if MODULE_DECLARATION.match(line):
                    return
            include = INCLUDE.match(line)
            if not include or not in_fragment:
                continue
            header = resolve(unit, path, include.group(1), include.group(2), source_root)
            if header is not None and header not in found:
                found.add(header)
                walk(header, True)

    walk(unit.file, False)
    return found


DEFINE = re.compile(r'^\s*#\s*define\s+(\w+)')
GLOBAL_MODULE_FRAGMENT = re.compile(r'^\s*module\s*;')


def fragment_breaches(path, source_root):
    """`file:line: ...` for every macro a module unit's global module fragment defines."""
    breaches = []
    in_fragment = False
    for number, line in code_lines(path):
        if GLOBAL_MODULE_FRAGMENT.match(line):
            in_fragment = True
        elif MODULE_DECLARATION.match(line):
            break
        elif in_fragment and (define := DEFINE.match(line)):
            breaches.append(f"{os.path.relpath(path, source_root)}:{number}: #define {define.group(1)} "
                            "in the global module fragment of a module unit")
    return breaches


def partition_breaches(files, source_root):
    """`file:line: ...` for every interface partition its primary interface does not export."""
    partitions, exported, primaries = {}, {}, {}
    for path in files:
        module = None
        for number, line in code_lines(path):
            declaration = MODULE_DECLARATION.match(line)
            if declaration and declaration.group(1):
                module, partition = declaration.group(2), declaration.group(3)
                if partition:
                    partitions[(module, partition)] = f"{os.path.relpath(path, source_root)}:{number}"
                else:
                    primaries[module] = path
                    exported.setdefault(module, set())
            elif module and path == primaries.get(module):
                export = EXPORTED_PARTITION.match(line)
                if export:
                    exported[module].add(export.group(1))
    breaches = []
    for (module, partition), where in sorted(partitions.items()):
        if module not in primaries:
            breaches.append(f"{where}: interface partition {module}:{partition} of a module "
                            "with no primary interface among the units")
        elif partition not in exported[module]:
            breaches.append(f"{where}: interface partition {module}:{partition} is not exported "
                            f"by {os.path.relpath(primaries[module], source_root)} "
                            f"(export import :{partition};)")
    return breaches


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: module_rules.py COMPILE_COMMANDS SOURCE_ROOT")
    compile_commands, source_root = sys.argv[1], os.path.realpath(sys.argv[2])
    found = units(compile_commands, source_root)
    if not found:
        sys.exit(f"module_rules: no translation unit under {source_root} in {compile_commands}")
    fragment_headers = set().union(*(fragment_includes(unit, source_root) for unit in found))
    breaches = [b for unit in found for b in include_breaches(unit, source_root, fragment_headers)]
    breaches += [b for unit in found for b in fragment_breaches(unit.file, source_root)]
    breaches += partition_breaches([unit.file for unit in found], source_root)
    for breach in breaches:
        print(breach)
    print(f"module_rules: {len(found)} translation units, {len(breaches)} breaches", file=sys.stderr)
    sys.exit(1 if breaches else 0)


if __name__ == "__main__":
    main()
