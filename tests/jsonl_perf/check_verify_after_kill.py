"""A request-trace loadgen killed with SIGKILL mid-run, then `jsonl-perf verify` on what
it left: its document balances, its shards verify, and what it wrote after its last
publication is reported as unaccounted. A successor then runs to the end beside it.
Last, a shard cut below its claim fails verification.

    check_verify_after_kill.py TOOL SCRATCH [none|zstd ZSTD]

The kill comes while the process is stopped (SIGSTOP) and its output holds bytes its
last document does not claim, so what it leaves is the state that was checked.
Compressed (zstd), the claimed bytes of each shard end where an append did, inside the
frame the writer was writing or between frames: zstd decodes them to the lines claimed
once that frame is given an end (an empty last block, its checksum not checked). The
unclaimed tail holds a torn append or whole ones, and the successor's files, named
apart, are whole frames zstd -t accepts.
"""
import glob
import json
import os
import subprocess
import sys

from stopped_kill import kill_once

tool, scratch = sys.argv[1], sys.argv[2]
compressed = len(sys.argv) > 3 and sys.argv[3] == "zstd"
zstd = sys.argv[4] if compressed else None
out = os.path.join(scratch, "out")
extension = ".jsonl.zst" if compressed else ".jsonl"
compression = ["--compression", "zstd"] if compressed else []


def fail(message):
    sys.exit(f"check_verify_after_kill: {message}")


def documents():
    found = []
    for path in glob.glob(os.path.join(out, "_writer", "*.json")):
        with open(path, encoding="utf-8") as f:
            found.append(json.load(f))
    return found


def unpublished_tail():
    """True when a document claims records and the shards hold bytes beyond its claims."""
    books = documents()
    if len(books) != 1 or books[0]["counts"]["persisted"] == 0:
        return False
    claimed = {f["file"]: f["persisted_end"] for f in books[0]["shards"]}
    shards = glob.glob(os.path.join(out, "*", "*" + extension))
    return any(os.path.getsize(s) > claimed.get(os.path.relpath(s, out), 0) for s in shards)


def verify():
    result = subprocess.run([tool, "verify", "--json", out], capture_output=True, text=True)
    if result.returncode != 0:
        fail(f"verify exited {result.returncode}:\n{result.stdout}{result.stderr}")
    return json.loads(result.stdout)


killed = subprocess.Popen(
    [tool, "loadgen", "--config", "request-trace", "--rate", "4000", "--duration", "60",
     "--publish-interval-ms", "200", "--output-dir", out, *compression],
    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if not kill_once(killed, unpublished_tail, 30):
    fail("the loadgen never had an unpublished tail")

report = verify()
if not (report["all_books_balance"] and report["all_files_verify"]):
    fail(f"the killed writer's books do not reconcile: {report}")
(dead,) = report["generations"]
if dead["closed"] or dead["counts"]["persisted"] == 0 or not dead["files"]:
    fail(f"expected an unclosed document claiming records: {dead}")
for shard in dead["files"]:
    if shard["records"] != shard["persisted_records"] or shard["bad_lines"] != 0:
        fail(f"a shard does not verify: {shard}")
tail = report["unaccounted"]
if not tail or not all(t["whole_lines"] + t["cut_lines"] + t["torn_frames"] > 0 for t in tail):
    fail(f"the unpublished tail is not reported as unaccounted: {tail}")


def zstd_accepts(data):
    return subprocess.run([zstd, "-q", "-t"], input=data, capture_output=True).returncode == 0


def zstd_lines(data):
    """The lines zstd decodes from `data`, whole frames or ending inside one; None if it cannot."""
    # An empty last block (header 01 00 00) and a checksum zstd is told not to check.
    for candidate in (data, data + b"\x01\x00\x00" + b"\x00" * 4):
        decoded = subprocess.run([zstd, "-q", "-d", "-c", "--no-check"], input=candidate, capture_output=True)
        if decoded.returncode == 0:
            return decoded.stdout.count(b"\n")
    return None


if compressed:
    for shard in dead["files"]:
        with open(os.path.join(out, shard["file"]), "rb") as f:
            claimed = f.read()[shard["start_offset"]:shard["persisted_end"]]
        lines = zstd_lines(claimed)
        if lines != shard["persisted_records"]:
            fail(f"zstd decodes {lines} lines of the claimed bytes of {shard['file']}, "
                 f"not the {shard['persisted_records']} claimed")
    # decompress: plain files and books that describe them, which verify as the
    # compressed ones did.
    plain = os.path.join(scratch, "plain")
    decompressed = subprocess.run([tool, "decompress", out, plain], capture_output=True, text=True)
    if decompressed.returncode != 0:
        fail(f"decompress exited {decompressed.returncode}:\n{decompressed.stdout}{decompressed.stderr}")
    plain_report = json.loads(subprocess.run([tool, "verify", "--json", plain], capture_output=True,
                                             text=True).stdout)
    if not (plain_report["all_books_balance"] and plain_report["all_files_verify"]):
        fail(f"the decompressed books do not reconcile: {plain_report}")
    (plain_dead,) = plain_report["generations"]
    if plain_dead["counts"] != dead["counts"] or [f["records"] for f in plain_dead["files"]] != [
            f["records"] for f in dead["files"]]:
        fail(f"decompressed, the books say otherwise: {plain_dead} against {dead}")
    if any(f["file"].endswith(".zst") for f in plain_dead["files"]):
        fail(f"a decompressed document still names a compressed file: {plain_dead}")

successor = subprocess.run(
    [tool, "loadgen", "--config", "request-trace", "--rate", "400", "--duration", "1", "--output-dir", out,
     *compression],
    capture_output=True, text=True)
if successor.returncode != 0:
    fail(f"the successor's loadgen failed:\n{successor.stdout}{successor.stderr}")
after = verify()
closed = sorted(g["closed"] for g in after["generations"])
if closed != [False, True] or not (after["all_books_balance"] and after["all_files_verify"]):
    fail(f"expected the dead and the closed generation, both reconciled: {after}")
if after["unaccounted"] != tail:
    fail(f"the successor changed what is unaccounted: {tail} then {after['unaccounted']}")
if compressed:
    dead_files = {shard["file"] for shard in dead["files"]}
    (alive,) = [g for g in after["generations"] if g["closed"]]
    for shard in alive["files"]:
        if shard["file"] in dead_files:
            fail(f"the successor appended to its predecessor's {shard['file']}")
        with open(os.path.join(out, shard["file"]), "rb") as f:
            if not zstd_accepts(f.read()):
                fail(f"zstd -t refuses the successor's {shard['file']}")
# A shard cut below what its document claims no longer verifies, and verify says so.
shard = os.path.join(out, dead["files"][0]["file"])
os.truncate(shard, dead["files"][0]["persisted_end"] - 1)
cut = subprocess.run([tool, "verify", out], capture_output=True, text=True)
if cut.returncode != 1 or "NOT VERIFIED" not in cut.stdout:
    fail(f"a shard shorter than its claim still verifies (exit {cut.returncode}):\n{cut.stdout}")
lines = sum(t["whole_lines"] for t in tail)
print(f"killed writer: {dead['counts']['persisted']} persisted and claimed, {lines} whole lines unaccounted")
