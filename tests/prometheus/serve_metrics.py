"""`jsonl-perf serve`'s /metrics read with prometheus_client's parser: the server's own
families (connections, refusals, requests by route and ending) and both writers'
families, each of its type, with its samples and labels, after one answered request.

    serve_metrics.py TOOL SCRATCH
"""
import json
import os
import shutil
import sys
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
from serving import MODEL_WITHOUT_DELAYS, serving  # noqa: E402

ROUTES = ["/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/messages"]
ENDINGS = ["rejected_400", "completed", "client_disconnected", "error"]
REFUSALS = ["body_too_large", "header_timeout", "body_timeout", "malformed_request"]
WRITERS = ["performance metrics", "request trace"]


def check(families):
    failures = []

    def family(name, kind):
        found = families.get(name)
        if found is None or found.type != kind or not found.documentation:
            failures.append(f"{name}: expected a {kind} with help, got {found}")
            return []
        return found.samples

    def value(samples, **labels):
        matches = [s.value for s in samples if all(s.labels.get(k) == v for k, v in labels.items())]
        return matches[0] if len(matches) == 1 else f"{len(matches)} samples"

    # The request's connection and each scrape's; this scrape's open, the request's maybe.
    accepted = value(family("jsonl_serve_connections", "counter"))
    if not isinstance(accepted, float) or accepted < 2:
        failures.append(f"connections accepted: {accepted}, expected the request's and the scrapes'")
    if value(family("jsonl_serve_connections_open", "gauge")) not in (1.0, 2.0):
        failures.append("connections open: expected this scrape's, and the request's at most")
    refused = family("jsonl_serve_refused", "counter")
    if sorted(s.labels["reason"] for s in refused) != sorted(REFUSALS) or any(s.value for s in refused):
        failures.append(f"refusals: {[(s.labels, s.value) for s in refused]}")
    requests = family("jsonl_serve_requests", "counter")
    pairs = sorted((s.labels["route"], s.labels["status"]) for s in requests)
    if pairs != sorted((route, ending) for route in ROUTES for ending in ENDINGS):
        failures.append(f"requests' routes and endings: {pairs}")
    if value(requests, route=ROUTES[0], status="completed") != 1.0 or sum(s.value for s in requests) != 1.0:
        failures.append(f"requests: {[(s.labels, s.value) for s in requests if s.value]}")
    for name, kind in [("jsonl_records_submitted", "counter"), ("jsonl_records_dropped", "counter"),
                       ("jsonl_queue_depth", "gauge")]:
        samples = family(name, kind)
        subjects = sorted({s.labels.get("subject") for s in samples})
        if subjects != WRITERS or any(s.labels.get("server_kind") != "server" for s in samples):
            failures.append(f"{name}: subjects {subjects}, labels {[s.labels for s in samples][:2]}")
    traced = value(families.get("jsonl_records_submitted").samples if "jsonl_records_submitted" in families else [],
                   subject="request trace")
    if traced != 2.0:  # a request line and a response line
        failures.append(f"trace lines submitted: {traced}, expected 2")
    return failures


def served(tool, scratch, recording, scrape):
    """Runs serve with `--recording`, calls scrape(url); what it returned. The server must
    stop cleanly."""
    with serving(tool, scratch, [*MODEL_WITHOUT_DELAYS, "--recording", recording]) as (server, url):
        if not url.startswith("http://"):
            sys.exit(f"the server did not start: {url!r}")
        result = scrape(url)
    if server.returncode != 0:
        sys.exit(f"the server exited {server.returncode}")
    return result


def metrics(url):
    with urllib.request.urlopen(url + "/metrics", timeout=30) as answer:
        if answer.headers["Content-Type"] != "text/plain; version=0.0.4":
            sys.exit(f"/metrics answered as {answer.headers['Content-Type']}")
        text = answer.read().decode()
    return text, {family.name: family for family in text_string_to_metric_families(text)}


def after_one_request(url):
    body = json.dumps({"model": "simulated-llm", "messages": [{"role": "user", "content": "Say hello."}],
                       "max_tokens": 4}).encode()
    request = urllib.request.Request(url + ROUTES[0], data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        answer.read()
    # The request is counted and its response line submitted once its answer is
    # written, which may be after the client has read it.
    deadline = time.monotonic() + 30
    while True:
        text, families = metrics(url)
        if not check(families) or time.monotonic() > deadline:
            return text, families


def main():
    tool, scratch = sys.argv[1:3]
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    text, families = served(tool, scratch, "on", after_one_request)
    failures = check(families)
    if failures:
        sys.exit("\n".join(failures) + "\n--- /metrics:\n" + text)
    # Recording off, the writers' families have no samples, and are left out.
    text, unrecorded = served(tool, scratch, "off", metrics)
    if sorted(unrecorded) != sorted(name for name in families if name.startswith("jsonl_serve_")):
        sys.exit(f"recording off, /metrics has {sorted(unrecorded)}\n--- /metrics:\n{text}")
    print(f"{len(families)} families read from /metrics, {len(unrecorded)} with recording off")


if __name__ == "__main__":
    main()
