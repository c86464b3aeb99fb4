#!/usr/bin/env python3
"""The memory soak of tools/bench/run: every writer kind left running at a realistic rate.

`jsonl-perf loadgen` writes at a fixed rate for minutes, once per writer kind: perf
metrics (typed records), and request traces plain, durable and zstd-compressed (two
files an hour, as a server's). Its anonymous resident memory (heap and stacks) is sampled
every second; past the warm-up, the least-squares slope of it over records written is
the figure, in KiB per million records. A writer whose buffers are bounded holds it at
about zero (the allocator's arenas still settle by some KiB); one that keeps its texts,
as this one once did, grows by GiB a million. Prints one "name: value
unit" line per figure and a "target ..." line per kind, as tools/bench/run reads them.

  memory_soak.py TOOL SCRATCH [--quick]
"""
import argparse
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from process_sampler import watch  # noqa: E402

RATE = 2000  # records/s: a busy server's request traces, two records a request
SECONDS, QUICK_SECONDS = 60, 4
WARM_UP_SHARE = 0.2
# The slope allowed: 8 MiB for each million records, eight bytes a record; a larger
# round than any before grows the texts' high-water (bounded) in steps of some KiB.
TARGET_KIB_PER_MILLION = 8192

KINDS = [
    ("perf_metrics", ["--config", "perf-metrics", "--durability", "off"]),
    ("request_trace", ["--config", "request-trace", "--durability", "off"]),
    ("request_trace_durable", ["--config", "request-trace", "--durability", "on"]),
    ("request_trace_zstd", ["--config", "request-trace", "--durability", "on", "--compression", "zstd"]),
]


def slope(points):
    """Least-squares slope of y over x."""
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread if spread else 0.0


def soak(tool, scratch, name, flags, seconds):
    output = os.path.join(scratch, name)
    process = subprocess.Popen([tool, "loadgen", "--rate", str(RATE), "--duration", str(seconds + 1),
                                "--output-dir", output, *flags], stdout=subprocess.DEVNULL)
    samples = watch(process.pid, seconds, 1.0)
    process.wait(timeout=120)
    shutil.rmtree(output, ignore_errors=True)
    warm = [(t * RATE / 1e6, rss) for t, rss, _, _ in samples if t >= seconds * WARM_UP_SHARE]
    if len(warm) < 3:
        print(f"memory_soak_{name}: too few samples ({len(samples)})", file=sys.stderr)
        return
    per_million = slope(warm)
    print(f"memory_soak_{name}_rss_after_warm_up: {warm[0][1] / 1024:.4g} MiB")
    print(f"memory_soak_{name}_rss_at_end: {warm[-1][1] / 1024:.4g} MiB")
    print(f"memory_soak_{name}_slope: {per_million:.4g} KiB/million_records")
    verdict = "PASS" if per_million <= TARGET_KIB_PER_MILLION else "FAIL"
    print(f"target memory_soak_{name}_slope_at_most_8MiB_per_million: {verdict} ({per_million:.4g} KiB)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("tool")
    parser.add_argument("scratch")
    parser.add_argument("--quick", action="store_true")
    arguments = parser.parse_args()
    os.makedirs(arguments.scratch, exist_ok=True)
    for name, flags in KINDS:
        soak(arguments.tool, arguments.scratch, name, flags, QUICK_SECONDS if arguments.quick else SECONDS)


if __name__ == "__main__":
    main()
