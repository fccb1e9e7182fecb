"""Network caches: a network's kernel finds its weights pushed out of the core's private caches by the kernels
before it, and its input written by all the cores, where a warm timing loop finds both in each core's L2. Tasks
of a graph are timed that way (SearchTask.network_caches): extract_tasks sets it on CPU targets, records keep
it, and the measured kernels stay equal to the reference on awkward shapes."""
import numpy as np
import pytest

import autosched as ans
from autosched.graph.extract import lower_graph
from autosched.measure import measure

from test_graph_prepack import _schedule, awkward_net


@pytest.fixture(scope="module")
def net():
    return awkward_net()


def test_set_on_cpu_targets_by_default(net):
    on, _ = ans.extract_tasks(net, "llvm")
    off, _ = ans.extract_tasks(net, "llvm", network_caches=False)
    gpu, _ = ans.extract_tasks(net, "opencl")
    assert on and all(t.network_caches for t in on)
    assert not any(t.network_caches for t in off)
    assert not any(t.network_caches for t in gpu)
    # The workload keys do not change: a log tuned either way builds the network.
    assert [t.workload_key for t in on] == [t.workload_key for t in off]
    with pytest.raises(TypeError, match="network_caches"):
        ans.extract_tasks(net, "llvm", network_caches="yes")
    with pytest.raises(TypeError, match="network_caches"):
        ans.SearchTask(compute_dag=on[0].compute_dag, target="llvm", network_caches=1)


def test_kept_by_json_and_records(net, tmp_path):
    tasks, _ = ans.extract_tasks(net, "llvm")
    task = tasks[0]
    assert ans.SearchTask.from_json(task.to_json()).network_caches
    assert not ans.SearchTask(compute_dag=task.compute_dag, target="llvm").network_caches
    log = str(tmp_path / "log.json")
    ans.records.save_records(log, [ans.MeasureInput(task, task.compute_dag.get_init_state())],
                             [ans.MeasureResult(costs=[1e-3])])
    ((inp, _),) = ans.records.load_records(log)
    assert inp.task.network_caches


@pytest.mark.parametrize("cold", [False, True])
@pytest.mark.parametrize("variant", [0, 2])
def test_measured_and_correct(variant, cold):
    """Weights packed at the root or inside the loops, with and without cold constants: each timed run starts
    with the caches refilled and the inputs rewritten, and every kernel's output still equals the reference
    (the worker verifies it before timing)."""
    lowered = lower_graph(awkward_net(), "llvm", layout="NCHW", cold_constants=cold, network_caches=True)
    constants = lowered.graph.constants
    done = set()
    for group, task in zip(lowered.groups, lowered.group_tasks):
        if task.workload_key in done:
            continue
        done.add(task.workload_key)
        assert task.network_caches
        state = _schedule(task, group, constants, variant) if task.constant_args else task.compute_dag.get_init_state()
        (res,) = measure(task, [state], runner=ans.LocalRunner(repeat=2))
        assert res.error == "none", f"{task.desc}, variant {variant}: {res.error}: {res.error_msg}"
        assert len(res.costs) == 2 and all(np.isfinite(c) and c > 0 for c in res.costs)
    assert len(done) >= 3
