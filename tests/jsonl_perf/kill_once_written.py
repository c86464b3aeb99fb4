"""Runs a command that writes under OUT and kills it with SIGKILL once the files there
hold at least MIN_BYTES, however slow the machine is.

    kill_once_written.py OUT MIN_BYTES COMMAND...

The size is read while the process is stopped (SIGSTOP), so the kill lands on the state
that was measured. Exits 1 when the command ends first or the size is not reached in
60 seconds.
"""
import os
import signal
import subprocess
import sys
import time

out, min_bytes, command = sys.argv[1], int(sys.argv[2]), sys.argv[3:]


def written():
    return sum(os.path.getsize(os.path.join(folder, name))
               for folder, _, names in os.walk(out) for name in names)


process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
deadline = time.monotonic() + 60
while True:
    if process.poll() is not None:
        sys.exit(f"kill_once_written: the command ended ({process.returncode}) at {written()} bytes")
    if time.monotonic() > deadline:
        process.kill()
        sys.exit(f"kill_once_written: {written()} bytes after 60 s, {min_bytes} awaited")
    os.kill(process.pid, signal.SIGSTOP)
    os.waitpid(process.pid, os.WUNTRACED)
    if written() >= min_bytes:
        break
    os.kill(process.pid, signal.SIGCONT)
    time.sleep(0.05)  # pacing of the poll only: the size above is read on a stopped process
process.kill()
process.wait()
print(written())
