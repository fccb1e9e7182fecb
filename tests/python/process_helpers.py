"""Helpers of the tests that run tuning, workers and signals in child processes: which measurement workers a
process has, and waiting for them to end."""
import os
import time


def _stat(pid):
    """(state, parent pid) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[1])


def worker_pids(parent):
    """Process ids of the running measurement workers (autosched_worker) whose parent is `parent`."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        stat = _stat(int(entry))
        if stat is None or stat[1] != parent or stat[0] == "Z":
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv0 = f.read().split(b"\0")[0]
        except OSError:
            continue
        if os.path.basename(argv0) == b"autosched_worker":
            pids.append(int(entry))
    return pids


def alive(pid):
    """True while the process runs (a zombie, or a pid reused by another program, counts as ended)."""
    stat = _stat(pid)
    if stat is None or stat[0] == "Z":
        return False
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return os.path.basename(f.read().split(b"\0")[0]) == b"autosched_worker"
    except OSError:
        return False


def wait_ended(pids, timeout=10):
    """The pids of `pids` still running after up to `timeout` seconds (empty once all have ended)."""
    deadline = time.monotonic() + timeout
    left = [p for p in pids if alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in left if alive(p)]
    return left


def read_line(proc, timeout):
    """The next line the child writes to its stdout (a pipe opened with bufsize=0), without the newline; None
    when none comes within `timeout` seconds or the child closes its stdout first."""
    import select
    deadline = time.monotonic() + timeout
    fd = proc.stdout.fileno()
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, 1)
        if not chunk:
            return None
        line += chunk
    return line.decode().rstrip("\n")


# The start of a child process's script that appends records of a small matmul task to a log: `cb(inp, [result])`
# writes one. Format it with helpers= (the tests' folder) and path= (the log), then add what the child does.
RECORD_WRITER_PRELUDE = """
import sys, time
sys.path[:0] = [{helpers!r}]
import autosched as ans
from autosched import _core, measure as am, records as ar
from schedule_helpers import matmul_bias_relu
dag = matmul_bias_relu(8, 8, 8)[0]
task = ans.SearchTask(compute_dag=dag, target=ans.Target("llvm"))
cb = ar.RecordToFile({path!r})
inp = [am.MeasureInput(task, dag.get_init_state())]
"""
