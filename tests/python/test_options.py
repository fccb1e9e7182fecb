"""The seam between Python and the core: options structs (SearchParams, LocalBuilder / LocalRunner,
XGBModelParams) come from one field list in C++, with keyword construction, defaults and range checks stated
once there; strings convert to Target wherever one is expected; states reach the core through one helper."""
import pickle

import pytest

import autosched as ans
from autosched import _core, search
from autosched.search import cost_model as cm
from autosched import measure as am
from schedule_helpers import matmul

OPTIONS = [ans.SearchParams, ans.LocalBuilder, ans.LocalRunner, cm.XGBModelParams, am.FaultInjection]


def test_options_are_the_core_types():
    assert ans.SearchParams is _core.SearchParams and search.SearchParams is _core.SearchParams
    assert ans.LocalBuilder is _core.LocalBuilder and cm.XGBModelParams is _core.XGBModelParams
    # LocalRunner adds only Python sugar (inject_faults, the kept worker processes) to the core's options.
    assert issubclass(ans.LocalRunner, _core.RunnerOptions)


@pytest.mark.parametrize("cls", OPTIONS)
def test_every_field_is_a_keyword_with_its_default(cls):
    default = cls()
    assert cls.field_names and set(default.to_dict()) == set(cls.field_names)
    again = cls(**{name: getattr(default, name) for name in cls.field_names})
    assert again == default and repr(again) == repr(default)
    assert repr(default).startswith(cls.__name__ + "(")


@pytest.mark.parametrize("cls", OPTIONS)
def test_unknown_keywords_are_refused(cls):
    with pytest.raises(TypeError, match="unknown keyword 'no_such_field'"):
        cls(no_such_field=1)


@pytest.mark.parametrize("cls, field, bad, words", [
    (ans.SearchParams, "eps_greedy", 1.5, "eps_greedy must be in [0, 1], got 1.5"),
    (ans.SearchParams, "evolutionary_search_population", 0, "evolutionary_search_population must be at least 1"),
    (ans.SearchParams, "auto_unroll_candidates", [16, -1], "every value of auto_unroll_candidates must not be"),
    (ans.LocalBuilder, "timeout", 0, "timeout must be positive, got 0"),
    (ans.LocalBuilder, "n_parallel", -2, "n_parallel must not be negative"),
    (ans.LocalRunner, "number", 0, "number must be at least 1"),
    (ans.LocalRunner, "cooldown_s", -1.0, "cooldown_s must not be negative"),
    (cm.XGBModelParams, "eta", 0, "eta must be in (0, 1], got 0"),
    (cm.XGBModelParams, "validation_fraction", 1.0, "validation_fraction must be in [0, 1), got 1"),
])
def test_values_out_of_range_are_a_value_error_naming_the_field(cls, field, bad, words):
    with pytest.raises(ValueError) as info:
        cls(**{field: bad})
    assert words in str(info.value)
    options = cls()
    with pytest.raises(ValueError) as info:  # the setters check like the constructor
        setattr(options, field, bad)
    assert words in str(info.value) and options == cls()


@pytest.mark.parametrize("cls, field, bad, words", [
    (ans.SearchParams, "max_vectorize_size", 4.0, "max_vectorize_size must be an int"),
    (ans.SearchParams, "gpu_vectorize", 1, "gpu_vectorize must be True or False"),
    (ans.SearchParams, "cpu_tiling_structure", 5, "cpu_tiling_structure must be a string"),
    (ans.SearchParams, "auto_unroll_candidates", 16, "auto_unroll_candidates must be a list"),
    (ans.LocalRunner, "timeout", "10", "timeout must be a number"),
    (ans.LocalRunner, "flush_cache", "yes", "flush_cache must be True or False"),
    (cm.XGBModelParams, "max_depth", True, "max_depth must be an int"),
])
def test_values_of_the_wrong_type_are_a_type_error_naming_the_field(cls, field, bad, words):
    with pytest.raises(TypeError, match=words):
        cls(**{field: bad})
    with pytest.raises(TypeError, match=words):
        setattr(cls(), field, bad)


def test_none_keeps_the_default():
    assert ans.LocalBuilder(n_parallel=None) == ans.LocalBuilder()
    assert ans.LocalRunner(peak_flops=None, peak_bandwidth=None).peak_flops == 0


@pytest.mark.parametrize("cls", [ans.SearchParams, ans.LocalBuilder, cm.XGBModelParams, am.FaultInjection])
def test_options_pickle(cls):
    name = cls.field_names[0]
    options = cls()
    value = getattr(options, name)
    setattr(options, name, value + "R" if isinstance(value, str) else value * 2 + 1)
    again = pickle.loads(pickle.dumps(options))
    assert again == options and again != cls()


def test_search_params_reach_the_policy():
    dag, _ = matmul(16, 16, 16)
    task = ans.SearchTask(compute_dag=dag, target="llvm")
    params = ans.SearchParams(max_vectorize_size=4, evolutionary_search_population=64)
    policy = search.SketchPolicy(task, "random", params)
    assert policy.params == params and policy.params.max_vectorize_size == 4


def test_fault_shares_are_checked_together():
    with pytest.raises(ValueError, match="add up to more than 1"):
        am.FaultInjection(crash=0.6, hang=0.6)
    runner = ans.LocalRunner(inject_faults={"crash": 0.25}, fault_seed=4)
    assert runner.faults == am.FaultInjection(crash=0.25) and runner.fault_seed == 4
    assert am.FAULT_KINDS == am.FaultInjection.field_names


def test_runner_restarts_its_workers_when_its_options_change():
    dag, _ = matmul(8, 8, 8)
    task = ans.SearchTask(compute_dag=dag, target="llvm")
    builder, runner = ans.LocalBuilder(n_parallel=1), ans.LocalRunner(timeout=10, min_repeat_ms=1)
    first = runner._measurer_for(builder)
    assert runner._measurer_for(builder) is first
    runner.number = 2
    second = runner._measurer_for(builder)
    assert second is not first
    builder.timeout = 20
    assert runner._measurer_for(builder) is not second
    (r,) = am.measure(task, [dag.get_init_state()], builder, runner)
    assert r.error == "none", r.error_msg
    runner.close()


def test_strings_convert_to_target_wherever_one_is_expected():
    dag, _ = matmul(8, 8, 8)
    assert _core.default_hardware_params("llvm -num-cores=3").num_cores == 3
    assert ans.HardwareParams(target="llvm -num-cores=3").num_cores == 3
    assert _core.SearchTask(dag, "llvm -num-cores=3").target == ans.Target("llvm -num-cores=3")


@pytest.mark.parametrize("call", [
    lambda dag: _core.default_hardware_params("cuda"),
    lambda dag: _core.SearchTask(dag, "cuda"),
    lambda dag: ans.HardwareParams(target="cuda"),
])
def test_a_malformed_target_string_is_a_value_error_naming_it(call):
    dag, _ = matmul(8, 8, 8)
    with pytest.raises(ValueError, match="unknown target kind 'cuda'"):
        call(dag)
