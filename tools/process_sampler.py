"""What a running process holds, read from /proc: anonymous resident memory (its heap and
stacks: what a leak grows, without the pages of the program and its libraries that are
read in as new code runs), open descriptors and threads, sampled over time. Shared by the held-steady checks (tests/jsonl_perf) and the
memory soak of tools/bench/run."""
import os
import time


def sample(pid):
    """(anonymous resident KiB, open descriptors, threads) of `pid`, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            fields = dict(line.split(":", 1) for line in status if ":" in line)
        descriptors = len(os.listdir(f"/proc/{pid}/fd"))
    except (FileNotFoundError, ProcessLookupError):
        return None
    return int(fields["RssAnon"].split()[0]), descriptors, int(fields["Threads"])


def sockets_and_others(pid):
    """(sockets, other descriptors) among `pid`'s open descriptors, from one listing, or
    None once it is gone."""
    try:
        descriptors = os.listdir(f"/proc/{pid}/fd")
    except (FileNotFoundError, ProcessLookupError):
        return None
    sockets = others = 0
    for fd in descriptors:
        try:
            is_socket = os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
        except FileNotFoundError:
            continue  # closed since it was listed
        sockets += is_socket
        others += not is_socket
    return sockets, others


def watch(pid, seconds, every):
    """Samples of `pid` every `every` seconds for `seconds`, or until it ends: each
    (seconds since the first, anonymous resident KiB, descriptors, threads)."""
    samples = []
    start = time.monotonic()
    while (elapsed := time.monotonic() - start) < seconds:
        taken = sample(pid)
        if taken is None:
            break
        samples.append((elapsed, *taken))
        time.sleep(every)
    return samples
