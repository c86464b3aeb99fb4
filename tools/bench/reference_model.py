"""A model of the reference server's performance-metrics writer, for the benchmarks.

Reads raw records (one JSON value a line) as the server would hold them (json.loads),
queues them on an asyncio queue of 1024 (waiting for room, as `jsonl-perf replay` does,
so that both do the same work), and drains them in batches of up to 64: each record
shaped as the reference's _jsonl_record shapes it, serialized with
json.dumps(separators=(",", ":"), allow_nan=False), and the batch appended to one file
through asyncio.to_thread. Written from the reference's behaviour for this benchmark;
malformed records are skipped as the reference skips them.

    reference_model.py INPUT OUTPUT_FILE    prints the records written
"""
import asyncio
import json
import sys

QUEUE_SIZE = 1024
BATCH_SIZE = 64


def perf_metrics(phase):
    timing = dict(phase.get("timing_metrics", {}))
    if not timing.get("kv_cache_size"):
        for key in ("kv_cache_size", "kv_cache_transfer_start", "kv_cache_transfer_end"):
            timing.pop(key, None)
    shaped = {"timing_metrics": timing}
    for key in ("first_iter", "last_iter", "kv_cache_metrics", "speculative_decoding"):
        if key in phase:
            shaped[key] = phase[key]
    if "kv_cache_metrics" in shaped:
        kv_cache = dict(shaped["kv_cache_metrics"])
        kv_cache.pop("kv_cache_hit_rate", None)
        if kv_cache:
            shaped["kv_cache_metrics"] = kv_cache
    return shaped


def worker_metrics(request_id, ctx_request_id, phase):
    try:
        request_id = int(request_id)
    except (TypeError, ValueError):
        pass
    shaped = {"request_id": request_id, "perf_metrics": perf_metrics(phase)}
    if ctx_request_id is not None:
        shaped["ctx_request_id"] = ctx_request_id
    if phase.get("time_breakdown_metrics") is not None:
        shaped["time_breakdown_metrics"] = phase["time_breakdown_metrics"]
    return shaped


def shape(record):
    phases = record.get("phases", {})
    if "disagg" not in phases:
        shaped = worker_metrics(record["request_id"], record.get("ctx_request_id"), phases["server"])
        shaped["status"] = record.get("status", "complete")
    else:
        disagg = phases["disagg"]
        timing = disagg["timing_metrics"]
        shaped = {
            "ctx_server": disagg["ctx_server"],
            "gen_server": disagg["gen_server"],
            "disagg_server_arrival_time": timing["server_arrival_time"],
            "disagg_ctx_dispatch_time": timing["ctx_dispatch_time"],
            "disagg_server_first_token_time": timing["server_first_token_time"],
            "status": record.get("status", "complete"),
        }
        for name, key in (("ctx", "ctx_perf_metrics"), ("gen", "gen_perf_metrics")):
            phase = phases.get(name)
            if phase:
                request_id = phase.get("request_id", record["request_id"])
                shaped[key] = worker_metrics(request_id, phase.get("ctx_request_id"), phase)
    if record.get("disagg_request_id") is not None:
        shaped["disagg_request_id"] = record["disagg_request_id"]
    return shaped


def append(path, data):
    with open(path, "a", encoding="utf-8") as output:
        output.write(data)


async def drain(queue, path, written):
    while True:
        record = await queue.get()
        if record is None:
            return
        batch = [record]
        done = False
        while len(batch) < BATCH_SIZE:
            try:
                record = queue.get_nowait()
            except asyncio.QueueEmpty:
                break
            if record is None:
                done = True
                break
            batch.append(record)
        lines = []
        for record in batch:
            try:
                lines.append(json.dumps(shape(record), separators=(",", ":"), allow_nan=False) + "\n")
            except (KeyError, TypeError, ValueError, AttributeError):
                continue
        if lines:
            await asyncio.to_thread(append, path, "".join(lines))
            written[0] += len(lines)
        if done:
            return


async def main(input_path, output_path):
    queue = asyncio.Queue(maxsize=QUEUE_SIZE)
    written = [0]
    task = asyncio.create_task(drain(queue, output_path, written))
    with open(input_path, encoding="utf-8") as lines:
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            await queue.put(record)
    await queue.put(None)
    await task
    print(written[0])


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
