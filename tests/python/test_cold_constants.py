"""Cold constants: a network whose weights exceed the last-level cache reads each kernel's weights from memory
on every inference, so its tasks are timed with the weights (and their packed copies) evicted from the caches
before each run. extract_tasks decides it from the cache size, records keep it, and the measured kernels stay
equal to the reference on awkward shapes."""
import numpy as np
import pytest

import autosched as ans
from autosched.graph.extract import constant_bytes, constants_exceed_cache, last_level_cache_bytes, lower_graph
from autosched.measure import measure

from test_graph_prepack import _schedule, awkward_net


def _params(l3_bytes, l2_bytes=0):
    """The host's parameters with the given cache sizes."""
    return ans.HardwareParams(target="llvm", l2_cache_bytes=l2_bytes, l3_cache_bytes=l3_bytes)


@pytest.fixture(scope="module")
def net():
    return awkward_net()


def test_auto_follows_the_last_level_cache(net):
    weight_bytes = constant_bytes(net)
    assert weight_bytes == sum(np.asarray(v).nbytes for v in net.constants.values()) > 0
    assert last_level_cache_bytes("llvm", _params(3 << 20, 1 << 20)) == 3 << 20
    assert last_level_cache_bytes("llvm", _params(0, 1 << 20)) == 1 << 20
    assert last_level_cache_bytes("llvm", ans.HardwareParams(l3_cache_bytes=-1)) == \
        ans.HardwareParams(target="llvm").l3_cache_bytes  # -1, unresolved: the target's own
    assert constants_exceed_cache(net, "llvm", _params(weight_bytes // 2))
    assert not constants_exceed_cache(net, "llvm", _params(weight_bytes * 2))
    assert constants_exceed_cache(net, "llvm", _params(0, l2_bytes=weight_bytes // 2))  # no L3: the L2
    assert not constants_exceed_cache(net, "llvm", _params(0))  # sizes unknown: warm
    assert not constants_exceed_cache(net, "opencl")
    small, _ = ans.extract_tasks(net, "llvm", hardware_params=_params(weight_bytes // 2))
    large, _ = ans.extract_tasks(net, "llvm", hardware_params=_params(weight_bytes * 2))
    assert [t.cold_constants for t in small] == [bool(t.constant_args) for t in small]
    assert any(t.cold_constants for t in small)
    assert not any(t.cold_constants for t in large)
    # The workload keys do not change: a log tuned either way builds the network.
    assert [t.workload_key for t in small] == [t.workload_key for t in large]


def test_forced_on_and_off(net):
    on, _ = ans.extract_tasks(net, "llvm", cold_constants=True)
    off, _ = ans.extract_tasks(net, "llvm", hardware_params=_params(1), cold_constants=False)
    assert [t.cold_constants for t in on] == [bool(t.constant_args) for t in on]
    assert not any(t.cold_constants for t in off)
    gpu, _ = ans.extract_tasks(net, "opencl", cold_constants=True)
    assert not any(t.cold_constants for t in gpu)  # GPU tasks have no constant arguments
    with pytest.raises(ValueError, match="cold_constants must be True, False or 'auto'"):
        ans.extract_tasks(net, "llvm", cold_constants="yes")
    task = on[0]
    with pytest.raises(TypeError, match="cold_constants"):
        ans.SearchTask(compute_dag=task.compute_dag, target="llvm", cold_constants=1)


def test_kept_by_json_and_records(net, tmp_path):
    tasks, _ = ans.extract_tasks(net, "llvm", cold_constants=True)
    task = next(t for t in tasks if t.cold_constants)
    assert ans.SearchTask.from_json(task.to_json()).cold_constants
    log = str(tmp_path / "log.json")
    ans.records.save_records(log, [ans.MeasureInput(task, task.compute_dag.get_init_state())],
                             [ans.MeasureResult(costs=[1e-3])])
    ((inp, _),) = ans.records.load_records(log)
    assert inp.task.cold_constants and list(inp.task.constant_args) == list(task.constant_args)


@pytest.mark.parametrize("variant", [0, 1, 2])
def test_measured_cold_and_correct(variant):
    """Packed at the root, cached at a loop, packed at a loop: the weights and their packed copies are evicted
    before each run, and every kernel's output still equals the reference."""
    lowered = lower_graph(awkward_net(), "llvm", layout="NCHW", cold_constants=True)
    constants = lowered.graph.constants
    done = set()
    for group, task in zip(lowered.groups, lowered.group_tasks):
        if task.workload_key in done or not task.constant_args:
            continue
        done.add(task.workload_key)
        assert task.cold_constants
        (res,) = measure(task, [_schedule(task, group, constants, variant)])
        assert res.error == "none", f"{task.desc}, variant {variant}: {res.error}: {res.error_msg}"
        assert res.costs and all(np.isfinite(c) and c > 0 for c in res.costs)
    assert len(done) >= 3
