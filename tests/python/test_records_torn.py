"""Several writers on one record log, one of them killed in the middle of a record: the records of the others
start on fresh lines and are all read back; and records that older writers glued after a torn line are
recovered by the reader."""
import os
import select
import signal
import subprocess
import sys
import time
import warnings

import pytest

import autosched as ans
from autosched import _core
from autosched import measure as am
from autosched import records as ar

from process_helpers import RECORD_WRITER_PRELUDE
from schedule_helpers import matmul_bias_relu

HERE = os.path.dirname(os.path.abspath(__file__))

# A writer that appends records 0 and 1, then one record per line read on stdin, and says what it did.
SURVIVOR = RECORD_WRITER_PRELUDE + """def write(i):
    cb(inp, [_core.MeasureResult(costs=[1e-3 * (i + 1)], error="none", all_cost=0.1, timestamp=time.time())])
write(0)
write(1)
print("ready", flush=True)
for i, _ in enumerate(sys.stdin, start=2):
    write(i)
    print("wrote", i, flush=True)
"""

# A writer in the middle of a record: it holds the log's lock (as RecordToFile does while it appends), has
# written the first part of a record, and is killed before the rest.
TORN_WRITER = """
import fcntl, os, sys, time
fd = os.open({path!r}, os.O_WRONLY | os.O_APPEND)
fcntl.flock(fd, fcntl.LOCK_EX)
os.write(fd, {fragment!r})
print("torn", flush=True)
time.sleep(600)
"""


def read_line(proc, timeout=60):
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, "the writer did not answer"
    return proc.stdout.readline().strip()


def load_with_warnings(path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = ar.load_records(path)
    return loaded, [str(w.message) for w in caught]


def test_a_writer_killed_mid_record_loses_no_record_of_another_writer(tmp_path):
    path = tmp_path / "log.json"
    survivor = subprocess.Popen([sys.executable, "-c", SURVIVOR.format(helpers=HERE, path=str(path))],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    torn = None
    try:
        assert read_line(survivor) == "ready"  # its file is open; the log ends with a whole line
        first = path.read_bytes().split(b"\n")[0]
        fragment = first[:len(first) // 2]
        torn = subprocess.Popen([sys.executable, "-c", TORN_WRITER.format(path=str(path), fragment=fragment)],
                                stdout=subprocess.PIPE, text=True)
        assert read_line(torn) == "torn"
        size = path.stat().st_size
        survivor.stdin.write("2\n")
        survivor.stdin.flush()
        time.sleep(0.5)
        # While the torn writer holds the lock, the other one waits: nothing lands inside its record.
        assert path.stat().st_size == size
        torn.send_signal(signal.SIGKILL)
        torn.wait()
        assert read_line(survivor) == "wrote 2"
        for i in range(3, 6):
            survivor.stdin.write(f"{i}\n")
            survivor.stdin.flush()
            assert read_line(survivor) == f"wrote {i}"
        survivor.stdin.close()
        assert survivor.wait(timeout=60) == 0
    finally:
        for proc in (survivor, torn):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    lines = path.read_bytes().split(b"\n")
    assert lines[2] == fragment  # the survivor started its next record on a fresh line
    loaded, messages = load_with_warnings(path)
    assert [res.costs[0] for _, res in loaded] == pytest.approx([1e-3 * (i + 1) for i in range(6)])
    assert len(messages) == 1 and f"{path}:3: " in messages[0], messages


def make_task():
    return ans.SearchTask(compute_dag=matmul_bias_relu(8, 8, 8)[0], target=ans.Target("llvm"))


def record_lines(tmp_path, count):
    """`count` record lines (bytes, without newline) of costs 1, 2, ... ms."""
    path = tmp_path / "source.json"
    task = make_task()
    inp = [am.MeasureInput(task, task.compute_dag.get_init_state())]
    cb = ar.RecordToFile(path)
    for i in range(count):
        cb(inp, [_core.MeasureResult(costs=[1e-3 * (i + 1)], error="none", all_cost=0.1, timestamp=1.7e9)])
    return path.read_bytes().split(b"\n")[:count]


def test_records_glued_after_a_torn_record_are_recovered(tmp_path):
    # Older writers did not start on a fresh line: a record appended after one killed mid-record shares its
    # line ("<torn part><record>"), two torn parts may precede it, and a record may follow a whole one.
    r = record_lines(tmp_path, 6)
    torn = r[0][:len(r[0]) // 3]
    path = tmp_path / "log.json"
    path.write_bytes(b"\n".join([r[0], torn + r[1], torn + r[1][:50] + r[2], r[3] + r[4], r[5],
                                 b'{"result": {"costs": [1]}, "version"}' + b"{not json", torn + b"\n"]))
    loaded, messages = load_with_warnings(path)
    assert [res.costs[0] for _, res in loaded] == pytest.approx([1e-3 * (i + 1) for i in range(6)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ar.RecordWarning)
        records = ar.read_log(path).records
        _, kept = ar.distill(path, tmp_path / "best.json")
    assert [rec.line for rec in records] == [1, 2, 3, 4, 4, 5]
    # The recovered records are stored as written: distill keeps them whole.
    assert [rec.text.encode() for rec in records] == r
    assert kept == 1 and (tmp_path / "best.json").read_bytes() == r[0] + b"\n"
    assert any(f"{path}:2: the line starts with a torn record" in m for m in messages), messages
    assert any(f"{path}:3: the line starts with a torn record" in m for m in messages), messages
    assert not any(f"{path}:4:" in m for m in messages), messages  # two whole records: nothing torn
    assert any(f"{path}:6: not valid JSON" in m for m in messages), messages
    assert any(f"{path}:7: " in m for m in messages), messages


def test_a_writer_opened_before_a_line_was_torn_starts_on_a_fresh_line(tmp_path):
    # One writer, open since before another writer (here: this process) left a torn line.
    r = record_lines(tmp_path, 2)
    path = tmp_path / "log.json"
    path.write_bytes(r[0] + b"\n")
    task = make_task()
    cb = ar.RecordToFile(path)
    with open(path, "ab") as f:
        f.write(r[1][:40])
    cb([am.MeasureInput(task, task.compute_dag.get_init_state())],
       [_core.MeasureResult(costs=[5e-3], error="none", all_cost=0.1, timestamp=1.7e9)])
    lines = path.read_bytes().split(b"\n")
    assert lines[1] == r[1][:40] and lines[3] == b""
    loaded, messages = load_with_warnings(path)
    assert [res.costs[0] for _, res in loaded] == pytest.approx([1e-3, 5e-3])
    assert len(messages) == 1 and f"{path}:2: not valid JSON" in messages[0], messages
