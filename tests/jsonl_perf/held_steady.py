"""A recording process left running holds steady: after a warm-up, its resident memory
(anonymous: heap and stacks), open descriptors and threads grow no further than a small
slack while the load goes on.

    held_steady.py CASE TOOL SCRATCH

CASE is one of:
  loadgen_request_trace  `jsonl-perf loadgen --config request-trace` at a fixed rate
  serve_plain            `jsonl-perf serve` (traces not durable) driven by its client
  serve_durable          the same with durable traces
  serve_zstd             the same with durable, zstd-compressed traces

The process is sampled from /proc every half second. Exits 1 naming what grew, with the
samples.

Under a sanitizer (its options in the environment, as the asan and tsan presets set
them) the resident set saws: the sanitizer's runtime keeps shadow memory for what the
program touches and hands freed memory back in bulk every several seconds (as
ThreadSanitizer does), so a flat heap reads as a climb of more than the slack followed
by a fall, and how far it falls varies from one fall to the next. There the window is
long enough to hold several falls, and memory is judged peak to peak: the most of the
window's second half against the most of its first. A writer that keeps what it should
free raises the peaks; the release build judges every sample.
"""
import collections
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
from process_sampler import watch  # noqa: E402
from serving import MODEL_WITHOUT_DELAYS, serving, start_client  # noqa: E402

SANITIZED = "TSAN_OPTIONS" in os.environ or "ASAN_OPTIONS" in os.environ
WARM_UP_S = 4.0
MEASURED_S = 60.0 if SANITIZED else 10.0
SAMPLE_EVERY_S = 0.5
LOADGEN_RATE = 2000
SERVE_RATE = 200
# The client keeps at most this many requests open; one due beyond them is counted unsent.
# A server the machine slows (a sanitizer, a busy core) then holds as many connections as
# a fast one does, and what is judged is what it keeps, not how far behind it falls.
SERVE_IN_FLIGHT = 8
# Of the requests sent, how many must be answered: enough that the server ran its load.
SERVE_ANSWERED_AT_LEAST = 100
# What a healthy process may still add after its warm-up: the allocator's arenas
# settling; a backlog larger than any before it while the disk stalls (a durable writer's
# write side takes up to a queue of records, a few MiB of trace lines, whose texts the
# allocator keeps once freed); the connections the client opens while the machine is
# busy (the other tests run beside this one); a helper thread. A writer that keeps its
# texts (some KB a request: 10 MB in the window at the server's rate, 28 MB at loadgen's),
# or a descriptor or thread a request, passes them.
SLACK_RSS_KIB = 6 * 1024
SLACK_DESCRIPTORS = 16
SLACK_THREADS = 1

SERVE_FLAGS = {
    "serve_plain": ["--durable-traces", "off"],
    "serve_durable": ["--durable-traces", "on"],
    "serve_zstd": ["--durable-traces", "on", "--compression", "zstd"],
}


def judge(case, samples):
    warm = [s for s in samples if s[0] >= WARM_UP_S]
    if len(warm) < MEASURED_S / SAMPLE_EVERY_S / 2:
        sys.exit(f"{case}: the process ended after {samples[-1][0] if samples else 0:.1f} s; too few samples")
    failures = []
    for index, (name, slack) in enumerate(
            [("anonymous resident KiB", SLACK_RSS_KIB), ("descriptors", SLACK_DESCRIPTORS), ("threads", SLACK_THREADS)], 1):
        if SANITIZED and index == 1:
            half = len(warm) // 2
            before, after = max(s[index] for s in warm[:half]), max(s[index] for s in warm[half:])
            print(f"{case}: {name} at most {before} in the first half, at most {after} in the second (slack {slack})")
        else:
            before, after = warm[0][index], max(s[index] for s in warm)
            print(f"{case}: {name} {before} after the warm-up, at most {after} after (slack {slack})")
        if after - before > slack:
            failures.append(f"{name} grew from {before} to {after}, past the slack of {slack}")
    if failures:
        table = "\n".join(f"  {t:5.1f} s  rss {r} KiB  fds {d}  threads {n}" for t, r, d, n in samples)
        sys.exit(f"{case}: " + "; ".join(failures) + f"\n{table}")


def loadgen(tool, scratch):
    seconds = WARM_UP_S + MEASURED_S
    process = subprocess.Popen(
        [tool, "loadgen", "--config", "request-trace", "--rate", str(LOADGEN_RATE), "--duration", str(seconds + 2),
         "--durability", "off", "--output-dir", scratch], stdout=subprocess.DEVNULL)
    try:
        samples = watch(process.pid, seconds, SAMPLE_EVERY_S)
    finally:
        if process.wait(timeout=60) != 0:
            sys.exit(f"loadgen exited {process.returncode}")
    return samples


def serve(tool, scratch, flags):
    with serving(tool, scratch, [*MODEL_WITHOUT_DELAYS, "--recording", "on", *flags]) as (server, url):
        seconds = WARM_UP_S + MEASURED_S
        results = os.path.join(scratch, "client.json")
        client = start_client(tool, url, SERVE_RATE, seconds + 2, SERVE_IN_FLIGHT, results)
        samples = watch(server.pid, seconds, SAMPLE_EVERY_S)
        client.wait(timeout=60)
        judge_client(results)
    if server.returncode != 0:
        sys.exit(f"the server exited {server.returncode}")
    return samples


def judge_client(results):
    """Every request the client sent was answered; those it did not send, because the
    server had as many open as it may, are the machine's speed, not a fault."""
    try:
        with open(results) as file:
            outcomes = collections.Counter(request["outcome"] for request in json.load(file)["requests"])
    except (OSError, ValueError, KeyError) as error:
        sys.exit(f"the client's results: {error}")
    failed = {outcome: count for outcome, count in outcomes.items() if outcome not in ("ok", "unsent")}
    if failed or outcomes["ok"] < SERVE_ANSWERED_AT_LEAST:
        sys.exit(f"the client's outcomes: {dict(outcomes)} (every one sent answered, at least "
                 f"{SERVE_ANSWERED_AT_LEAST} of them)")
    print(f"client: {dict(outcomes)}")


def main():
    case, tool, scratch = sys.argv[1:4]
    subprocess.run(["rm", "-rf", scratch], check=True)
    os.makedirs(scratch)
    # Under AddressSanitizer freed blocks wait in its quarantine (up to 256 MiB), which
    # grows the resident set however flat the program's own heap is: what is held here
    # is the program's memory, so the tool runs without one.
    if "ASAN_OPTIONS" in os.environ:
        os.environ["ASAN_OPTIONS"] += ":quarantine_size_mb=0:thread_local_quarantine_size_kb=0"
    if case == "loadgen_request_trace":
        samples = loadgen(tool, scratch)
    elif case in SERVE_FLAGS:
        samples = serve(tool, scratch, SERVE_FLAGS[case])
    else:
        sys.exit(f"unknown case {case!r}: loadgen_request_trace, " + ", ".join(SERVE_FLAGS))
    judge(case, samples)


if __name__ == "__main__":
    main()
