#!/usr/bin/env python3
"""The long soak: a recording server left running as an operator runs one for weeks.

`jsonl-perf serve` (durable perf metrics rotated every minute, the newest 5 kept; durable
request traces) answers `jsonl-perf client` at 200 requests/s for 30 minutes. Every 5 s
the server's anonymous resident memory, open descriptors (and how many are sockets) and
threads are sampled, and the disk each stream holds (written to SCRATCH/samples.json).
Past the warm-up (until retention first deletes a file), the least-squares slope of each
over time is the figure, per hour, beside the spread of the samples about that line (the
noise a slope is judged against). Prints one "name: value unit" line per figure and a
"target ..." line per bound, as tools/bench/run prints them. Not in CI, nor in
tools/bench/run's full runs: it takes half an hour.

  long_soak.py TOOL SCRATCH [--minutes M] [--rate R]

Targets: memory flat within the larger of 1 MiB an hour and twice its spread;
threads and descriptors other than sockets none an hour (within half of one), and
sockets at most one a request the client may keep open, and the listener's; the
perf-metrics directory no larger at the end than at the warm-up's end plus a file
(retention holds it). Request traces are kept by the hour (--trace-keep-hours, longer
than the soak): their disk grows with the requests over it, reported, not judged.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from process_sampler import sample, sockets_and_others  # noqa: E402
from serving import serving, start_client  # noqa: E402

ROTATE_EVERY_S = 60
KEEP_FILES = 5
SAMPLE_EVERY_S = 5
# Until retention first deletes: then the perf-metrics directory holds what it keeps.
WARM_UP_S = (KEEP_FILES + 1) * ROTATE_EVERY_S
# The simulated model's own pace (its default delays: a request takes some hundreds of
# ms), so 200 requests/s keep tens of requests open at once, as a server's do.
IN_FLIGHT = 256


def disk_bytes(directory):
    total = 0
    for root, _, files in os.walk(directory):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except FileNotFoundError:
                pass
    return total


def fit(points):
    """Least-squares slope of y over x, and the spread (root mean square) about the line."""
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    sxx = sum((x - mean_x) ** 2 for x, _ in points)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / sxx if sxx else 0.0
    spread = (sum((y - mean_y - slope * (x - mean_x)) ** 2 for x, y in points) / n) ** 0.5
    return slope, spread


def soak(tool, scratch, seconds, rate):
    samples = []
    with serving(tool, scratch, ["--durable-perf-metrics", "--perf-rotate-seconds", str(ROTATE_EVERY_S),
                                 "--perf-keep-files", str(KEEP_FILES)],
                 stderr=subprocess.DEVNULL, stop_timeout=120) as (server, url):
        results = os.path.join(scratch, "client.json")
        client = start_client(tool, url, rate, seconds + 5, IN_FLIGHT, results)
        start = time.monotonic()
        while (elapsed := time.monotonic() - start) < seconds:
            taken = sample(server.pid)
            kinds = sockets_and_others(server.pid)
            if taken is None or kinds is None:
                sys.exit("long_soak: the server ended early")
            samples.append((elapsed, *taken, disk_bytes(os.path.join(scratch, "perf_metrics")),
                            disk_bytes(os.path.join(scratch, "request_trace")), *kinds))
            time.sleep(SAMPLE_EVERY_S)
        client.wait(timeout=120)
        with open(results) as file:
            outcomes = [request["outcome"] for request in json.load(file)["requests"]]
    return samples, outcomes


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("tool")
    parser.add_argument("scratch")
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--rate", type=float, default=200)
    args = parser.parse_args()
    shutil.rmtree(args.scratch, ignore_errors=True)
    os.makedirs(args.scratch)
    samples, outcomes = soak(args.tool, args.scratch, args.minutes * 60, args.rate)
    with open(os.path.join(args.scratch, "samples.json"), "w") as file:
        json.dump({"columns": ["seconds", "anon_kib", "descriptors", "threads", "perf_metrics_bytes",
                               "request_trace_bytes", "sockets", "other_descriptors"], "samples": samples}, file)
    warm = [s for s in samples if s[0] >= WARM_UP_S]
    hours = [(s[0] / 3600, s) for s in warm]
    print(f"long_soak_minutes: {args.minutes:g} min")
    print(f"long_soak_requests_answered: {outcomes.count('ok')} requests")
    print(f"long_soak_requests_not_sent: {outcomes.count('unsent')} requests")
    print(f"long_soak_requests_failed: {len(outcomes) - outcomes.count('ok') - outcomes.count('unsent')} requests")
    memory, memory_spread = fit([(h, s[1] / 1024) for h, s in hours])
    # Sockets are the client's connections, which it opens as more requests are open at
    # once than ever before and keeps: a high water that rises through the soak, judged
    # against its bound. A leak of the server's own shows in the other descriptors.
    descriptors, _ = fit([(h, s[7]) for h, s in hours])
    most_sockets = max(s[6] for s in samples)
    threads, _ = fit([(h, s[3]) for h, s in hours])
    traces, _ = fit([(h, s[5] / 2**20) for h, s in hours])
    perf_growth = (warm[-1][4] - warm[0][4]) / 2**20
    print(f"long_soak_anon_memory_at_warm_up_end: {warm[0][1] / 1024:.6g} MiB")
    print(f"long_soak_anon_memory_slope: {memory:.6g} MiB/h")
    print(f"long_soak_anon_memory_spread: {memory_spread:.6g} MiB")
    print(f"long_soak_sockets_at_warm_up_end: {warm[0][6]} sockets")
    print(f"long_soak_sockets_most: {most_sockets} sockets")
    print(f"long_soak_descriptors_other_than_sockets_slope: {descriptors:.6g} /h")
    print(f"long_soak_threads_slope: {threads:.6g} /h")
    print(f"long_soak_perf_metrics_disk_at_warm_up_end: {warm[0][4] / 2**20:.6g} MiB")
    print(f"long_soak_perf_metrics_disk_growth_after_warm_up: {perf_growth:.6g} MiB")
    print(f"long_soak_request_trace_disk_slope: {traces:.6g} MiB/h")
    memory_bound = max(1.0, 2 * memory_spread)
    print(f"target long_soak_anon_memory_flat: {'PASS' if abs(memory) <= memory_bound else 'FAIL'} "
          f"({memory:.3g} MiB/h, bound {memory_bound:.3g})")
    flat = abs(descriptors) <= 0.5 and abs(threads) <= 0.5
    print(f"target long_soak_descriptors_and_threads_flat: {'PASS' if flat else 'FAIL'} "
          f"({descriptors:.3g} and {threads:.3g} /h)")
    print(f"target long_soak_sockets_within_the_clients_connections: "
          f"{'PASS' if most_sockets <= IN_FLIGHT + 1 else 'FAIL'} ({most_sockets}, bound {IN_FLIGHT + 1})")
    file_bytes = warm[0][4] / KEEP_FILES
    print(f"target long_soak_perf_metrics_disk_held_by_retention: "
          f"{'PASS' if perf_growth * 2**20 <= file_bytes * 1.5 else 'FAIL'} "
          f"({perf_growth:.3g} MiB grown, a file {file_bytes / 2**20:.3g} MiB)")


if __name__ == "__main__":
    main()
