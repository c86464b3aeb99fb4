"""A reader of jsonl-perf fed files made to exhaust its memory: it must report the bad
line with its file and line number, go on with the rest, and stay under a ceiling of
peak resident memory.

    bounded_memory.py CASE TOOL ZSTD SCRATCH

CASE is summary, verify, replay or join. The inputs are made here, in SCRATCH:
  - a plain file whose second line is 300 MiB long, with no newline;
  - a .jsonl.zst file of 34 KB that decodes to 1 GiB of zeros, no newline in it;
  - a zstd frame whose header declares a terabyte of content.
Exits 1 naming what failed.
"""
import os
import shutil
import struct
import subprocess
import sys

CEILING_KIB = 256 * 1024

case, tool, zstd, scratch = sys.argv[1:5]
shutil.rmtree(scratch, ignore_errors=True)
os.makedirs(scratch)

GOOD = b'{"status": "ok", "perf_metrics": {"timing_metrics": {"arrival_time": 1.0, "last_token_time": 1.5}}}\n'
LONG_LINE = os.path.join(scratch, "perf_metrics-server-h-1-20260101T000000Z.jsonl")
ZEROS = os.path.join(scratch, "perf_metrics-server-h-2-20260101T000000Z.jsonl.zst")
HUGE_HEADER = os.path.join(scratch, "perf_metrics-server-h-3-20260101T000000Z.jsonl.zst")
LONG_PREFIX = b'{"status": "x", "pad": "'
LONG_MIB = 300
LONG_BYTES = len(LONG_PREFIX) + (LONG_MIB << 20)
ZEROS_MIB = 1024
BOUND = 16 << 20  # the readers' default


def make_long_line():
    with open(LONG_LINE, "wb") as out:
        out.write(GOOD)
        out.write(LONG_PREFIX)
        block = b"a" * (1 << 20)
        for _ in range(LONG_MIB):
            out.write(block)


def make_zeros():
    with open(ZEROS, "wb") as out:
        compressor = subprocess.Popen([zstd, "-q", "-19", "-c"], stdin=subprocess.PIPE, stdout=out)
        block = bytes(1 << 20)
        for _ in range(ZEROS_MIB):
            compressor.stdin.write(block)
        compressor.stdin.close()
        if compressor.wait() != 0:
            sys.exit("zstd could not make the 1 GiB of zeros")
    if os.path.getsize(ZEROS) > 64 * 1024:
        sys.exit(f"the zeros' file is {os.path.getsize(ZEROS)} bytes, more than the 64 KiB meant")


def make_huge_header():
    # A single-segment frame whose content-size field says 2^40 bytes, then one
    # run-length block of 'a' that is its last.
    magic = struct.pack("<I", 0xFD2FB528)
    descriptor = bytes([0b11100000])  # 8-byte content size, single segment
    content_size = struct.pack("<Q", 1 << 40)
    block_size = 1 << 17
    block_header = ((block_size << 3) | (1 << 1) | 1).to_bytes(3, "little")  # RLE, last
    with open(HUGE_HEADER, "wb") as out:
        out.write(magic + descriptor + content_size + block_header + b"a")


def run(arguments, stdin=None):
    """Runs the tool; returns (exit status, stdout, stderr, peak resident KiB)."""
    with open(os.path.join(scratch, "stdout"), "w+b") as out, open(os.path.join(scratch, "stderr"), "w+b") as err:
        process = subprocess.Popen([tool] + arguments, stdin=stdin, stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return process.returncode, out.read().decode(), err.read().decode(), usage.ru_maxrss


def expect(condition, what, output):
    if not condition:
        sys.exit(f"{case}: {what}\n{output}")


def check(arguments, expected_status, expected_reports, stdin=None):
    status, out, err, peak_kib = run(arguments, stdin)
    output = f"exit {status}, peak {peak_kib} KiB\nstdout:\n{out[:4000]}\nstderr:\n{err[:4000]}"
    expect(status == expected_status, f"exit {status}, expected {expected_status}", output)
    expect(peak_kib < CEILING_KIB, f"peak resident {peak_kib} KiB, over the {CEILING_KIB} KiB ceiling", output)
    for report in expected_reports:
        expect(report in out + err, f"no report '{report}'", output)
    return out, err


if case == "summary":
    make_long_line()
    make_zeros()
    make_huge_header()
    out, _ = check(["summary", "--json", "--threads", "2", scratch], 0, [
        f"{LONG_LINE}:2: torn last line (no newline), {LONG_BYTES} bytes, longer than the {BOUND}",
        f"{ZEROS}:1: torn tail at the end ({ZEROS_MIB << 20} bytes of a line cut short, then 0 bytes",
        f"{HUGE_HEADER}:1: bytes [0, {os.path.getsize(HUGE_HEADER)}): corrupt zstd data",
    ])
    expect('"records":1' in out, "the good line is not counted", out)
elif case == "verify":
    make_long_line()
    make_zeros()
    make_huge_header()
    size, zeros, header = (os.path.getsize(path) for path in (LONG_LINE, ZEROS, HUGE_HEADER))
    check(["verify", scratch], 0, [
        f"{os.path.basename(LONG_LINE)}: {size} of {size} bytes claimed by no document (1 whole lines, 1 cut)",
        f"{os.path.basename(ZEROS)}: {zeros} of {zeros} bytes claimed by no document (0 whole lines, 0 cut, "
        "1 torn or undecodable zstd frames)",
        f"{os.path.basename(HUGE_HEADER)}: {header} of {header} bytes claimed by no document (0 whole lines, 0 cut, "
        "1 torn or undecodable zstd frames)",
    ])
elif case == "replay":
    make_long_line()
    with open(LONG_LINE, "rb") as stdin:
        check(["replay", "--output-dir", os.path.join(scratch, "out"), "-"], 0, [
            f"line 2: {LONG_BYTES} bytes, longer than the {BOUND} a line is read for, skipped",
            "read 2, submitted 1",
        ], stdin)
elif case == "join":
    make_long_line()
    attempt = os.path.join(scratch, "attempt")
    os.makedirs(os.path.join(attempt, "request_trace", "2026-01-01T00"))
    os.makedirs(os.path.join(attempt, "perf_metrics"))
    os.rename(LONG_LINE, os.path.join(attempt, "perf_metrics", os.path.basename(LONG_LINE)))
    check(["join", attempt], 1, [f":2: a line longer than {BOUND} bytes"])
else:
    sys.exit(f"no case {case}")

shutil.rmtree(scratch)
