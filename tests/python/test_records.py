"""The record log: round trip, a writer killed with SIGKILL mid-run, torn and foreign lines, best record, distill."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

import autosched as ans
from autosched import _core
from autosched import measure as am
from autosched import records as ar

from schedule_helpers import matmul_bias_relu

HERE = os.path.dirname(os.path.abspath(__file__))


def make_task(n=8, target="llvm"):
    dag = matmul_bias_relu(n, n, n)[0]
    return ans.SearchTask(compute_dag=dag, target=ans.Target(target))


def split_state(task, factor):
    s = task.compute_dag.get_init_state()
    s.split("C", 0, [factor])
    return s


def result(cost, error="none"):
    costs = [cost, cost] if cost else []
    return _core.MeasureResult(costs=costs, error=error, error_msg="" if error == "none" else "why",
                               all_cost=0.25, timestamp=time.time())


def test_round_trip(tmp_path):
    path = tmp_path / "log.json"
    task = make_task()
    inputs = [am.MeasureInput(task, split_state(task, f)) for f in (2, 4)]
    cb = ar.RecordToFile(path)
    cb(None, inputs, [result(2e-3), result(0, "wrong_answer")])
    loaded = ar.load_records(path)
    assert len(loaded) == 2
    (inp0, res0), (inp1, res1) = loaded
    assert inp0.task.workload_key == task.workload_key
    assert str(inp0.task.target) == str(task.target)
    assert inp0.task is inp1.task  # records of one task share it
    assert isinstance(inp0.state, ans.State)
    assert inp0.state.to_json() == inputs[0].state.to_json()
    assert res0.costs == [2e-3, 2e-3] and res0.error == "none" and res0.error_no == am.MeasureErrorNo.NONE
    assert res1.error == "wrong_answer" and res1.error_msg == "why" and res1.costs == []
    # One JSON object per line, versioned, errors by name, the steps as State.to_json writes them.
    lines = path.read_text().splitlines()
    doc = json.loads(lines[1])
    assert doc["version"] == 1 and doc["result"]["error"] == "wrong_answer"
    assert set(doc["task"]) >= {"workload_key", "target", "hardware_params", "compute_dag"}
    assert doc["state"] == json.loads(inputs[1].state.to_json())


def test_measured_results_record_and_the_best_builds(tmp_path):
    if not _core.has_llvm():
        pytest.skip("built without LLVM")
    path = tmp_path / "log.json"
    task = make_task(12)
    states = [split_state(task, f) for f in (2, 3, 4)]
    runner = am.LocalRunner(timeout=5, min_repeat_ms=1)
    results = am.measure(task, states, am.LocalBuilder(n_parallel=2), runner)
    ar.RecordToFile(path)([am.MeasureInput(task, s) for s in states], results)
    inp, res = ar.load_best_record(path, task.workload_key, task.target)
    assert res.error == "none"
    assert res.mean_cost == min(r.mean_cost for r in results)
    ans.build(inp.task, inp.state)  # the recorded schedule still builds


def test_best_record_never_of_another_target(tmp_path):
    path = tmp_path / "log.json"
    cpu, other = make_task(), make_task(target="llvm -num-cores=1")
    cb = ar.RecordToFile(path)
    cb([am.MeasureInput(cpu, split_state(cpu, 2))], [result(3e-3)])
    cb([am.MeasureInput(other, split_state(other, 2))], [result(1e-6)])
    cb([am.MeasureInput(cpu, split_state(cpu, 4))], [result(2e-3)])
    cb([am.MeasureInput(cpu, split_state(cpu, 1))], [result(1e-9, "implausible")])
    inp, res = ar.load_best_record(path, cpu.workload_key, "llvm")
    assert res.costs[0] == 2e-3 and str(inp.task.target) == "llvm"
    inp, res = ar.load_best_record(path, target=ans.Target("llvm -num-cores=1"))
    assert res.costs[0] == 1e-6
    assert ar.load_best_record(path, workload_key="other") == (None, None)


def test_torn_and_foreign_lines_are_skipped_with_warnings(tmp_path):
    path = tmp_path / "log.json"
    task = make_task()
    ar.RecordToFile(path)([am.MeasureInput(task, split_state(task, 2))], [result(1e-3)])
    with open(path, "a") as f:
        f.write('{"i": [["key", "llvm"]], "r": [[0.1], 0, 1, 2], "v": "v0.6"}\n')
        f.write('{"version": 1, "task": {"work')  # torn by a kill
    with pytest.warns(ar.RecordWarning) as caught:
        loaded = ar.load_records(path)
    assert len(loaded) == 1
    messages = [str(w.message) for w in caught]
    assert any(":2: not an autosched record" in m for m in messages), messages
    assert any(":3: incomplete last line" in m for m in messages), messages
    # A new writer starts on a fresh line, so the torn line does not swallow the next record.
    ar.RecordToFile(path)([am.MeasureInput(task, split_state(task, 4))], [result(5e-4)])
    with pytest.warns(ar.RecordWarning):
        assert len(ar.load_records(path)) == 2
    with pytest.raises(FileNotFoundError):
        ar.load_records(tmp_path / "missing.json")


WRITER = """
import sys, time
sys.path[:0] = [{helpers!r}]
import autosched as ans
from autosched import _core, measure as am, records as ar
from schedule_helpers import matmul_bias_relu
dag = matmul_bias_relu(8, 8, 8)[0]
task = ans.SearchTask(compute_dag=dag, target=ans.Target("llvm"))
cb = ar.RecordToFile({path!r})
inp = [am.MeasureInput(task, dag.get_init_state())]
i = 0
while True:
    cb(inp, [_core.MeasureResult(costs=[1e-3 + i * 1e-9], error="none", all_cost=0.1, timestamp=time.time())])
    i += 1
"""


def test_kill_9_of_a_writer_leaves_a_loadable_log(tmp_path):
    path = tmp_path / "log.json"
    code = WRITER.format(helpers=HERE, path=str(path))
    child = subprocess.Popen([sys.executable, "-c", code], env=dict(os.environ))
    try:
        deadline = time.time() + 30
        while time.time() < deadline and (not path.exists() or path.stat().st_size < 200_000):
            assert child.poll() is None, "the writer exited early"
            time.sleep(0.02)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = ar.load_records(path)
    lines = path.read_bytes().split(b"\n")
    complete = len(lines) - 1  # the part after the last newline is empty or torn
    assert len(loaded) == complete > 10
    assert len(caught) <= 1  # at most the torn last line
    costs = [res.costs[0] for _, res in loaded]
    assert costs == sorted(costs)  # every record in order, none lost in the middle


def test_distill_keeps_the_best_record_per_task_and_target(tmp_path):
    path = tmp_path / "log.json"
    a, b = make_task(8), make_task(4)
    cb = ar.RecordToFile(path)
    for task, cost in ((a, 3e-3), (b, 2e-3), (a, 1e-3), (b, 4e-3), (a, 2e-3)):
        cb([am.MeasureInput(task, split_state(task, 2))], [result(cost)])
    cb([am.MeasureInput(a, split_state(a, 2))], [result(0, "runtime")])
    out = tmp_path / "best.json"
    proc = subprocess.run([sys.executable, "-m", "autosched.records", "distill", str(path), "-o", str(out)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "kept 2 records" in proc.stdout
    best = ar.load_records(out)
    assert [(inp.task.workload_key, res.costs[0]) for inp, res in best] == [
        (a.workload_key, 1e-3), (b.workload_key, 2e-3)]
