"""Output a person reads at a glance: a short `tune` prints a bounded number of lines with one task table, at
the end; task names keep their shape (tables, `run --profile`, the plot's legend); a column of durations has one
unit and no exponent notation; summaries speak plain words at verbose 1 (the internal counters at verbose 2);
benchmarks print the load beside their ratios; autosched.plot shows only its functions and takes logs."""
import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import autosched as ans
from autosched.core.text import (format_duration_column, format_durations, format_time, plain_number,
                                 short_task_name)

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_PARENT = os.path.dirname(os.path.dirname(ans.__file__))
EXPONENT = re.compile(r"\b\d(\.\d+)?e[+-]?\d+\b")
INTERNAL_WORDS = ("search share", "floor population", "forced by waiting programs", "Task scheduler summary")


# ---- the text helpers ----

def test_a_duration_column_takes_one_unit_from_its_values():
    unit, texts = format_duration_column([4.635e-6, 1.705e-5, None, 4.79e-7, 6.599e-5])
    assert unit == "us" and texts == ["4.635", "17.05", "-", "0.479", "65.99"]
    assert format_duration_column([2.924e-7, 5.822e-8]) == ("ns", ["292.4", "58.22"])
    assert format_duration_column([1.5e-3, 2e-4])[0] == "ms"
    assert format_duration_column([0.99996])[0] == "s"  # 1000 ms reads 1.000 s
    assert format_durations(1.913e-4, 5.54e-4) == ["191.3 us", "554.0 us"]


def test_no_exponent_notation_anywhere_in_durations():
    for seconds in (0.00017908141800000003, 0.9996, 12345.0, 5.822e-08, 3e-12, 0.0):
        assert not EXPONENT.search(format_time(seconds)), format_time(seconds)
        assert not EXPONENT.search(format_durations(seconds)[0]), seconds
    assert format_time(0.00017908141800000003) == "179 us" and format_time(0.9996) == "1 s"
    assert plain_number(123456.7) == "123457" and plain_number(0.0123) == "0.01230"


def test_a_long_task_name_keeps_its_shape():
    name = "global_avg_pool2d_nchwc_layout_transform_flatten 1x32"
    assert short_task_name(name, 40) == "global_avg_pool2d_nchwc..flatten 1x32"
    assert short_task_name("conv2d_add_relu [1,64,56,56] k3 s1", 20).endswith(" [1,64,56,56] k3 s1")
    assert short_task_name("conv2d_nchwc_relu 1x4x16x16x8 (2)", 40) == "conv2d_nchwc_relu 1x4x16x16x8 (2)"
    # A shape longer than the width stays whole; only the op part gives way.
    long_shape = "dense 1x2x3x4x5x6x7x8x9x10x11x12x13x14x15x16x17x18x19x20"
    assert short_task_name(long_shape, 20).endswith(long_shape.split(" ", 1)[1])


# ---- a short tune, as a new user runs it ----

def _cnn_onnx(path):
    """A small CNN (conv-relu x3, global pool, dense): 6 tasks, one of them named longer than 40 characters."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)

    def weight(name, shape):
        return numpy_helper.from_array((0.1 * rng.standard_normal(shape)).astype("float32"), name)
    inits = [weight("w1", (16, 3, 3, 3)), weight("w2", (32, 16, 3, 3)), weight("w3", (32, 32, 3, 3)),
             weight("fc", (10, 32)), weight("fcb", (10,))]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("Conv", ["r2", "w3"], ["c3"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c3"], ["r3"]),
             helper.make_node("GlobalAveragePool", ["r3"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "fc", "fcb"], ["y"], transB=1)]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _cli(*args):
    env = dict(os.environ, PYTHONPATH=PACKAGE_PARENT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "autosched", *args], capture_output=True, text=True, timeout=600,
                          env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    """(model, log, the tune's output, the task names) of a 20-second tune of the small CNN."""
    tmp = tmp_path_factory.mktemp("tune")
    model, log = _cnn_onnx(str(tmp / "cnn.onnx")), str(tmp / "cnn.json")
    out = _cli("tune", model, "--log", log, "--time-budget", "20s", "--network-timing-s", "5")
    tasks, _ = ans.extract_tasks(ans.frontends.from_onnx(model), "llvm")
    return model, log, out, [t.desc for t in tasks]


def test_a_short_tune_prints_one_table_in_few_lines(tuned):
    _, log, out, names = tuned
    lines = out.splitlines()
    assert 5 <= len(names) <= 10 and any(len(n) > 40 for n in names), names
    assert len(lines) <= 25, out
    assert sum(line.startswith("|  ID |") for line in lines) == 1, out  # the table once, at the end
    assert "Done" not in lines[[i for i, line in enumerate(lines) if line.startswith("|  ID |")][0]], out
    assert re.search(r"^Tuned \d tasks with \d+ measurements in \d+ s; estimated network latency [0-9.]+ (us|ms) "
                     r"\(untuned [0-9.]+ (us|ms), ", out, re.M), out
    assert not any(word in out for word in INTERNAL_WORDS), out
    assert not EXPONENT.search(out), out
    assert "Records in " + log in out, out


def test_the_tune_table_keeps_each_shape_and_one_unit(tuned):
    _, _, out, names = tuned
    lines = out.splitlines()
    start = [i for i, line in enumerate(lines) if line.startswith("|  ID |")][0]
    header, rows = lines[start], lines[start + 1:start + 1 + len(names)]
    assert re.search(r"\| Latency \((ns|us|ms|s)\) \|", header), header
    for name, row in zip(names, rows):
        assert " " + name.split(" ", 1)[1] + " " in row, (name, row)  # the shape, whole
    for row in rows:  # 3-4 significant digits, plain notation
        latency = row.split("|")[3].strip()
        assert re.fullmatch(r"-|\d+(\.\d+)?", latency) and len(latency.replace(".", "").lstrip("0")) <= 4, row


def test_run_profile_and_compare_keep_shapes_and_units(tuned):
    model, log, _, names = tuned
    pytest.importorskip("onnxruntime")
    out = _cli("run", model, "--log", log, "--profile", "--compare", "onnxruntime", "--repeat", "2", "--number",
               "2")
    assert re.search(r"^latency: [0-9.]+ (ns|us|ms|s) best, [0-9.]+ (ns|us|ms|s) median", out, re.M), out
    header = next(line for line in out.splitlines() if "alone" in line and "in net" in line)
    assert re.search(r"alone (ns|us|ms|s) +in net (ns|us|ms|s)", header), header
    for name in names:
        assert name.split(" ", 1)[1] in out, (name, out)
    assert re.search(r"^onnxruntime: outputs match .*; [0-9.]+ (ns|us|ms|s) best against autosched's [0-9.]+ "
                     r"(ns|us|ms|s): autosched is ", out, re.M), out
    assert not EXPONENT.search(out), out


def test_the_plot_takes_a_log_or_its_records_and_keeps_shapes_in_its_legend(tuned, tmp_path):
    pytest.importorskip("matplotlib")
    _, log, _, names = tuned
    records = ans.load_records(log)
    for source in (log, records):
        fig = ans.plot.time_split(source, tmp_path / "split.png")
        labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
        assert len(labels) == len(names), labels
        assert all(any(n.split(" ", 1)[1] in label for label in labels) for n in names), labels
    fig = ans.plot.tuning_curve(records)
    legend = fig.axes[0].get_legend_handles_labels()[1]
    long_name = next(n for n in names if len(n) > 40)
    assert short_task_name(long_name) in legend and long_name.split(" ", 1)[1] in short_task_name(long_name)
    for wrong in (42, [1, 2], {"a": 1}):
        with pytest.raises(TypeError, match="time_split: expected a TuneResult, a TaskSchedulerResult, a record "
                                            "log path or its records"):
            ans.plot.time_split(wrong)
    with pytest.raises(ValueError, match="the list of records is empty"):
        ans.plot.time_split([])


def test_dir_of_plot_lists_only_its_functions():
    public = [name for name in dir(ans.plot) if not name.startswith("_")]
    assert sorted(public) == sorted(ans.plot.__all__) == ["curves_of_log", "time_split", "tuning_curve"]


# ---- verbose 2 keeps the details ----

def test_verbose_two_prints_the_detailed_rows(capsys):
    sys.path.insert(0, HERE)
    from schedule_helpers import matmul_bias_relu
    tasks = [ans.SearchTask(compute_dag=matmul_bias_relu(n, n, n)[0], target="llvm", desc=f"mm{n}") for n in (8, 16)]
    for verbose in (1, 2):
        opts = ans.TuningOptions(num_measure_trials=8, num_measures_per_round=2, verbose=verbose)
        ans.TaskScheduler(tasks, cost_model="random").tune(opts)
        out = capsys.readouterr().out
        assert re.search(r"^Tuned 2 tasks with 8 measurements", out, re.M), out
        assert ("Task scheduler summary" in out) == (verbose == 2), out
        assert ("Estimated total latency:" in out) == (verbose == 2), out


# ---- benchmarks ----

def _bench_env():
    spec = importlib.util.spec_from_file_location("bench_env_output", ROOT / "bench" / "_env.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_bench_load_note_warns_on_a_busy_machine():
    env = _bench_env()
    quiet = env.load_note(load=0.5, cores=4)
    assert quiet == "load average 0.50 over the last minute, 4 cores"
    busy = env.load_note(load=3.1, cores=4)
    assert busy.startswith("load average 3.10") and "\nwarning: the machine is busy" in busy
    assert "load average" in env.load_note()  # this machine's figures


@pytest.mark.parametrize("script", ["bench_matmul.py", "bench_models.py", "bench_networks.py", "bench_nondividing.py",
                                    "bench_opencl_gpu.py", "bench_task_scheduler.py", "bench_tune_matmul.py",
                                    "bench_tuned_vs_untuned.py"])
def test_bench_scripts_print_the_load_beside_their_ratios(script):
    assert "_env.load_note()" in (ROOT / "bench" / script).read_text(), script


def test_records_show_keeps_shapes_and_one_unit(tmp_path):
    """`python -m autosched.records show`: names shortened only in their op part, one unit for the best times."""
    import gzip

    from autosched.records import format_summary, summarize
    corpus = os.path.join(os.path.dirname(__file__), "..", "records", "corpus", "records_znver3_job0.json.gz")
    log = tmp_path / "log.json"
    with gzip.open(corpus, "rt") as f:
        log.write_text("".join(line for _, line in zip(range(300), f)))
    summaries = summarize(str(log))
    text = format_summary(str(log), summaries)
    header = text.splitlines()[1]
    assert re.search(r"best \((ns|us|ms|s)\)", header), header
    for s in summaries:
        shape = (s.desc or s.workload_key).partition(" ")[2]
        assert shape in text, f"{shape!r} lost from:\n{text}"
    assert "e+" not in text and "e-0" not in text, text


def test_table_of_many_tasks_shows_those_that_cost_most():
    """At verbose 1 a network of 19 tasks gets 11 rows (the largest weight x latency, in ID order) and one line
    for the rest with their share; verbose 2 (max_rows=None) lists every task."""
    from types import SimpleNamespace

    from autosched.tune.views import TABLE_ROWS, task_table_lines
    costs = [None] + [1e-5 * (i + 1) for i in range(18)]  # task 0 has no schedule yet: always shown
    tasks = [SimpleNamespace(desc=f"conv2d_nchwc_relu 1x{i}x56x56x8", workload_key=str(i)) for i in range(19)]
    tuners = [SimpleNamespace(result=SimpleNamespace(best_cost=c, best_gflops=None if c is None else 10.0,
                                                     trials=4)) for c in costs]
    session = SimpleNamespace(result=SimpleNamespace(tasks=tasks, weights=[1] * 19, done={}), tuners=tuners)
    lines = task_table_lines(session, max_rows=TABLE_ROWS)
    assert len(lines) == 1 + TABLE_ROWS, "\n".join(lines)
    ids = [int(line.split("|")[1]) for line in lines[1:-1]]
    assert ids == [0] + list(range(19 - TABLE_ROWS + 2, 19)), ids
    hidden = sum(costs[1:19 - TABLE_ROWS + 2])
    share = 100 * hidden / sum(costs[1:])
    assert f"{19 - len(ids)} more tasks" in lines[-1] and f"{share:.2g}" in lines[-1], lines[-1]
    assert len(task_table_lines(session)) == 20
