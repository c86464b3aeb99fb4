#!/usr/bin/env python3
"""Finds a call one of whose arguments moves what another argument uses.

The order in which a call's arguments are evaluated is unspecified: clang evaluates them
left to right, GCC and MSVC mostly right to left. In

    respond(json::serialize(body), flag ? a : b, [body = std::move(body)] { ... });

GCC built the lambda first and serialized a moved-from `body`, so every answer was
`null`, and no test on a clang build could see it. clang-tidy's bugprone-use-after-move
reports such a pair only when no argument holds a conditional operator (the one above
passes it), so this checker reads the sources themselves:

- A *call* is a `(` after a name, a `>` (`make<T>(...)`), a `)` or a `]`; `if`, `for`,
  `while`, `switch`, `sizeof`, `decltype` and their kind are not calls. A braced list
  (`T{a, b}`) is evaluated in order and is not checked.
- An argument *moves* `p` when it holds `std::move(p)` or `std::forward<...>(p)`, `p` a
  name or a member path (`g.body`, `r->text`), anywhere in it (a nested call, a lambda's
  capture) except inside a lambda's body, which runs later.
- Another argument of the same call *uses* `p` when it names `p` or something in it
  (`p.size()`), names a prefix of `p` as a whole (`g` for `g.body`) or calls a member
  function on one (`g.elapsed()`), not as a member of something else.

Comments, string and character literals and preprocessor lines are skipped.

    unsequenced_moves.py SOURCE_ROOT FOLDER...

Reads every .cpp, .cppm, .hpp and .h under each FOLDER (relative to SOURCE_ROOT), prints
each finding as `file:line: what`, and exits 1 when there is any.
"""
import os
import re
import sys

TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<raw>(?:u8|[uUL])?R"(?P<delimiter>[^(\s]*)\(.*?\)(?P=delimiter)")
  | (?P<string>(?:u8|[uUL])?"(?:\\.|[^"\\\n])*")
  | (?P<char>(?:u8|[uUL])?'(?:\\.|[^'\\\n])+')
  | (?P<number>\.?\d(?:[eEpP][+-]|[\w.']|')*)
  | (?P<name>[A-Za-z_]\w*)
  | (?P<punct>::|->|.)
""", re.S | re.X)

NOT_CALLS = {"if", "for", "while", "switch", "catch", "return", "sizeof", "alignof", "alignas",
             "decltype", "noexcept", "requires", "static_assert", "co_return", "co_await",
             "co_yield", "throw", "case", "delete", "typeid"}
LAMBDA_AFTER = {"(", ",", "=", "{", "return", "?", ":"}
CLOSING = {"(": ")", "[": "]", "{": "}"}


def tokens(text):
    """(text, line) of each token, with comments, literals and preprocessor lines left out."""
    text = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.M)
    found, line = [], 1
    for match in TOKEN.finditer(text):
        kind = match.lastgroup if match.lastgroup != "delimiter" else "raw"
        if kind not in ("space", "comment", "raw", "string", "char"):
            found.append((match.group(0), line))
        line += match.group(0).count("\n")
    return found


def matching(toks, index):
    """Index of the bracket that closes the one at `index`."""
    opening, closing, depth = toks[index][0], CLOSING[toks[index][0]], 0
    for position in range(index, len(toks)):
        if toks[position][0] == opening:
            depth += 1
        elif toks[position][0] == closing:
            depth -= 1
            if depth == 0:
                return position
    return len(toks) - 1


def arguments(toks, open_index, close_index):
    """(start, end) of each argument between a call's parentheses."""
    spans, start, position = [], open_index + 1, open_index + 1
    while position < close_index:
        text = toks[position][0]
        if text in CLOSING:
            position = matching(toks, position)
        elif text == ",":
            spans.append((start, position))
            start = position + 1
        position += 1
    if start < close_index:
        spans.append((start, close_index))
    return spans


def lambda_bodies(toks, start, end):
    """(start, end) of the body of each lambda in toks[start:end]."""
    bodies, position = [], start
    while position < end:
        text = toks[position][0]
        previous = toks[position - 1][0] if position > start else "("
        if text == "[" and previous in LAMBDA_AFTER:
            position = matching(toks, position) + 1
            while position < end and toks[position][0] != "{":
                position = matching(toks, position) + 1 if toks[position][0] in CLOSING else position + 1
            if position < end:
                close = matching(toks, position)
                bodies.append((position, close))
                position = close
        position += 1
    return bodies


def path_at(toks, position, end):
    """The member path (`a`, `a.b`, `a->b`) starting at `position`, as a token tuple."""
    path = []
    while position < end and re.fullmatch(r"[A-Za-z_]\w*", toks[position][0]):
        path.append(toks[position][0])
        if position + 2 < end and toks[position + 1][0] in (".", "->"):
            path.append(toks[position + 1][0])
            position += 2
        else:
            break
    return tuple(path)


def moves(toks, start, end):
    """(path, line) of each std::move / std::forward in toks[start:end] outside lambda bodies."""
    bodies = lambda_bodies(toks, start, end)
    found = []
    for position in range(start, end - 3):
        if toks[position][0] != "std" or toks[position + 1][0] != "::":
            continue
        if any(body_start < position < body_end for body_start, body_end in bodies):
            continue
        call = toks[position + 2][0]
        open_index = position + 3
        if call == "forward" and toks[open_index][0] == "<":
            depth = 0
            while open_index < end:
                text = toks[open_index][0]
                if text in CLOSING:
                    open_index = matching(toks, open_index)
                elif text in "<>":
                    depth += 1 if text == "<" else -1
                    if depth == 0:
                        break
                open_index += 1
            open_index += 1
        elif call != "move":
            continue
        if open_index >= end or toks[open_index][0] != "(":
            continue
        close = matching(toks, open_index)
        path = path_at(toks, open_index + 1, close)
        if path and open_index + 1 + len(path) == close:
            found.append((path, toks[position][1]))
    return found


def use_of(toks, start, end, path):
    """Line of the first use of `path` (or of a prefix of it as a whole) in toks[start:end]."""
    for position in range(start, end):
        if position > start and toks[position - 1][0] in (".", "->", "::"):
            continue
        named = path_at(toks, position, end)
        if not named:
            continue
        common = 0
        while common < min(len(named), len(path)) and named[common] == path[common]:
            common += 1
        whole_prefix = common == len(named) and common % 2 == 1
        # `g.elapsed()`: a member function called on an object that holds the path.
        after = position + len(named)
        called_on_prefix = (after < end and toks[after][0] == "(" and len(named) >= 3
                            and named[:-2] == path[:len(named) - 2])
        if common == len(path) or (whole_prefix and common < len(path)) or called_on_prefix:
            return toks[position][1]
    return None


def findings(path, source_root):
    with open(path, encoding="utf-8") as f:
        toks = tokens(f.read())
    where = os.path.relpath(path, source_root)
    found = []
    for index, (text, line) in enumerate(toks):
        if text != "(" or index == 0:
            continue
        callee = toks[index - 1][0]
        if callee in NOT_CALLS or not (re.fullmatch(r"\w+", callee) or callee in (">", ")", "]")):
            continue
        spans = arguments(toks, index, matching(toks, index))
        for moving in range(len(spans)):
            for moved, move_line in moves(toks, *spans[moving]):
                for using in range(len(spans)):
                    if using == moving:
                        continue
                    use_line = use_of(toks, *spans[using], moved)
                    if use_line is not None:
                        name = "".join(moved)
                        found.append(f"{where}:{move_line}: argument {moving + 1} of the call to {callee} "
                                     f"(line {line}) moves '{name}' and argument {using + 1} uses it "
                                     f"(line {use_line}); the order is unspecified")
                        break
    return found


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: unsequenced_moves.py SOURCE_ROOT FOLDER...")
    source_root = os.path.realpath(sys.argv[1])
    files = []
    for folder in sys.argv[2:]:
        for directory, _, names in os.walk(os.path.join(source_root, folder)):
            files += [os.path.join(directory, n) for n in names if n.endswith((".cpp", ".cppm", ".hpp", ".h"))]
    if not files:
        sys.exit(f"unsequenced_moves: no C++ source under {', '.join(sys.argv[2:])} in {source_root}")
    found = [finding for path in sorted(files) for finding in findings(path, source_root)]
    for finding in found:
        print(finding)
    print(f"unsequenced_moves: {len(files)} files, {len(found)} findings", file=sys.stderr)
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
