"""Reads a loadgen run's Prometheus exposition with prometheus_client's own parser and
checks it against the run: the files it wrote and the summary it printed.

    check_metrics.py METRICS_FILE OUTPUT_DIR WRITTEN ROTATE_BYTES
"""
import glob
import os
import sys

from prometheus_client.parser import text_string_to_metric_families

metrics_file, output_dir, written, rotate_bytes = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with open(metrics_file, encoding="utf-8") as f:
    families = {family.name: family for family in text_string_to_metric_families(f.read())}


def fail(message):
    sys.exit(f"check_metrics: {message}")


expected_types = {
    "jsonl_records_submitted": "counter",
    "jsonl_records_written": "counter",
    "jsonl_records_dropped": "counter",
    "jsonl_records_sanitized": "counter",
    "jsonl_lines_written": "counter",
    "jsonl_bytes_written": "counter",
    "jsonl_appends": "counter",
    "jsonl_files_started": "counter",
    "jsonl_directories_recreated": "counter",
    "jsonl_queue_depth": "gauge",
    "jsonl_submits_waiting_for_room": "gauge",
    "jsonl_last_append_timestamp_seconds": "gauge",
}
for name, kind in expected_types.items():
    if name not in families:
        fail(f"no family {name}; got {sorted(families)}")
    if families[name].type != kind:
        fail(f"{name} is a {families[name].type}, expected {kind}")
    if not families[name].documentation:
        fail(f"{name} has no HELP")


def value(name, **labels):
    matches = [s.value for s in families[name].samples
               if all(s.labels.get(k) == v for k, v in labels.items())]
    if len(matches) != 1:
        fail(f"{len(matches)} samples of {name} with {labels}")
    return matches[0]


for family in families.values():
    for sample in family.samples:
        if sample.labels.get("subject") != "performance metrics" or sample.labels.get("server_kind") != "server":
            fail(f"unexpected labels {sample.labels} on {sample.name}")

files = sorted(glob.glob(os.path.join(output_dir, "perf_metrics-server-*.jsonl")))
lines = 0
for path in files:
    size = os.path.getsize(path)
    if size > rotate_bytes:
        fail(f"{path} holds {size} bytes, past the rotation limit {rotate_bytes}")
    with open(path, "rb") as f:
        lines += f.read().count(b"\n")

reasons = ["queue_full", "malformed", "serialize_error", "write_error", "unexpected_write", "abandoned", "ignored"]
dropped = sum(value("jsonl_records_dropped", reason=r) for r in reasons)
checks = {
    "written as the summary says": value("jsonl_records_written") == written,
    "written as the files hold": value("jsonl_lines_written") == lines == written,
    "submitted = written + dropped": value("jsonl_records_submitted") == written + dropped,
    "one file started per file on disk": value("jsonl_files_started") == len(files) > 1,
    "bytes as the files hold": value("jsonl_bytes_written") == sum(os.path.getsize(p) for p in files),
    "a last append time": value("jsonl_last_append_timestamp_seconds") > 1.7e9,
}
for check, ok in checks.items():
    if not ok:
        fail(f"{check}: no")
print(f"check_metrics: {len(families)} families, {len(files)} files, {lines} lines: all agree")
