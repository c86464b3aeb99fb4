"""A recording server rotating its perf-metrics file every 2 s and keeping 3, asked to
rotate now by SIGHUP as well, under load: what it holds stays flat after the first
rotations, the files on disk stay within what retention keeps, and every record is
accounted for: written to a file still on disk, or in a file retention deleted and the
books count. The books list the files on disk only, and verify.

    rotation_soak.py TOOL SCRATCH

Memory, descriptors and threads are judged as held_steady.py judges them (its slack, its
window under a sanitizer). Exits 1 naming what failed.
"""
import glob
import json
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
sys.path.insert(0, os.path.dirname(__file__))
from held_steady import judge, judge_client, MEASURED_S, WARM_UP_S, SAMPLE_EVERY_S, SERVE_IN_FLIGHT  # noqa: E402
from process_sampler import sample  # noqa: E402
from serving import MODEL_WITHOUT_DELAYS, serving, start_client  # noqa: E402

ROTATE_EVERY_S = 2
KEEP_FILES = 3
SIGHUP_EVERY_S = 5
SECONDS = WARM_UP_S + max(MEASURED_S, 16.0)
RATE = 200


def fail(message):
    sys.exit(f"rotation_soak: {message}")


def perf_files(directory):
    return glob.glob(os.path.join(directory, "perf_metrics-*.jsonl"))


def soak(tool, scratch):
    """Samples (seconds, anonymous KiB, descriptors, threads) and the most perf files on
    disk at once; the server's log."""
    log_path = os.path.join(scratch, "server.log")
    perf_dir = os.path.join(scratch, "perf_metrics")
    with open(log_path, "w") as log, serving(tool, scratch, [
            *MODEL_WITHOUT_DELAYS, "--durable-perf-metrics", "--perf-rotate-seconds", str(ROTATE_EVERY_S),
            "--perf-keep-files", str(KEEP_FILES),
            # An hour's traces outlive this soak: it checks that retention keeps them.
            "--trace-keep-hours", "1"], stderr=log) as (server, url):
        results = os.path.join(scratch, "client.json")
        client = start_client(tool, url, RATE, SECONDS + 2, SERVE_IN_FLIGHT, results)
        samples, most_files, hangups = [], 0, 0
        start = time.monotonic()
        while (elapsed := time.monotonic() - start) < SECONDS:
            taken = sample(server.pid)
            if taken is None:
                break
            samples.append((elapsed, *taken))
            most_files = max(most_files, len(perf_files(perf_dir)))
            if elapsed >= (hangups + 1) * SIGHUP_EVERY_S:
                server.send_signal(signal.SIGHUP)
                hangups += 1
            time.sleep(SAMPLE_EVERY_S)
        client.wait(timeout=60)
        judge_client(results)
    with open(log_path) as log:
        said = log.read()
    if server.returncode != 0:
        fail(f"the server exited {server.returncode}:\n{said}")
    if said.count("SIGHUP: the perf-metrics file rotates") != hangups:
        fail(f"{hangups} SIGHUPs sent, the log says otherwise:\n{said}")
    return samples, most_files, said, hangups


def account(tool, scratch, said, hangups):
    """Every perf record the server submitted is in a file on disk or in one the books say
    retention deleted; every request trace is written (an hour's retention keeps them); both
    books verify."""
    stopped = re.search(r"perf metrics: submitted (\d+), written (\d+), unknown (\d+), dropped (\d+)", said)
    if not stopped:
        fail(f"no accounting line in the server's log:\n{said}")
    submitted, written, unknown, dropped = map(int, stopped.groups())
    if submitted == 0 or (written, unknown, dropped) != (submitted, 0, 0):
        fail(f"perf metrics: submitted {submitted}, written {written}, unknown {unknown}, dropped {dropped}")
    perf_dir = os.path.join(scratch, "perf_metrics")
    (books_file,) = glob.glob(os.path.join(perf_dir, "_writer", "*.json"))
    with open(books_file) as f:
        books = json.load(f)
    on_disk = 0
    for shard in books["shards"]:
        with open(os.path.join(perf_dir, shard["file"]), "rb") as f:
            lines = f.read().count(b"\n")
        if lines != shard["persisted_records"]:
            fail(f"{shard['file']} holds {lines} lines, its books {shard['persisted_records']}")
        on_disk += lines
    deleted = books["retention"]["records"]
    started = len(books["shards"]) + books["retention"]["files"]
    if books["counts"]["dropped"]["retention"] != deleted or books["deleting"]:
        fail(f"the closed books disagree on what retention deleted: {books['counts']}, {books['retention']}, "
             f"deleting {books['deleting']}")
    if len(books["shards"]) > KEEP_FILES or on_disk + deleted != written:
        fail(f"{len(books['shards'])} files kept, {on_disk} records on disk and {deleted} deleted, of {written} written")
    if len(perf_files(perf_dir)) != len(books["shards"]):
        fail(f"{len(perf_files(perf_dir))} perf-metrics files on disk, the books list {len(books['shards'])}")
    # The reference's reconcile_trace_writers.py: the counts balance, and the shards'
    # records are "persisted".
    counts = books["counts"]
    if counts["submitted"] != counts["persisted"] + sum(counts["dropped"].values()) + counts["unknown"] + \
            counts["pending"] or counts["persisted"] != on_disk:
        fail(f"the reference's reconciler would not balance {counts} with {on_disk} records in the shards")
    # Age rotates only at an append, and the load may pause under a busy machine.
    if started < hangups + int(0.6 * SECONDS / ROTATE_EVERY_S):
        fail(f"{started} files in {SECONDS:.0f} s of rotating every {ROTATE_EVERY_S} s and {hangups} SIGHUPs")
    for directory in (perf_dir, os.path.join(scratch, "request_trace")):
        verified = subprocess.run([tool, "verify", "--json", directory], capture_output=True, text=True)
        report = json.loads(verified.stdout) if verified.returncode == 0 else None
        if not report or not (report["all_books_balance"] and report["all_files_verify"]):
            fail(f"verify of {directory} exited {verified.returncode}:\n{verified.stdout}{verified.stderr}")
    traced = re.search(r"request traces: submitted (\d+), written (\d+), unknown (\d+), dropped (\d+)", said)
    if not traced or int(traced.group(1)) == 0 or traced.group(1) != traced.group(2):
        fail(f"request traces not all written with an hour's retention: {traced and traced.group(0)}")
    print(f"rotation_soak: {started} files started, {len(books['shards'])} kept; {written} records: "
          f"{on_disk} on disk, {deleted} in deleted files")


def main():
    tool, scratch = sys.argv[1:3]
    subprocess.run(["rm", "-rf", scratch], check=True)
    os.makedirs(scratch)
    if "ASAN_OPTIONS" in os.environ:
        os.environ["ASAN_OPTIONS"] += ":quarantine_size_mb=0:thread_local_quarantine_size_kb=0"
    samples, most_files, said, hangups = soak(tool, scratch)
    if most_files > KEEP_FILES + 1:
        fail(f"{most_files} perf-metrics files on disk at once; retention keeps {KEEP_FILES}")
    judge("serve_rotating", samples)
    account(tool, scratch, said, hangups)


if __name__ == "__main__":
    main()
