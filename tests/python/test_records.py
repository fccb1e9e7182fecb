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

from process_helpers import RECORD_WRITER_PRELUDE
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


@pytest.mark.parametrize("fsync", [False, True])
def test_round_trip(tmp_path, fsync):
    path = tmp_path / "log.json"
    task = make_task()
    inputs = [am.MeasureInput(task, split_state(task, f)) for f in (2, 4)]
    cb = ar.RecordToFile(path, fsync=fsync)
    cb(None, inputs, [result(2e-3), result(0, "wrong_answer")])
    loaded = ar.load_records(path)
    assert len(loaded) == 2
    (inp0, res0), (inp1, res1) = loaded
    assert inp0.task.workload_key == task.workload_key
    assert inp0.task.target.text == task.target.text
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
    assert res.costs[0] == 2e-3 and inp.task.target.text == "llvm"
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


WRITER = RECORD_WRITER_PRELUDE + """i = 0
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


# ---- logs that are not regular files ----

def _refused(path):
    return pytest.raises(ValueError, match=f"'{path}' is .*not a regular file")


def test_logs_that_are_not_regular_files_are_refused_naming_them(tmp_path):
    folder = str(tmp_path / "folder")
    os.mkdir(folder)
    task = make_task()
    for path, kind in ((folder, "a directory"), ("/dev/zero", "a character device"),
                       ("/dev/full", "a character device")):
        if not os.path.exists(path):
            continue
        with _refused(path):
            ar.load_records(path)
        with pytest.raises(ValueError, match=kind):
            ar.load_best_record(path, workload_key=task.workload_key)
        with _refused(path):
            ar.RecordToFile(path)
        with _refused(path):
            ans.TuningOptions(measure_callbacks=[ans.RecordToFile(path)])
    with pytest.raises(ValueError, match=f"load_log_file '{folder}' is not a regular file"):
        ans.TaskScheduler([task], load_log_file=folder)
    with pytest.raises(ValueError, match=f"transfer log '{folder}' is not a regular file"):
        ans.TuningOptions(transfer_logs=[folder])


FIFO_LOG = """
import sys
import autosched as ans
for what in (lambda: ans.load_records(sys.argv[1]), lambda: ans.RecordToFile(sys.argv[1])):
    try:
        what()
        print("accepted", flush=True)
    except ValueError as e:
        print(e, flush=True)
"""


def test_a_fifo_log_is_refused_without_blocking(tmp_path):
    fifo = str(tmp_path / "log.fifo")
    os.mkfifo(fifo)
    proc = subprocess.run([sys.executable, "-c", FIFO_LOG, fifo], capture_output=True, text=True, timeout=120)
    lines = proc.stdout.splitlines()
    assert len(lines) == 2, proc.stdout + proc.stderr
    for line in lines:
        assert f"'{fifo}' is a FIFO (named pipe), not a regular file" in line, line


def test_a_line_longer_than_any_record_is_skipped_naming_the_bound(tmp_path):
    path = tmp_path / "log.json"
    task = make_task()
    with open(path, "w") as f:
        f.write("x" * (_core.MAX_RECORD_LINE_BYTES + 1) + "\n")
    ar.RecordToFile(path)([am.MeasureInput(task, split_state(task, 2))], [result(1e-3)])
    with pytest.warns(ar.RecordWarning, match=r":1: line longer than 16 MiB \(kMaxRecordLineBytes\)"):
        loaded = ar.load_records(path)
    assert len(loaded) == 1 and loaded[0][1].costs[0] == 1e-3


def test_loading_a_log_releases_the_gil(tmp_path):
    import threading
    path = tmp_path / "log.json"
    task = make_task()
    ar.RecordToFile(path)([am.MeasureInput(task, split_state(task, 2))], [result(1e-3)])
    line = path.read_text()
    path.write_text(line * 2000)
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    t = threading.Thread(target=tick)
    t.start()
    try:
        time.sleep(0.05)
        before = len(ticks)
        start = time.monotonic()
        loaded = _core.load_records(str(path))
        took = time.monotonic() - start
        during = len(ticks) - before
    finally:
        stop.set()
        t.join()
    assert len(loaded.records) == 2000
    # A loader holding the GIL would let the other thread tick once or twice at most.
    assert during > min(5, took / 0.01), (during, took)


def test_record_commands_refuse_logs_that_are_not_files_with_a_message(tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    path = tmp_path / "log.json"
    task = make_task()
    ar.RecordToFile(path)([am.MeasureInput(task, split_state(task, 2))], [result(1e-3)])
    for args in (["distill", str(folder)], ["distill", str(path), "-o", str(folder)]):
        proc = subprocess.run([sys.executable, "-m", "autosched.records", *args], capture_output=True, text=True,
                              timeout=60)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert f"'{folder}'" in proc.stderr and "not a regular file" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr, proc.stderr
    assert not os.path.exists(str(folder) + ".tmp")
    assert os.listdir(folder) == []


def _relu_model(path):
    onnx = pytest.importorskip("onnx")
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    weight = numpy_helper.from_array(np.ones((8, 16), "float32"), "W")
    nodes = [helper.make_node("MatMul", ["data", "W"], ["mm"]), helper.make_node("Relu", ["mm"], ["out"])]
    graph = helper.make_graph(nodes, "relu", [helper.make_tensor_value_info("data", TensorProto.FLOAT, [2, 8])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2, 16])], [weight])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return str(path)


def test_command_line_refuses_logs_that_are_not_files_with_a_message(tmp_path):
    model = _relu_model(tmp_path / "m.onnx")
    folder = tmp_path / "folder"
    folder.mkdir()
    for args in (["tune", model, "--trials", "2", "--log", "/dev/full"], ["tune", model, "--log", str(folder)],
                 ["run", model, "--log", str(folder)]):
        if not os.path.exists(args[-1]):
            continue
        proc = subprocess.run([sys.executable, "-m", "autosched", *args], capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        # A folder is named as one by the command line's own check of its paths; another file that is not a
        # regular one (a device) by the log's.
        assert f"'{args[-1]}' is a " in proc.stderr, proc.stderr
        assert ("is a directory" if os.path.isdir(args[-1]) else "not a regular file") in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr, proc.stderr


# ---- a log removed or replaced while tuning ----

@pytest.mark.parametrize("change", ["removed", "replaced"])
def test_a_log_removed_or_replaced_while_tuning_gets_the_later_records(tmp_path, change):
    """A callback before RecordToFile removes the log (rm) or replaces it (distill onto itself) after the
    baseline's batch: the later batches land in the file at the path, with a RecordWarning."""
    from autosched import search
    log = str(tmp_path / "log.json")
    task = make_task(16)
    batches = []

    def change_the_log(policy, inputs, results):
        batches.append(len(inputs))
        if len(batches) == 2:  # the baseline's records are in the log, the first round's not yet
            if change == "removed":
                os.remove(log)
            else:
                ar.distill(log, log)

    params = search.SearchParams(evolutionary_search_population=64, evolutionary_search_num_iters=1,
                                 sample_init_min_population=16)
    policy = search.SketchPolicy(task, "random", params, seed=1)
    # What tuning measures first: the baselines and the expert seed, where the task has one.
    baseline = len(search.baseline_states(task)) + (search.expert_schedule(task) is not None)
    opts = ans.TuningOptions(num_measure_trials=baseline + 8, num_measures_per_round=4,
                             runner=am.LocalRunner(min_repeat_ms=5), verbose=0,
                             measure_callbacks=[change_the_log, ar.RecordToFile(log)])
    with pytest.warns(ar.RecordWarning, match=f"'{log}' was {change} while records were written") as caught:
        task.tune(opts, search_policy=policy)
    assert len([w for w in caught if issubclass(w.category, ar.RecordWarning)]) == 1
    assert batches == [baseline, 4, 4]
    records = ar.load_records(log)
    distilled = 1 if change == "replaced" else 0  # distill kept the best baseline record
    assert len(records) == distilled + 8


# ---- records loaded for their best ----

def test_a_record_with_an_implausible_time_and_no_error_is_never_the_best(tmp_path, capsys):
    """Hand-edited costs (-1, 0, null for NaN, 1e-30: faster than the hardware allows) with error "none" load as
    "implausible" failures: never the best, counted as failed when a log is resumed. (JSON has no infinity: a
    line with 1e999 is not valid JSON and is skipped.)"""
    path = tmp_path / "log.json"
    task = make_task()
    ar.RecordToFile(path)([am.MeasureInput(task, split_state(task, 2))], [result(2e-3)])
    good = path.read_text()
    edited = ["-1", "0", "null", "1e-30", "1e999"]
    with open(path, "a") as f:
        for i, cost in enumerate(edited):
            line = json.loads(good)
            line["state"] = json.loads(split_state(task, 4 if i % 2 else 8).to_json())
            f.write(json.dumps(line).replace('"costs": [0.002, 0.002]', f'"costs": [{cost}]') + "\n")
    edited.pop()
    with pytest.warns(ar.RecordWarning) as caught:
        loaded = ar.load_records(path)
    messages = [str(w.message) for w in caught]
    for line_no in range(2, 2 + len(edited)):
        assert any(f":{line_no}: a record without error, but measured time" in m and
                   "loaded as an 'implausible' failure" in m for m in messages), messages
    assert any(":6: not valid JSON" in m for m in messages), messages
    assert [res.error for _, res in loaded] == ["none"] + ["implausible"] * len(edited)
    with pytest.warns(ar.RecordWarning):
        inp, res = ar.load_best_record(path, workload_key=task.workload_key)
    assert res.costs == [2e-3, 2e-3]
    with pytest.warns(ar.RecordWarning):
        assert task.apply_best(str(path)).to_json() == split_state(task, 2).to_json()
    with pytest.warns(ar.RecordWarning):
        result_ = task.tune(ans.TuningOptions(num_measure_trials=len(edited) + 1, verbose=1,
                                              measure_callbacks=[ar.RecordToFile(path)]))
    assert result_.best_cost == 2e-3 and result_.errors["implausible"] == len(edited)
    assert f"Resumed {len(edited) + 1} trials of this task from {path} (failed: implausible {len(edited)})" in \
        capsys.readouterr().out


def _matmul_plus(n, constant, double=False):
    """max(A @ B + constant, 0), then (double) times 2 in a stage of its own."""
    from autosched import te
    a = te.placeholder((n, n), name="A")
    b = te.placeholder((n, n), name="B")
    r = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="C")
    e = te.compute((n, n), lambda i, j: c[i, j] + te.const(constant, "float32"), name="E")
    d = te.compute((n, n), lambda i, j: te.max(e[i, j], te.const(0, "float32")), name="D")
    if not double:
        return ans.ComputeDAG([a, b, d])
    f = te.compute((n, n), lambda i, j: d[i, j] * te.const(2, "float32"), name="F")
    return ans.ComputeDAG([a, b, f])


def test_records_of_another_dag_under_the_task_s_key_are_skipped_or_flagged(tmp_path):
    """Under one hand-given workload key: the fastest record's schedule does not replay on the task's DAG
    (skipped, with a warning), the next was measured on another DAG of the same stages (used, with a warning),
    the slowest is the task's own."""
    path = tmp_path / "log.json"
    mine = ans.SearchTask(compute_dag=_matmul_plus(8, 1), target="llvm", workload_key="shared")
    other = ans.SearchTask(compute_dag=_matmul_plus(8, 2), target="llvm", workload_key="shared")
    longer = ans.SearchTask(compute_dag=_matmul_plus(8, 1, double=True), target="llvm", workload_key="shared")
    on_f = longer.compute_dag.get_init_state()
    on_f.split("F", 0, [2])
    cb = ar.RecordToFile(path)
    cb([am.MeasureInput(mine, split_state(mine, 2))], [result(3e-3)])
    cb([am.MeasureInput(other, split_state(other, 4))], [result(2e-3)])
    cb([am.MeasureInput(longer, on_f)], [result(1e-3)])
    with pytest.warns(ar.RecordWarning) as caught:
        state = mine.apply_best(str(path))
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2, messages
    assert ":3: the schedule does not replay on the DAG of task" in messages[0], messages
    assert ":2: the record has the workload key shared" in messages[1], messages
    assert "measured on another DAG" in messages[1], messages
    assert state.to_json() == split_state(mine, 4).to_json()
    # Resuming flags them too.
    with pytest.warns(ar.RecordWarning) as caught:
        mine.tune(ans.TuningOptions(num_measure_trials=2, measure_callbacks=[ar.RecordToFile(path)], verbose=0))
    messages = [str(w.message) for w in caught]
    assert any(":3: skipped, the schedule does not replay" in m for m in messages), messages
    assert any("1 records have the workload key shared" in m and "measured on another DAG" in m
               for m in messages), messages
    # The task's own records alone: no warning.
    own = tmp_path / "own.json"
    ar.RecordToFile(own)([am.MeasureInput(mine, split_state(mine, 2))], [result(3e-3)])
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert mine.apply_best(str(own)).to_json() == split_state(mine, 2).to_json()
