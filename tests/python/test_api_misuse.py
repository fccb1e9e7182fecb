"""Public entries misused as users do (wrong types, TVM's argument orders and names): a short message naming the
argument, never the core's overload list or an array's values; TVM's spellings either work or name the
autosched one. Also the record viewer and the one-message dynamic-shape refusal."""
import os
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

import autosched as ans
from autosched import _core, te
from autosched import measure as am
from autosched import records as ar
from autosched.graph import Graph

from schedule_helpers import matmul_bias_relu

BIG = np.arange(90000, dtype="float64").reshape(300, 300)  # its values must never reach a message


def _task(n=8):
    return ans.SearchTask(compute_dag=matmul_bias_relu(n, n, n)[0], target="llvm", desc="mm")


def _graph():
    g = Graph("net")
    x = g.add_input("x", (2, 8), "float32")
    w = g.add_constant("w", np.ones((16, 8), "float32"))  # dense: (units, features)
    y = g.add_node("dense", [x, w], name="fc")
    g.add_node("relu", [y], name="act")
    g.set_outputs(["act"])
    return g


def _result(cost, error="none"):
    return _core.MeasureResult(costs=[cost, cost] if cost else [], error=error,
                               error_msg="" if error == "none" else "why", all_cost=0.1, timestamp=time.time())


def _cases():
    task, graph = _task(), _graph()
    dag = task.compute_dag
    return [
        ("Target", "text", lambda: ans.Target(3)),
        ("Target", "text", lambda: ans.Target(BIG)),
        ("Target", "host", lambda: ans.Target("llvm", host="opencl")),
        ("SearchTask", "target", lambda: ans.SearchTask(compute_dag=dag, target=BIG)),
        ("SearchTask", "hardware_params", lambda: ans.SearchTask(compute_dag=dag, target="llvm",
                                                                 hardware_params={"num_cores": 2})),
        ("SearchTask", "compute_dag", lambda: ans.SearchTask(compute_dag=[1, 2], target="llvm")),
        ("ComputeDAG", "tensors", lambda: ans.ComputeDAG(BIG)),
        ("ComputeDAG", "tensors[1]", lambda: ans.ComputeDAG([dag.tensors[0], BIG])),
        ("extract_tasks", "graph", lambda: ans.extract_tasks(BIG, "llvm")),
        ("extract_tasks", "target", lambda: ans.extract_tasks(graph, BIG)),
        ("extract_tasks", "params", lambda: ans.extract_tasks(graph, {"weight": BIG}, "llvm")),
        ("extract_tasks", "hardware_params", lambda: ans.extract_tasks(graph, "llvm", BIG)),
        ("graph.build", "target", lambda: ans.graph.build(graph, 7)),
        ("graph.build", "log", lambda: ans.graph.build(graph, "llvm", BIG)),
        ("build", "first argument", lambda: ans.build(BIG)),
        ("build", "state", lambda: ans.build(task, BIG)),
        ("build", "target", lambda: ans.build(dag, None, BIG)),
        ("build", "args", lambda: ans.build(dag.get_init_state(), "llvm")),
        ("SketchPolicy", "task", lambda: ans.SketchPolicy(BIG)),
        ("SearchParams", "num_measures_per_round", lambda: ans.SearchParams(num_measures_per_round="8")),
        ("RecordToFile", "path", lambda: ans.RecordToFile(BIG)),
        ("records", "log path", lambda: ans.load_records(BIG)),
        ("records", "log path", lambda: ans.load_best_record(3)),
        ("RecordReader", "filename", lambda: ans.RecordReader(BIG)),
        ("apply_best", "log_file", lambda: task.apply_best(BIG)),
        ("evaluate", "dag", lambda: ans.evaluate(BIG, [])),
        ("evaluate", "inputs", lambda: ans.evaluate(dag, BIG)),
        ("MeasureInput", "task", lambda: ans.MeasureInput(BIG, None)),
        ("TuningOptions", "num_measure_trials", lambda: ans.TuningOptions(num_measure_trials="64")),
        ("TaskScheduler", "tasks[0]", lambda: ans.TaskScheduler([BIG])),
        ("TaskScheduler", "task_weights[0]", lambda: ans.TaskScheduler([task], ["a"])),
        ("ApplyHistoryBest", "records", lambda: ans.ApplyHistoryBest(BIG)),
    ]


@pytest.mark.parametrize("index", range(len(_cases())))
def test_misuse_gives_a_short_message_naming_the_argument(index):
    where, arg, call = _cases()[index]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises((TypeError, ValueError)) as info:
            call()
    message = str(info.value)
    assert len(message) < 500, message
    assert where in message and arg in message, message
    assert "incompatible" not in message and "Invoked with" not in message, message
    assert "89999" not in message and "[[" not in message, message  # no array printed


def test_core_overload_errors_are_shortened():
    from autosched.core.checks import call_core
    with pytest.raises(TypeError) as info:
        call_core("Thing", _core.LoopState, BIG)
    message = str(info.value)
    assert message.startswith("Thing: unexpected arguments; it takes") and "89999" not in message, message
    assert len(message) < 500


# ---- TVM's spellings ----

def test_target_host_and_kind_name():
    t = ans.Target("opencl", host="llvm")
    assert t.kind == "opencl" and t.kind.name == "opencl"
    assert ans.Target("llvm").kind.name == "llvm"
    assert ans.Target(ans.Target("llvm")).text == ans.Target("llvm").text


def test_local_runner_takes_tvms_cache_flush_name():
    assert ans.LocalRunner(enable_cpu_cache_flush=True).flush_cache is True
    assert ans.LocalRunner(enable_cpu_cache_flush=False).flush_cache is False
    assert ans.LocalRunner().flush_cache is False
    assert ans.LocalRunner(flush_cache=True, enable_cpu_cache_flush=True).flush_cache is True
    with pytest.raises(ValueError, match="flush_cache and enable_cpu_cache_flush"):
        ans.LocalRunner(flush_cache=False, enable_cpu_cache_flush=True)
    runner = ans.LocalRunner(enable_cpu_cache_flush=True, repeat=2)  # a RunnerOptions like any other
    assert runner.to_dict()["flush_cache"] is True and runner.repeat == 2


def test_extract_tasks_in_tvms_order_gives_the_same_tasks():
    graph = _graph()
    tasks, weights = ans.extract_tasks(graph, "llvm")
    for params in ({}, graph.constants):
        tvm_tasks, tvm_weights = ans.extract_tasks(graph, params, "llvm")
        assert [t.workload_key for t in tvm_tasks] == [t.workload_key for t in tasks] and tvm_weights == weights
    with pytest.raises(TypeError, match="params given twice"):
        ans.extract_tasks(graph, {}, "llvm", params={})


def _log_with_best(path, task, cost=1e-3):
    state = task.compute_dag.get_init_state()
    state.split(state.stages[-1].op, 0, [2])
    ans.RecordToFile(path)([am.MeasureInput(task, state)], [_result(cost)])
    return state


def test_apply_best_unpacks_as_tvms_pair_and_builds(tmp_path):
    task = _task()
    log = str(tmp_path / "log.json")
    want = _log_with_best(log, task)
    best = task.apply_best(log)
    assert isinstance(best, ans.State) and best == want
    sch, args = task.apply_best(log)
    assert sch == want and [t.name for t in args] == [t.name for t in task.compute_dag.tensors]
    mod = ans.build(sch, args, "llvm")
    a, b = (np.random.default_rng(0).standard_normal((8, 8)).astype("float32") for _ in range(2))
    out = np.zeros((8, 8), "float32")
    mod(a, b, out)
    np.testing.assert_allclose(out, np.maximum(a @ b + 1, 0), rtol=1e-5, atol=1e-5)


def test_record_reader_reads_like_load_records(tmp_path):
    task = _task()
    log = str(tmp_path / "log.json")
    _log_with_best(log, task, 2e-3)
    _log_with_best(log, task, 1e-3)
    inputs, results = ans.RecordReader(log).read_lines()
    assert [r.mean_cost for r in results] == [2e-3, 1e-3] and inputs[0].task.workload_key == task.workload_key
    assert [r.mean_cost for _, r in ans.RecordReader(log)] == [2e-3, 1e-3]
    assert len(ans.RecordReader(log).read_lines(max_lines=1)[0]) == 1


def test_apply_history_best_is_the_log_of_graph_build(tmp_path):
    graph = _graph()
    tasks, _ = ans.extract_tasks(graph, "llvm")
    log = str(tmp_path / "net.json")
    _log_with_best(log, tasks[0])
    untuned = ans.graph.build(graph, "llvm", verbose=False)
    assert "without a tuned schedule" in untuned.note
    with ans.ApplyHistoryBest(log):
        tuned = ans.graph.build(graph, "llvm", verbose=False)
    assert tuned.note == ""
    assert "without a tuned schedule" in ans.graph.build(graph, "llvm", verbose=False).note  # only inside


def test_iterating_a_state_stops_after_its_stages():
    dag = _task().compute_dag
    state = dag.get_init_state()
    stages = list(state)
    assert [s.name for s in stages] == [s.name for s in state.stages] and len(state) == len(stages)


# ---- words ----

def test_speed_comparisons_are_phrased_one_way():
    from autosched.core.text import compare_speed
    assert compare_speed(0.58, 0.1, "onnxruntime") == "autosched is 5.8x slower than onnxruntime"
    assert compare_speed(0.1, 0.13, "numpy") == "autosched is 1.3x faster than numpy"
    assert compare_speed(0.1, 0.101, "numpy").startswith("autosched is as fast as numpy")
    with pytest.raises(ValueError):
        compare_speed(0, 1, "x")


def test_dynamic_dims_are_one_message_with_the_fix_of_the_interface():
    from autosched.graph.extract import format_problems
    g = Graph("dyn")
    x = g.add_input("x", ("batch", 8), "float32")
    y = x
    for i in range(20):
        y = g.add_node("relu", [y], name=f"r{i}")
    g.set_outputs([y])
    problems = g.problems()
    assert len(problems) == 20
    python = format_problems(problems)
    cli = format_problems(problems, interface="cli")
    assert python.count("\n") == 0 and "graph.bind(batch=1)" in python and "--shape" not in python
    assert cli.count("\n") == 0 and "--shape batch=1" in cli and "bind" not in cli
    with pytest.raises(ans.graph.GraphError) as info:
        ans.graph.build(g, "llvm")
    assert str(info.value).count("\n") == 1 and "graph.bind(batch=1)" in str(info.value)


# ---- the record viewer ----

def test_records_show_lists_tasks_without_a_runpy_warning(tmp_path):
    a, b = _task(8), _task(4)
    log = str(tmp_path / "log.json")
    cb = ans.RecordToFile(log)
    for task, res in ((a, _result(2e-3)), (a, _result(1e-3)), (a, _result(0, "runtime")), (b, _result(0, "compile")),
                      (b, _result(0, "compile"))):
        cb([am.MeasureInput(task, task.compute_dag.get_init_state())], [res])
    summaries = ar.summarize(log)
    assert [(s.trials, s.ok, s.best_cost, dict(s.errors)) for s in summaries] == [
        (3, 2, 1e-3, {"runtime": 1}), (2, 0, None, {"compile": 2})]
    proc = subprocess.run([sys.executable, "-W", "error", "-m", "autosched.records", "show", log],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"{log}: 5 records of 2 task(s)"
    assert "best (ms)" in lines[1] and " 1.000 " in lines[2], proc.stdout  # one unit, in the header
    assert "runtime 1" in lines[2] and "llvm" in lines[2], proc.stdout
    assert " - " in lines[3] and "compile 2" in lines[3], proc.stdout
    proc = subprocess.run([sys.executable, "-W", "error", "-m", "autosched.records", "distill", log, "-o",
                           str(tmp_path / "best.json")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stderr == "" and "kept 1 records" in proc.stdout, proc.stderr
