"""Both expositions of one set of writers, prometheus_text's and prometheus-cpp's
serialization of jsonl.prometheus's collectable, read with prometheus_client's parser:
the same families (names, types, help), each with the same samples (names, labels,
values).

    same_families.py CONSUMER_PROMETHEUS SCRATCH

CONSUMER_PROMETHEUS is examples/consumer/prometheus.cpp built, in this build or against
an installed package.
"""
import math
import os
import shutil
import subprocess
import sys

from prometheus_client.parser import text_string_to_metric_families

# What the writers expose, whichever the renderer: a family missing from both is missed.
EXPECTED = {
    "jsonl_records_submitted": "counter", "jsonl_records_written": "counter",
    "jsonl_records_unknown": "counter", "jsonl_records_dropped": "counter",
    "jsonl_records_sanitized": "counter", "jsonl_lines_written": "counter",
    "jsonl_bytes_written": "counter", "jsonl_uncompressed_bytes_written": "counter",
    "jsonl_appends": "counter", "jsonl_files_started": "counter",
    "jsonl_directories_recreated": "counter", "jsonl_books_publications": "counter",
    "jsonl_books_publication_errors": "counter", "jsonl_queue_depth": "gauge",
    "jsonl_submits_waiting_for_room": "gauge", "jsonl_last_append_timestamp_seconds": "gauge",
}


def families(path):
    with open(path, encoding="utf-8") as f:
        return {family.name: family for family in text_string_to_metric_families(f.read())}


def samples(family):
    return sorted((s.name, tuple(sorted(s.labels.items())), s.value) for s in family.samples)


def main():
    tool, scratch = sys.argv[1:3]
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    text, collected = os.path.join(scratch, "text.prom"), os.path.join(scratch, "collected.prom")
    subprocess.run([tool, os.path.join(scratch, "out"), text, collected], check=True)
    by_text, by_collectable = families(text), families(collected)
    failures = []
    if set(by_text) != set(EXPECTED) or set(by_collectable) != set(EXPECTED):
        failures.append(f"families: prometheus_text {sorted(by_text)}, collectable {sorted(by_collectable)}, "
                        f"expected {sorted(EXPECTED)}")
    for name, kind in EXPECTED.items():
        a, b = by_text.get(name), by_collectable.get(name)
        if a is None or b is None:
            continue
        if (a.type, a.documentation) != (kind, b.documentation) or b.type != kind:
            failures.append(f"{name}: prometheus_text {a.type} {a.documentation!r}, "
                            f"collectable {b.type} {b.documentation!r}, expected a {kind}")
        if samples(a) != samples(b):
            failures.append(f"{name}: prometheus_text {samples(a)}\n  collectable {samples(b)}")
        if not a.samples or any(math.isnan(s.value) for s in a.samples):
            failures.append(f"{name}: no samples, or one not a number: {samples(a)}")
    written = [s for s in by_text["jsonl_records_written"].samples if s.labels["subject"] == "performance metrics"]
    if [s.value for s in written] != [3.0] or written[0].labels["server_kind"] != 'ctx "0" \\ a\nb':
        failures.append(f"the real writer's written records: {written}")
    if failures:
        sys.exit("\n".join(failures))
    print(f"{len(EXPECTED)} families, {sum(len(f.samples) for f in by_text.values())} samples alike")


if __name__ == "__main__":
    main()
