#!/usr/bin/env python3
"""The serve section of tools/bench/run: what recording costs a server.

The aggregated server (`jsonl-perf serve`, zero simulated model time, so that its own
work is what is measured) is driven over loopback by the open-loop client with streamed
chat completions of 16 tokens. The client runs on core 0, the server and its writers'
threads on core 1. Variants, each a flag of the same server:

  off                   (a) recording off
  off_control           (b) recording off again: its spread against (a) is the noise
  writers               (c) this project's writers, traces not durable
  writers_durable       (d) as (c) with durable traces, as the reference runs them
  writers_durable_zstd  (e) as (d) with zstd
  spdlog                (f) the same lines serialized on the request thread and handed
                            to spdlog's async logger (overrun oldest, no fsync)
  floor                 (g) the same lines made by the writers' own formats and written
                            by the request's thread, 16 a write per file: nothing handed
                            over, no books; the least any recording of these bytes costs
                            this server, which (c) is set beside
  floor_durable         (h) as (g), each batch of trace lines fdatasync()ed before it
                            counts: (d)'s floor

For each: the highest offered rate held (every request answered, client p99 under
50 ms, no record lost: the server's accounting line at exit counts its writers' drops,
or spdlog's overruns; in one of two tries), found on a grid of steps of 2% of (a)'s
(roughly: a coarse search first), all variants bisecting side by side; at 70% of (a)'s
highest rate, the client's p50 and p99 and the server's CPU time per request (every
thread's /proc/<pid>/task/<tid>/schedstat), and the records the recording lost there;
at 35% of it, where the server's core is not yet saturated, the CPU time per request
again, the recording's cost in the one figure that does not follow the machine's
saturation (past it, a server's CPU time per request falls as its events batch, and
every figure swings with the machine), and the writers' own threads' share of it; and
at 100 requests/s, a GPU server's rate, the same two; and at 100 and 500 requests/s the
client's p99 beside off's, where the server's core still has room and a lump of the
writers' work would show in the tail. Beside them, the same records
written in a loop (jsonl-bench request_records: one served request's perf record,
request line and response line, through the same recording layer): what the writers'
threads cost a request away from a server. Prints one "name: value unit"
line per figure, ratios to (a) beside (b)'s, and a "target ..." line per target, as
tools/bench/run reads them.

  serve_cost.py TOOL BENCH [--quick] [--runs N]
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile

VARIANTS = [
    ("off", ["--recording", "off"]),
    ("off_control", ["--recording", "off"]),
    ("writers", ["--recording", "on", "--durable-traces", "off"]),
    ("writers_durable", ["--recording", "on", "--durable-traces", "on"]),
    ("writers_durable_zstd", ["--recording", "on", "--durable-traces", "on", "--compression", "zstd"]),
    ("spdlog", ["--recording", "spdlog"]),
    ("floor", ["--recording", "floor", "--durable-traces", "off"]),
    ("floor_durable", ["--recording", "floor", "--durable-traces", "on"]),
]
P99_BOUND_MS = 50.0
MAX_PROBES_UP = 12
CLIENT_CORE, SERVER_CORE = "0", "1"
WRITER_THREAD = "jsonl-writer"  # what the recording layer names its writers' threads
SLOW_RATE = 100  # requests/s: a GPU server's
MID_RATE = 500  # requests/s: a busy GPU server's, where a commit carries the hold's quarter second
TAIL_PROBES = ((SLOW_RATE, "slow_"), (MID_RATE, "mid_"))  # the rates whose p99 is judged, and their figures' prefix


def thread_cpu_ns(pid):
    """Each live thread's CPU time (ns, /proc/<pid>/task/<tid>/schedstat) and name."""
    threads = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as stat, open(f"/proc/{pid}/task/{tid}/comm") as comm:
                threads[tid] = (comm.read().strip(), int(stat.read().split()[0]))
        except OSError:  # it ended meanwhile
            pass
    return threads


def cpu_spent_ns(before, after, name=None):
    """CPU time the threads (named `name`, or all) spent between two thread_cpu_ns."""
    return sum(ns - before.get(tid, ("", 0))[1] for tid, (comm, ns) in after.items() if name in (None, comm))


def records_lost(log):
    """The records the server's recording lost, from its accounting line at exit: the
    writers' "dropped N" (and "unknown N"), or spdlog's "N overrun"."""
    with open(log) as file:
        text = file.read()
    counts = re.findall(r"(?:dropped|unknown) (\d+)|(\d+) overrun", text)
    return sum(int(a or b) for a, b in counts)


def percentile(values, p):
    values = sorted(values)
    rank = max(1, -(-len(values) * p // 100))
    return values[int(rank) - 1]


class Probe:
    """One server run at one offered rate: its latency and CPU figures."""

    def __init__(self, tool, flags, rate, seconds, scratch):
        self.held = False
        output = tempfile.mkdtemp(dir=scratch)
        results = output + ".client.json"
        log = output + ".log"
        server = subprocess.Popen(
            ["taskset", "-c", SERVER_CORE, tool, "serve", "--port", "0", "--output-dir", output,
             "--queue-ms", "const:0", "--ttft-ms", "const:0", "--itl-ms", "const:0", *flags],
            stdout=subprocess.PIPE, stderr=open(log, "w"), text=True)
        try:
            url = server.stdout.readline().strip().removeprefix("listening on ")
            client = [tool, "client", "--url", url, "--max-tokens", "16", "--timeout", "10"]
            # Warm: connections, the writers' files and buffers.
            subprocess.run(["taskset", "-c", CLIENT_CORE, *client, "--rate", str(max(rate / 4, 50)), "--duration", "1"],
                           stdout=subprocess.DEVNULL, check=False)
            before = thread_cpu_ns(server.pid)
            subprocess.run(["taskset", "-c", CLIENT_CORE, *client, "--rate", str(rate), "--duration", str(seconds),
                            "--json-output", results], stdout=subprocess.DEVNULL, check=False)
            after = thread_cpu_ns(server.pid)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=60)
            subprocess.run(["rm", "-rf", output], check=False)
        with open(results) as file:
            requests = json.load(file)["requests"]
        latencies = [r["e2e_ms"] for r in requests if r["outcome"] == "ok"]
        self.answered = len(latencies) == len(requests)
        self.p50 = percentile(latencies, 50) if latencies else float("inf")
        self.p99 = percentile(latencies, 99) if self.answered else float("inf")
        self.cpu_us = cpu_spent_ns(before, after) / len(requests) / 1e3
        self.writers_cpu_us = cpu_spent_ns(before, after, WRITER_THREAD) / len(requests) / 1e3
        self.lost = records_lost(log)
        self.held = self.answered and self.p99 < P99_BOUND_MS and self.lost == 0


def highest_rate(tool, flags, grid_step, first_index, seconds, scratch):
    """The highest multiple of grid_step held: bisection between a held and a failed index."""
    held, failed = 0, None
    index = first_index
    # Up from the first guess until a rate fails, at most MAX_PROBES_UP probes: a server
    # that held them all is reported at the last rate held.
    for _ in range(MAX_PROBES_UP):
        if not Probe(tool, flags, index * grid_step, seconds, scratch).held:
            failed = index
            break
        held, index = index, index * 3 // 2 + 1
    if failed is None:
        return held * grid_step
    while failed - held > 1:
        middle = (held + failed) // 2
        if Probe(tool, flags, middle * grid_step, seconds, scratch).held:
            held = middle
        else:
            failed = middle
    return held * grid_step


def holds(tool, flags, rate, seconds, scratch):
    """Whether a rate is held in one of two tries: a single stall of the shared machine
    (an fsync's writeback, a neighbour) does not decide a step alone."""
    return any(Probe(tool, flags, rate, seconds, scratch).held for _ in range(2))


def highest_rates(tool, grid_step, top_index, seconds, scratch):
    """Each variant's highest multiple of grid_step held, up to top_index steps: one
    bisection per variant, run side by side, a probe of each variant per round, so that
    a slow stretch of the machine falls on every variant alike."""
    held = {name: 0 for name, _ in VARIANTS}
    failed = {name: top_index + 1 for name, _ in VARIANTS}
    while any(failed[name] - held[name] > 1 for name in held):
        for name, flags in VARIANTS:
            if failed[name] - held[name] > 1:
                middle = (held[name] + failed[name]) // 2
                if holds(tool, flags, middle * grid_step, seconds, scratch):
                    held[name] = middle
                else:
                    failed[name] = middle
    return {name: index * grid_step for name, index in held.items()}


def measure_at(tool, load, seconds, scratch, figures, prefix):
    """Each variant once at `load` requests/s, interleaved; its figures under `prefix`."""
    for name, flags in VARIANTS:
        probe = Probe(tool, flags, load, seconds, scratch)
        figures[name].update({prefix + "p50": probe.p50, prefix + "p99": probe.p99, prefix + "cpu": probe.cpu_us,
                              prefix + "writers_cpu": probe.writers_cpu_us, prefix + "lost": probe.lost})


def loop_figures(bench, quick, scratch):
    """jsonl-bench request_records: its figures by name, its lines passed on."""
    run = subprocess.run([bench, "request_records", "--disk", scratch, *(["--quick"] if quick else [])],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=False)
    print(run.stdout, end="")
    return {m[1]: float(m[2]) for m in re.finditer(r"^(\w+): ([-+0-9.eE]+) ", run.stdout, re.M)}


def one_run(tool, quick, scratch):
    if quick:  # that every variant runs: one short probe each at a light load, no search
        figures = {name: {} for name, _ in VARIANTS}
        measure_at(tool, 500, 1, scratch, figures, "")
        for name in figures:
            figures[name]["rate"] = 500
            figures[name].update({"light_" + key: value for key, value in list(figures[name].items())})
        measure_at(tool, SLOW_RATE, 1, scratch, figures, "slow_")
        for name in figures:
            figures[name].update({"mid_" + key: value for key, value in list(figures[name].items())
                                  if not key.startswith(("light_", "slow_", "rate"))})
        return 500, figures
    seconds = 5
    # A coarse estimate of (a)'s highest rate, then every variant on a grid of 2% of it
    # (up to 125%).
    coarse = max(highest_rate(tool, VARIANTS[0][1], 250, 4, seconds, scratch), 250)
    rates = highest_rates(tool, 0.02 * coarse, 62, seconds, scratch)
    figures = {name: {"rate": rate} for name, rate in rates.items()}
    load = 0.7 * figures["off"]["rate"]
    measure_at(tool, load, seconds, scratch, figures, "")
    measure_at(tool, load / 2, seconds, scratch, figures, "light_")
    # At a GPU server's rate every request's records may pay a whole commit: what a
    # wake-up of the writers costs shows here, not at the rates above.
    measure_at(tool, SLOW_RATE, 2 * seconds, scratch, figures, "slow_")
    measure_at(tool, MID_RATE, 2 * seconds, scratch, figures, "mid_")
    return load, figures


def report(load, figures, loop):
    base = figures["off"]
    base = {key: max(value, 1e-9) for key, value in base.items() if not key.endswith("lost")}
    # The light load's CPU baseline: the mean of (a) and (b), both measured in the run.
    light_cpu = (base["light_cpu"] + figures["off_control"]["light_cpu"]) / 2
    slow_cpu = (base["slow_cpu"] + figures["off_control"]["slow_cpu"]) / 2
    print(f"serve_load_70pct: {load:.6g} requests/s")
    print(f"serve_load_35pct: {load / 2:.6g} requests/s")
    for name, _ in VARIANTS:
        f = figures[name]
        print(f"serve_highest_rate_{name}: {f['rate']:.6g} requests/s")
        print(f"serve_70pct_p50_{name}: {f['p50']:.6g} ms")
        print(f"serve_70pct_p99_{name}: {f['p99']:.6g} ms")
        print(f"serve_70pct_cpu_per_request_{name}: {f['cpu']:.6g} us")
        print(f"serve_70pct_records_lost_{name}: {f['lost']} records")
        print(f"serve_35pct_p99_{name}: {f['light_p99']:.6g} ms")
        print(f"serve_35pct_cpu_per_request_{name}: {f['light_cpu']:.6g} us")
        print(f"serve_35pct_records_lost_{name}: {f['light_lost']} records")
        print(f"serve_35pct_cpu_ratio_{name}_to_off: {f['light_cpu'] / light_cpu:.6g} x")
        print(f"serve_35pct_writer_threads_cpu_per_request_{name}: {f['light_writers_cpu']:.6g} us")
        print(f"serve_{SLOW_RATE}rps_cpu_per_request_{name}: {f['slow_cpu']:.6g} us")
        print(f"serve_{SLOW_RATE}rps_writer_threads_cpu_per_request_{name}: {f['slow_writers_cpu']:.6g} us")
        print(f"serve_{SLOW_RATE}rps_records_lost_{name}: {f['slow_lost']} records")
        print(f"serve_{SLOW_RATE}rps_cpu_ratio_{name}_to_off: {f['slow_cpu'] / slow_cpu:.6g} x")
        print(f"serve_{MID_RATE}rps_records_lost_{name}: {f['mid_lost']} records")
        for rate, prefix in TAIL_PROBES:
            print(f"serve_{rate}rps_p99_{name}: {f[prefix + 'p99']:.6g} ms")
            if name != "off":
                print(f"serve_{rate}rps_p99_ratio_{name}_to_off: {f[prefix + 'p99'] / base[prefix + 'p99']:.6g} x")
        if name != "off":
            print(f"serve_highest_rate_ratio_{name}_to_off: {f['rate'] / base['rate']:.6g} x")
            print(f"serve_70pct_p99_ratio_{name}_to_off: {f['p99'] / base['p99']:.6g} x")
            print(f"serve_70pct_cpu_ratio_{name}_to_off: {f['cpu'] / base['cpu']:.6g} x")

    # Against the floor in the same run: what the writers add to the least work these
    # bytes take on this server (durable traces: against the floor that syncs them).
    floor_of = {"writers": "floor", "writers_durable": "floor_durable"}
    for name, against in floor_of.items():
        f, floor = figures[name], figures[against]
        print(f"serve_35pct_cpu_ratio_{name}_to_{against}: {f['light_cpu'] / max(floor['light_cpu'], 1e-9):.6g} x")
        print(f"serve_{SLOW_RATE}rps_cpu_ratio_{name}_to_{against}: {f['slow_cpu'] / max(floor['slow_cpu'], 1e-9):.6g} x")
        print(f"serve_highest_rate_ratio_{name}_to_{against}: {f['rate'] / max(floor['rate'], 1e-9):.6g} x")

    def verdict(name, held, detail):
        print(f"target {name}: {'PASS' if held else 'FAIL'} ({detail})")

    # The cost of recording as a ratio of CPU time per request below saturation, against
    # (a) and (b) together; each bound is held with margin, so that a FAIL is a regression.
    for name, bound in (("writers", 1.5), ("writers_durable", 1.6)):
        f = figures[name]
        ratio = f["light_cpu"] / light_cpu
        verdict(f"serve_{name}_35pct_cpu_per_request_at_most_{bound}x_off", ratio <= bound and f["light_lost"] == 0,
                f"{ratio:.3g}x, {f['light_lost']} records lost")
    # Against spdlog's async logger fed the same lines, on the same figure. The highest
    # rate and the p99 at 70% are printed beside it, not judged: there the server's core
    # is saturated and both swing with the machine (either side ahead by a fifth, run to
    # run).
    writers, peer = figures["writers"], figures["spdlog"]
    ratio = writers["light_cpu"] / max(peer["light_cpu"], 1e-9)
    verdict("serve_writers_35pct_cpu_per_request_at_most_1.1x_spdlog", ratio <= 1.1,
            f"{writers['light_cpu']:.0f} against {peer['light_cpu']:.0f} us, {ratio:.3g}x")
    # Recording a server does not feel: the bounds a server's owner would not notice.
    spread = figures["off_control"]["light_cpu"] / base["light_cpu"]
    for name, bound in (("writers", 1.03), ("writers_durable", 1.05)):
        ratio = figures[name]["light_cpu"] / light_cpu
        verdict(f"serve_{name}_35pct_cpu_per_request_at_most_{bound}x_off", ratio <= bound,
                f"{ratio:.3g}x, off_control {spread:.3g}x off")
    added, peer_added = writers["light_cpu"] - light_cpu, peer["light_cpu"] - light_cpu
    verdict("serve_writers_35pct_added_cpu_at_most_0.5x_spdlogs", added <= 0.5 * max(peer_added, 0),
            f"{added:.0f} against {peer_added:.0f} us")
    for name, bound in (("writers", 0.97), ("writers_durable", 0.95)):
        ratio = figures[name]["rate"] / base["rate"]
        verdict(f"serve_{name}_highest_rate_at_least_{bound}x_off", ratio >= bound,
                f"{ratio:.3g}x, off_control {figures['off_control']['rate'] / base['rate']:.3g}x")
    share = writers["slow_writers_cpu"] / slow_cpu
    verdict(f"serve_writers_{SLOW_RATE}rps_writer_threads_at_most_5pct_of_off", share <= 0.05,
            f"{writers['slow_writers_cpu']:.0f} us, {100 * share:.3g}% of {slow_cpu:.0f} us")
    ratio = writers["slow_cpu"] / slow_cpu
    verdict(f"serve_writers_{SLOW_RATE}rps_cpu_per_request_at_most_1.07x_off", ratio <= 1.07, f"{ratio:.3g}x")
    # Recording does not put lumps in a lightly loaded server's tail: the writers' rounds
    # share the server's core with its request threads, at the server's priority.
    for rate, prefix in TAIL_PROBES:
        for name in ("writers", "writers_durable"):
            ratio = figures[name][prefix + "p99"] / base[prefix + "p99"]
            verdict(f"serve_{name}_{rate}rps_p99_at_most_1.5x_off", ratio <= 1.5,
                    f"{figures[name][prefix + 'p99']:.3g} against {base[prefix + 'p99']:.3g} ms, {ratio:.3g}x, "
                    f"off_control {figures['off_control'][prefix + 'p99'] / base[prefix + 'p99']:.3g}x")
    # The same bounds against the floors: what the writers add to the least work the
    # same bytes take on this server, where off leaves the bytes' own cost in the ratio.
    for name, bound in (("writers", 1.03), ("writers_durable", 1.05)):
        floor = figures[floor_of[name]]
        ratio = figures[name]["light_cpu"] / max(floor["light_cpu"], 1e-9)
        verdict(f"serve_{name}_35pct_cpu_per_request_at_most_{bound}x_{floor_of[name]}", ratio <= bound,
                f"{ratio:.3g}x, the floor {floor['light_cpu'] / light_cpu:.3g}x off")
    floor = figures["floor"]
    ratio = writers["slow_cpu"] / max(floor["slow_cpu"], 1e-9)
    verdict(f"serve_writers_{SLOW_RATE}rps_cpu_per_request_at_most_1.07x_floor", ratio <= 1.07,
            f"{ratio:.3g}x, the floor {floor['slow_cpu'] / slow_cpu:.3g}x off")
    lost = sum(f[key] for f in figures.values() for key in ("lost", "light_lost", "slow_lost", "mid_lost"))
    verdict("serve_no_record_lost", lost == 0, f"{lost} records lost")
    # The writers' threads in a server against the same records written in a loop.
    to_loop = {}
    for name, figure in (("writers", "request_records_loop_writer_threads_cpu_per_request"),
                         ("writers_durable", "request_records_loop_durable_writer_threads_cpu_per_request")):
        to_loop[name] = figures[name]["light_writers_cpu"] / max(loop.get(figure, float("inf")), 1e-9)
        print(f"serve_35pct_writer_threads_ratio_{name}_to_loop: {to_loop[name]:.6g} x")
    verdict("serve_writers_35pct_writer_threads_at_most_1.5x_loop", to_loop["writers"] <= 1.5,
            f"{writers['light_writers_cpu']:.0f} us, {to_loop['writers']:.3g}x the loop's")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("tool")
    parser.add_argument("bench")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    if len(os.sched_getaffinity(0)) < 2:
        print("serve section: needs two cores (client and server pinned apart)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as scratch:
        for run in range(args.runs):
            if args.runs > 1:
                print(f"== serve run {run + 1} of {args.runs}")
            loop = loop_figures(args.bench, args.quick, scratch)
            report(*one_run(args.tool, args.quick, scratch), loop)
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
