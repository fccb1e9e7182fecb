"""The rule of the seam between Python and the core (docs/architecture.md): the object Python has is the core's
object (the bound class, or a Python subclass of it), never a holder of one; what the core returns comes out as
the class users know; options structs, HardwareParams among them, are bound from their one field list."""
import copy
import json
import pickle

import pytest

import autosched as ans
from autosched import _core, search
from autosched.search import cost_model as cm
from schedule_helpers import matmul

HOLDER_NAMES = ("_core", "core", "_policy", "_model", "_state")


def assert_is_core_object(obj, core_class):
    assert isinstance(obj, core_class), f"{type(obj).__name__} is not a {core_class.__name__}"
    held = [name for name in HOLDER_NAMES if name in getattr(obj, "__dict__", {}) or name in dir(type(obj))]
    assert not held, f"{type(obj).__name__} holds {held}"


def test_states_dags_policies_and_models_are_the_core_objects():
    dag, C = matmul(8, 6, 4)
    task = ans.SearchTask(compute_dag=dag, target="llvm")
    state = task.compute_dag.get_init_state()
    assert type(state) is ans.State and type(task.compute_dag) is ans.ComputeDAG
    assert_is_core_object(state, _core.LoopState)
    assert_is_core_object(task.compute_dag, _core.ComputeDAG)
    policy = search.SketchPolicy(task, "random")
    assert_is_core_object(policy, _core.SketchPolicy)
    assert_is_core_object(policy.cost_model, _core.RandomModel)
    assert isinstance(policy.cost_model, cm.CostModel)
    if _core.has_xgboost():
        assert_is_core_object(cm.XGBModel(), _core.XGBModel)


def test_what_the_core_returns_is_handed_out_as_the_python_class():
    dag, C = matmul(8, 6, 4)
    task = ans.SearchTask(compute_dag=dag, target="llvm")
    policy = search.SketchPolicy(task, "random")
    states, _ = policy.sample_init_population(3, seed=1)
    sketches = policy.generate_sketches()
    mutated, _, _ = search.mutate(task, states[0], seed=2)
    handed_out = states + sketches + search.baseline_states(task) + [
        _core.LoopState.from_json(dag, states[0].to_json()), copy.copy(states[0]),
        dag.infer_bound(states[0]), pickle.loads(pickle.dumps(states[0]))]
    handed_out += [mutated] if mutated is not None else []
    assert all(type(s) is ans.State for s in handed_out), [type(s) for s in handed_out]
    dags = [states[0].dag, states[0].init_dag, task.compute_dag, _core.ComputeDAG.from_json(dag.to_json()),
            pickle.loads(pickle.dumps(dag))]
    assert all(type(d) is ans.ComputeDAG for d in dags), [type(d) for d in dags]
    # States go into the core as they are: scores, features and the policy's bookkeeping take them.
    assert len(policy.cost_model.predict(task, states)) == 3
    assert len(cm.extract_features(task, states[:1])) == 1
    assert not policy.is_measured(states[0])


def test_a_state_handed_out_is_a_value_of_its_own():
    dag, C = matmul(8, 6, 4)
    task = ans.SearchTask(compute_dag=dag, target="llvm")
    first = task.compute_dag.get_init_state()
    first.split(C, 0, [2])
    again = _core.LoopState.from_json(dag, first.to_json())
    again.parallel(C, 0)  # changes `again` only
    assert first.num_steps == 1 and again.num_steps == 2 and again != first
    assert again.stages[2].iters[0].annotation == "parallel" and first.stages[2].iters[0].annotation == "none"


def test_a_refused_step_leaves_the_state_as_it_was():
    dag, C = matmul(8, 6, 4)
    s = dag.get_init_state()
    s.split(C, 0, [2])
    before = s.to_json()
    with pytest.raises(ValueError, match="step 1"):
        s.reorder(C, [0, 0, 1, 2])
    assert s.to_json() == before


def test_only_the_python_classes_of_states_and_dags_can_be_registered():
    with pytest.raises(TypeError, match="derives from no core class"):
        _core._hand_out_as(int)


# ---- HardwareParams from its field list ----

def test_hardware_params_are_an_options_struct_of_the_one_field_list():
    names = ans.HardwareParams.field_names
    assert names[:3] == ("num_cores", "vector_unit_bytes", "cache_line_bytes") and "fma_units" in names
    p = ans.HardwareParams()
    assert p.to_dict() == {name: getattr(p, name) for name in names}
    host = ans.Target("llvm").hardware_params
    assert p == host and p.warp_size == 0  # a field not given: the host's default
    q = ans.HardwareParams(num_cores=host.num_cores + 2, l2_cache_bytes=None)  # None keeps the default
    assert q.num_cores == host.num_cores + 2 and q.l2_cache_bytes == host.l2_cache_bytes and q != p
    assert repr(q).startswith(f"HardwareParams(num_cores={host.num_cores + 2}, "
                              f"vector_unit_bytes={host.vector_unit_bytes}")
    back = pickle.loads(pickle.dumps(q))
    assert back == q and ans.HardwareParams.from_json(q.to_json()) == q
    assert json.loads(q.to_json()) == q.to_dict()


@pytest.mark.parametrize("make, error, words", [
    (lambda: ans.HardwareParams(num_cores=-2), ValueError,
     "HardwareParams: num_cores must not be negative (-1: take it from the target), got -2"),
    (lambda: ans.HardwareParams(warp_size="8"), TypeError, "HardwareParams: warp_size must be an int, got '8'"),
    (lambda: ans.HardwareParams(fma_units=True), TypeError, "HardwareParams: fma_units must be an int"),
    (lambda: ans.HardwareParams(l3_cache_bytes=2**64), ValueError, "HardwareParams: l3_cache_bytes is too large"),
    (lambda: ans.HardwareParams(cores=2), TypeError, "HardwareParams got an unknown keyword 'cores'"),
    (lambda: ans.HardwareParams.from_json('{"warp_size": 1.5}'), ValueError,
     "HardwareParams: warp_size must be an integer, got 1.5"),
    (lambda: ans.HardwareParams.from_json('{"cores": 1}'), ValueError, "HardwareParams: unknown field 'cores'"),
])
def test_hardware_params_checks_name_the_field(make, error, words):
    with pytest.raises(error) as info:
        make()
    assert words in str(info.value)


def test_hardware_params_setters_check_like_the_constructor():
    p = ans.HardwareParams()
    p.max_threads_per_block = 256
    assert p.max_threads_per_block == 256
    with pytest.raises(ValueError, match="max_threads_per_block must not be negative"):
        p.max_threads_per_block = -5
    assert p.max_threads_per_block == 256


def test_hardware_params_minus_one_takes_the_target_value():
    mali = "opencl -device=mali"
    defaults = ans.HardwareParams(target=mali)
    p = ans.HardwareParams(-1, 16, target=mali)  # resolved at once where a target is given
    assert p.num_cores == defaults.num_cores and p.vector_unit_bytes == 16
    later = ans.HardwareParams(-1, 16)  # else when the task is made
    assert later.num_cores == -1
    dag, _ = matmul(8, 8, 8)
    task = ans.SearchTask(compute_dag=dag, target=mali, hardware_params=later)
    assert task.hardware_params.num_cores == defaults.num_cores and task.hardware_params.vector_unit_bytes == 16


def test_tuning_options_are_the_core_tuning_params_with_python_fields():
    assert issubclass(ans.TuningOptions, _core.TuningParams)
    assert _core.TuningParams.field_names == ("num_measure_trials", "num_measures_per_round", "early_stopping",
                                              "time_budget_s", "verbose", "peak_gflops", "search_time_share",
                                              "transfer_seeds")
    o = ans.TuningOptions(num_measure_trials=8, early_stopping=None, measure_callbacks=[print])
    assert (o.num_measure_trials, o.num_measures_per_round, o.early_stopping, o.time_budget_s) == (8, 64, None, None)
    assert o.peak_gflops is None and o.verbose == 1 and o.transfer_seeds is True
    o.time_budget_s = 2.5
    o.early_stopping = 3
    back = pickle.loads(pickle.dumps(o))
    assert back.time_budget_s == 2.5 and back.early_stopping == 3 and back.measure_callbacks == [print]
    assert copy.deepcopy(o) == o and repr(o).startswith("TuningOptions(num_measure_trials=8,")
    o.early_stopping = None
    assert o.early_stopping is None


@pytest.mark.parametrize("make, error, words", [
    (lambda: ans.TuningOptions(num_measures_per_round=0), ValueError, "TuningOptions: num_measures_per_round must"),
    (lambda: ans.TuningOptions(early_stopping=0), ValueError, "TuningOptions: early_stopping must be at least 1"),
    (lambda: ans.TuningOptions(time_budget_s=-1.0), ValueError, "TuningOptions: time_budget_s must be positive"),
    (lambda: ans.TuningOptions(peak_gflops="many"), TypeError, "TuningOptions: peak_gflops must be a number"),
    (lambda: ans.TuningOptions(verbose=True), TypeError, "TuningOptions: verbose must be an int"),
    (lambda: ans.TuningOptions(trials=3), TypeError, "TuningOptions got an unknown keyword 'trials'"),
])
def test_tuning_options_checks_name_the_field(make, error, words):
    with pytest.raises(error) as info:
        make()
    assert words in str(info.value)
    o = ans.TuningOptions()
    with pytest.raises(ValueError, match="time_budget_s must be positive"):
        o.time_budget_s = 0
