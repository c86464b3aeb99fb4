"""Runs a command that writes under OUT and kills it with SIGKILL once the files there
hold at least MIN_BYTES, however slow the machine is.

    kill_once_written.py OUT MIN_BYTES COMMAND...

The size is read while the process is stopped (SIGSTOP), so the kill lands on the state
that was measured. Exits 1 when the command ends first or the size is not reached in
60 seconds.
"""
import os
import subprocess
import sys

from stopped_kill import kill_once

out, min_bytes, command = sys.argv[1], int(sys.argv[2]), sys.argv[3:]


def written():
    return sum(os.path.getsize(os.path.join(folder, name))
               for folder, _, names in os.walk(out) for name in names)


process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if not kill_once(process, lambda: written() >= min_bytes, 60):
    sys.exit(f"kill_once_written: {written()} bytes when the command ended or 60 s passed, "
             f"{min_bytes} awaited (exit {process.returncode})")
print(written())
