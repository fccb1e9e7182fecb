"""Tasks with constant arguments (a network's weights): extract_tasks marks them, records keep them, and the
measurement computes the stages that read only them once before timing the kernel, as graph.build does. The
results must stay equal to the reference on awkward shapes, whatever the schedule does with the weights."""
import numpy as np
import pytest

import autosched as ans
from autosched import _core
from autosched.graph.extract import lower_graph
from autosched.measure import measure

from test_graph_prepack import _schedule, awkward_net


@pytest.fixture(scope="module")
def lowered():
    return lower_graph(awkward_net(), "llvm", layout="NCHW")


def test_extract_marks_the_constant_inputs(lowered):
    constants = lowered.graph.constants
    marked = 0
    for group, task in zip(lowered.groups, lowered.group_tasks):
        want = [i for i, v in enumerate(group.inputs) if v in constants]
        assert list(task.constant_args) == want
        marked += bool(want)
    assert marked >= 3  # the convolutions, the dense and the matmul read weights


def test_constant_args_survive_json_and_records(lowered, tmp_path):
    task = next(t for t in lowered.tasks if t.constant_args)
    again = ans.SearchTask.from_json(task.to_json())
    assert list(again.constant_args) == list(task.constant_args)
    log = str(tmp_path / "log.json")
    state = task.compute_dag.get_init_state()
    ans.records.save_records(log, [ans.MeasureInput(task, state)], [ans.MeasureResult(costs=[1e-3])])
    ((inp, _),) = ans.records.load_records(log)
    assert list(inp.task.constant_args) == list(task.constant_args)
    plain = ans.SearchTask(compute_dag=task.compute_dag, target="llvm")
    assert "constant_args" not in plain.to_json()  # records of tasks without them are as before


@pytest.mark.parametrize("variant", [0, 1, 2])
def test_measured_with_the_constant_stages_split_off(lowered, variant):
    """Packed at the root, cached at a loop, packed at a loop: each state's constant stages are split off in
    the worker (split_constant_stages finds them) and the kernel's output still equals the reference."""
    constants = lowered.graph.constants
    done, split = set(), 0
    for group, task in zip(lowered.groups, lowered.group_tasks):
        if task.workload_key in done or not task.constant_args:
            continue
        done.add(task.workload_key)
        state = _schedule(task, group, constants, variant)
        _, stage_ids, _, _ = _core.split_constant_stages(state, list(task.constant_args))
        split += bool(stage_ids)
        (res,) = measure(task, [state])
        assert res.error == "none", f"{task.desc}, variant {variant}: {res.error}: {res.error_msg}"
        assert res.costs and all(np.isfinite(c) and c > 0 for c in res.costs)
    assert split >= 3


def test_bad_constant_args_are_refused(lowered):
    task = next(t for t in lowered.tasks if t.constant_args)
    dag = task.compute_dag
    with pytest.raises(ValueError, match="out of range"):
        ans.SearchTask(compute_dag=dag, target="llvm", constant_args=[len(dag.tensors)])
    with pytest.raises(ValueError, match="computed, not an input"):
        ans.SearchTask(compute_dag=dag, target="llvm", constant_args=[len(dag.tensors) - 1])
    with pytest.raises(TypeError, match="constant_args"):
        ans.SearchTask(compute_dag=dag, target="llvm", constant_args="01")
