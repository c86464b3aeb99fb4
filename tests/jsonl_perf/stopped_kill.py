"""Killing a writer on a state that was checked, however slow the machine is."""
import os
import signal
import time


def kill_once(process, ready, seconds):
    """SIGKILLs `process` as soon as ready() holds, asked while the process is stopped
    (SIGSTOP), so the kill lands on the state that was checked. False when the process
    ended first or `seconds` passed (it is killed then too)."""
    deadline = time.monotonic() + seconds
    while process.poll() is None and time.monotonic() <= deadline:
        os.kill(process.pid, signal.SIGSTOP)
        os.waitpid(process.pid, os.WUNTRACED)
        if ready():
            process.kill()
            process.wait()
            return True
        os.kill(process.pid, signal.SIGCONT)
        time.sleep(0.05)  # pacing of the poll only: ready() is asked of a stopped process
    process.kill()
    process.wait()
    return False
