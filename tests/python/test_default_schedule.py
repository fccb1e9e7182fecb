"""A tuned network is never slower than the untuned one: tuning measures each task's default schedule (what an
untuned build runs, search.default_schedules) first, so a task given one trial keeps the default, not the plain
loop nest, as its best; a network built from a short tuning's log runs, in every group, the default or a record
measured faster than it; and where a log holds no measurement of the default (an older version's, whose first
measurement was the plain loop nest), graph.build times the record against the default and runs the faster,
saying so. The structure is asserted, never a timing, but for build's own choice between a plain loop nest and
the parallel default, which are far apart (test_build_runs_the_default_where_the_logs_record_is_slower)."""
import numpy as np
import pytest

import autosched as ans
from autosched import _core, search
from autosched.graph import Graph
from autosched.measure import LocalRunner, measure
from autosched.records import load_records
from schedule_helpers import matmul_tensors

pytestmark = pytest.mark.needs_llvm

RNG = np.random.default_rng(11)


def _key(state):
    return _core.state_key(state)


def _default(task):
    return search.default_schedules(task)[0]


def small_cnn():
    """conv + relu, conv, global pool, dense: a few tasks of different kinds."""
    g = Graph("small_cnn")
    x = g.add_input("data", (1, 8, 16, 16))
    w1 = g.add_constant("w1", (RNG.standard_normal((16, 8, 3, 3)) * 0.2).astype(np.float32))
    w2 = g.add_constant("w2", (RNG.standard_normal((16, 16, 3, 3)) * 0.2).astype(np.float32))
    y = g.add_node("relu", [g.add_node("conv2d", [x, w1], dict(pads=1))])
    y = g.add_node("conv2d", [y, w2], dict(pads=1))
    y = g.add_node("flatten", [g.add_node("global_avg_pool2d", [y])])
    fc = g.add_constant("fc", (RNG.standard_normal((10, 16)) * 0.2).astype(np.float32))
    g.set_outputs([g.add_node("dense", [y, fc])])
    return g


def test_the_default_is_the_expert_on_a_cpu_and_tuning_measures_it_first():
    task = ans.SearchTask(compute_dag=ans.ComputeDAG(matmul_tensors(32, 24, 16)), target="llvm", desc="mm")
    names = [name for name, _ in search.default_schedules(task)]
    assert names[0] == search.EXPERT and names[1].startswith("parallel") and names[-1] == "plain"
    assert _key(_default(task)[1]) == _key(search.expert_schedule(task))
    start = search.tuning_start_states(search.SketchPolicy(task, "random"))
    assert [name for name, _ in start][:2] == names[:2] and start[-1][0] == "plain"
    assert _key(start[0][1]) == _key(_default(task)[1])
    # A task the expert has nothing to tile for (element-wise) starts from the parallel nest.
    x = ans.te.placeholder((64, 48), name="x")
    relu = ans.te.compute((64, 48), lambda i, j: ans.te.max(x[i, j], 0.0), name="relu")
    plain_task = ans.SearchTask(compute_dag=ans.ComputeDAG([x, relu]), target="llvm", desc="relu")
    assert search.expert_schedule(plain_task) is None
    assert search.default_schedules(plain_task)[0][0].startswith("parallel")


def test_a_gpu_tasks_default_is_the_expert_then_the_default_gpu_schedule():
    task = ans.SearchTask(compute_dag=ans.ComputeDAG(matmul_tensors(32, 24, 16)), target="opencl -device=pocl",
                          desc="mm")
    names = [name for name, _ in search.default_schedules(task)]
    assert names[0] == search.EXPERT and len(names) > 1, names


def test_one_trial_records_the_default_not_the_plain_loop_nest(tmp_path):
    log = str(tmp_path / "mm.json")
    task = ans.SearchTask(compute_dag=ans.ComputeDAG(matmul_tensors(64, 64, 64)), target="llvm", desc="mm")
    result = task.tune(ans.TuningOptions(num_measure_trials=1, verbose=0, measure_callbacks=[ans.RecordToFile(log)],
                                         runner=LocalRunner(timeout=10, min_repeat_ms=2)))
    (inp, res), = load_records(log)
    name, default = _default(task)
    plain = dict(search.default_schedules(task))["plain"]
    assert _key(inp.state) == _key(default) != _key(plain)
    assert _key(result.best_state) == _key(default)
    # The baseline of the summaries is the default's time: what an untuned build runs.
    assert result.default_name == name and result.baseline_cost == result.best_cost == res.mean_cost


def test_a_short_tuning_builds_no_group_slower_than_its_default(tmp_path):
    g = small_cnn()
    tasks, weights = ans.extract_tasks(g, "llvm")
    assert len(tasks) >= 4
    log = str(tmp_path / "net.json")
    opts = ans.TuningOptions(num_measure_trials=2 * len(tasks), num_measures_per_round=4, verbose=0,
                             runner=LocalRunner(timeout=10, min_repeat_ms=2),
                             measure_callbacks=[ans.RecordToFile(log)])
    result = ans.TaskScheduler(tasks, weights).tune(opts)

    untuned = ans.graph.build(g, "llvm", verbose=False)
    tuned = ans.graph.build(g, "llvm", log=log, verbose=False)
    measured = {}  # (workload key, state key) -> the log's best time of that state
    for inp, res in load_records(log):
        if res.ok:
            k = (inp.task.workload_key, _key(inp.state))
            measured[k] = min(measured.get(k, np.inf), res.mean_cost)
    assert len(tuned.groups) == len(untuned.groups)
    for before, after in zip(untuned.groups, tuned.groups):
        default = _key(before.state)
        assert default == _key(_default(before.task)[1]), before  # the untuned build runs the default
        assert (after.task.workload_key, default) in measured, f"{after}: the default was not measured"
        if _key(after.state) != default:
            assert after.tuned and after.mean_cost < measured[(after.task.workload_key, default)], after
    assert not tuned.default_faster  # the log measured every default: nothing was timed at build
    # The estimate's "before" is the untuned network's: the defaults' times.
    assert all(r.default_name == _default(t)[0] for t, r in zip(tasks, result.task_results))
    assert all(r.baseline_cost == measured[(t.workload_key, _key(_default(t)[1]))]
               for t, r in zip(tasks, result.task_results))
    assert result.latency_after <= result.latency_before
    x = RNG.standard_normal((1, 8, 16, 16)).astype(np.float32)
    np.testing.assert_allclose(tuned(x)[0], g.evaluate(x)[0], rtol=1e-4, atol=1e-4)


def _conv_graph():
    g = Graph("conv")
    x = g.add_input("data", (1, 16, 32, 32))
    w = g.add_constant("w", (RNG.standard_normal((32, 16, 3, 3)) * 0.2).astype(np.float32))
    g.set_outputs([g.add_node("conv2d", [x, w], dict(pads=1), name="conv")])
    return g


def test_build_runs_the_default_where_the_logs_record_is_slower(tmp_path, capsys):
    """A log holding only the plain loop nest of the convolution, measured, as an older version's tuning left a
    task given one trial: build times it against the default, runs the default and says so in one line."""
    g = _conv_graph()
    tasks, _ = ans.extract_tasks(g, "llvm")
    conv = next(t for t in tasks if "conv2d" in t.desc)
    plain = dict(search.default_schedules(conv))["plain"]
    log = str(tmp_path / "old.json")
    res, = measure(conv, [plain], runner=LocalRunner(timeout=30, min_repeat_ms=2))
    assert res.ok, res.error_msg
    ans.RecordToFile(log)([ans.MeasureInput(conv, plain)], [res])

    net = ans.graph.build(g, "llvm", log=log)
    line = capsys.readouterr().out.strip().splitlines()[-1]
    group = next(info for info in net.groups if info.task.workload_key == conv.workload_key)
    assert _key(group.state) == _key(_default(conv)[1]) and not group.tuned
    assert net.default_faster == [group] and group not in net.untuned
    record_s, default_s = group.default_faster
    assert record_s > default_s
    assert line.startswith("1 group(s) run the default schedule, faster than the log's best record: ")
    assert conv.desc in line and line in net.note
    x = RNG.standard_normal((1, 16, 32, 32)).astype(np.float32)
    np.testing.assert_allclose(net(x)[0], g.evaluate(x)[0], rtol=1e-4, atol=1e-4)

    # The artifact keeps the choice; check_defaults=False runs the record as it is, timing nothing.
    path = str(tmp_path / "conv.so")
    net.export_library(path)
    loaded = ans.graph.load_module(path)
    assert [info.default_faster is not None for info in loaded.groups] == [
        info.default_faster is not None for info in net.groups]
    trusting = ans.graph.build(g, "llvm", log=log, verbose=False, check_defaults=False)
    group = next(info for info in trusting.groups if info.task.workload_key == conv.workload_key)
    assert group.tuned and _key(group.state) == _key(plain) and not trusting.default_faster


def test_cli_run_says_which_groups_run_the_default(tmp_path, capsys):
    """`autosched run model.onnx --log` with a log whose only record of the matmul is its plain loop nest: the
    network runs the default, and the command says so in one line."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    from autosched.cli import main
    from autosched.frontends import from_onnx

    model = str(tmp_path / "mm.onnx")
    # Both operands are inputs (a matmul task, B laid out K x N): its parallel default runs about 1 ms, its
    # plain loop nest about 30 ms, a gap that holds while another process keeps a core busy. (With a constant
    # weight the task is a dense layer, whose parallel default walks the weight across K and here runs slower
    # than its plain loop nest: build's timing then rightly keeps the record.)
    graph = helper.make_graph([helper.make_node("MatMul", ["data", "W"], ["out"])], "mm",
                              [helper.make_tensor_value_info("data", TensorProto.FLOAT, [64, 1024]),
                               helper.make_tensor_value_info("W", TensorProto.FLOAT, [1024, 256])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [64, 256])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
    task, = ans.extract_tasks(from_onnx(model), "llvm")[0]
    plain = dict(search.default_schedules(task))["plain"]
    res, = measure(task, [plain], runner=LocalRunner(timeout=30, min_repeat_ms=2))
    assert res.ok, res.error_msg
    log = str(tmp_path / "old.json")
    ans.RecordToFile(log)([ans.MeasureInput(task, plain)], [res])

    assert main(["run", model, "--log", log, "--number", "1", "--repeat", "1"]) == 0
    captured = capsys.readouterr()
    assert f"1 group(s) run the default schedule, faster than the log's best record: {task.desc} x1 (" in \
        captured.out, captured.out + captured.err


@pytest.mark.parametrize("shape", [(3, 40, 1500), (2, 5, 13), (4, 64)])
def test_a_row_softmax_gets_the_per_row_expert(shape):
    """Softmax's row maximum and sum keep their reduced dimension (extent 1): no register block (it would
    vectorize across rows, each lane loading another row); the expert computes every stage per output row with
    the reductions factored over whole vectors of the row (guarded where none divides 1500), and computes
    softmax."""
    x = ans.te.placeholder(shape, name="x")
    task = ans.SearchTask(compute_dag=ans.ComputeDAG([x, ans.ops.softmax(x, axis=-1)]), target="llvm",
                          desc="softmax")
    state, reason, how = search.expert_schedule_info(task)
    assert state is not None, reason
    assert how.startswith("rows:"), how
    assert search.default_schedules(task)[0][0] == search.EXPERT
    assert sum(1 for line in str(state).splitlines() if line[:1] not in (" ", "") and
               not line.startswith("Placeholder")) == 1, str(state)  # one loop nest: all per row
    xv = RNG.standard_normal(shape).astype("float32")
    out = np.zeros(shape, "float32")
    ans.build(task, state)(xv, out)
    e = np.exp(xv - xv.max(-1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-6)
