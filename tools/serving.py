"""A `jsonl-perf serve` on loopback and a `jsonl-perf client` against it, started as the
checks that load a server (tests/jsonl_perf, tests/prometheus) and the long soak of
tools/bench/run start them: the server on a port the system picks, the client bounded
in rate, duration and requests open at once."""
import contextlib
import subprocess

# The simulated model answers at once: what the server spends is its own and its
# recording's.
MODEL_WITHOUT_DELAYS = ["--queue-ms", "const:0", "--ttft-ms", "const:0", "--itl-ms", "const:0"]


@contextlib.contextmanager
def serving(tool, scratch, flags, stderr=None, stop_timeout=60):
    """Runs `tool serve` on 127.0.0.1 writing under `scratch`, with `flags`. Yields the
    process and the URL it printed (empty if it printed none); on leaving, terminates it
    and waits for it to exit."""
    server = subprocess.Popen(
        [tool, "serve", "--host", "127.0.0.1", "--port", "0", "--output-dir", scratch, *flags],
        stdout=subprocess.PIPE, stderr=stderr, text=True)
    try:
        yield server, server.stdout.readline().strip().removeprefix("listening on ")
    finally:
        server.terminate()
        server.wait(timeout=stop_timeout)


def start_client(tool, url, rate, seconds, in_flight, results):
    """Starts `tool client` against `url`: requests of 16 tokens, `rate` a second for
    `seconds`, at most `in_flight` open and each given 10 s; it writes what became of
    each to `results` (JSON)."""
    return subprocess.Popen(
        [tool, "client", "--url", url, "--max-tokens", "16", "--timeout", "10", "--rate", str(rate),
         "--duration", str(seconds), "--max-in-flight", str(in_flight), "--json-output", results],
        stdout=subprocess.DEVNULL)
