"""The public API as an IDE sees it: explicit, annotated keywords on the constructors and tuning methods (the
options classes of the core too, from their field lists), a misspelled keyword that names the right one, one
name for the time budget (time_budget, seconds or "10m"; time_budget_s its alias), and HardwareParams that take
the host's defaults for every field not given."""
import ast
import inspect
import os
import pathlib
import subprocess
import sys

import pytest

import autosched as ans
from autosched import _core
from autosched.frontends import torch_compile
from autosched.tune.options import TUNING_PARAMS_KEYWORDS
from test_task_scheduler import FAST, make_task, matmul, options, three_tasks

ROOT = pathlib.Path(__file__).resolve().parents[2]
EMPTY = inspect.Parameter.empty


def _annotated_keywords(callable_):
    """{name: Parameter} of a callable's parameters but self; fails on *args / **kwargs or a missing annotation."""
    parameters = {}
    for p in inspect.signature(callable_).parameters.values():
        if p.name == "self":
            continue
        assert p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD), f"{callable_}: *{p.name} hides its keywords"
        assert p.annotation is not EMPTY, f"{callable_}: {p.name} has no annotation"
        parameters[p.name] = p
    return parameters


def test_tuning_options_list_every_field_of_the_core_with_its_default():
    parameters = _annotated_keywords(ans.TuningOptions)
    core_defaults = _core.TuningParams().to_dict()
    assert set(TUNING_PARAMS_KEYWORDS) == set(_core.TuningParams.field_names)
    for field, keyword in TUNING_PARAMS_KEYWORDS.items():
        assert parameters[keyword].default == core_defaults[field], field
    python_fields = {"builder", "runner", "measure_callbacks", "transfer_logs", "time_budget_s"}
    assert set(parameters) == set(TUNING_PARAMS_KEYWORDS.values()) | python_fields
    assert all(p.kind == p.KEYWORD_ONLY for p in parameters.values())
    assert ans.TuningOptions().to_dict() == core_defaults


@pytest.mark.parametrize("callable_", [ans.TaskScheduler, ans.TaskScheduler.tune, ans.SearchTask.tune, ans.tune.tune,
                                       ans.SearchTask])
def test_tuning_entry_points_have_annotated_keywords(callable_):
    parameters = _annotated_keywords(callable_)
    assert inspect.signature(callable_).return_annotation is not EMPTY
    if callable_ is not ans.SearchTask:
        assert callable_ is ans.TaskScheduler or {"time_budget", "time_budget_s"} <= set(parameters)


def test_search_task_tune_returns_a_tune_result():
    assert inspect.signature(ans.SearchTask.tune).return_annotation == "TuneResult"
    assert inspect.signature(ans.TaskScheduler.tune).return_annotation is ans.TaskSchedulerResult


@pytest.mark.parametrize("cls", [ans.HardwareParams, ans.SearchParams, ans.LocalBuilder])
def test_the_core_options_classes_show_their_fields(cls):
    parameters = _annotated_keywords(cls)
    fields = [name for name in parameters if name != "target"]
    assert sorted(fields) == sorted(cls.field_names)
    assert all(p.default is None for p in parameters.values())  # None: the field's default


@pytest.mark.parametrize("cls, options_class, explicit", [
    (ans.LocalRunner, _core.RunnerOptions, {"inject_faults", "enable_cpu_cache_flush"}),
    (ans.RayRunner, _core.RunnerOptions, {"inject_faults", "enable_cpu_cache_flush", "resources", "num_actors",
                                          "batch_size", "max_retries", "actor_start_timeout_s", "deadline_slack_s"}),
    (ans.XGBModel, _core.XGBModelParams, {"params", "pretrained"})])
def test_classes_taking_options_by_keyword_show_those_fields(cls, options_class, explicit):
    """LocalRunner, RayRunner and XGBModel pass **keywords to a core options class: their signature lists its
    fields (RunnerOptions' faults are set by inject_faults), so an IDE completes them."""
    parameters = inspect.signature(cls).parameters
    assert not any(p.kind == p.VAR_KEYWORD for p in parameters.values())
    fields = set(options_class.field_names) - {"faults"}
    assert set(parameters) == fields | explicit
    assert all(parameters[name].kind == inspect.Parameter.KEYWORD_ONLY for name in fields)


@pytest.mark.parametrize("function", [ans.evaluate, ans.evaluate_points, ans.register_workload, ans.ComputeDAG,
                                      ans.MeasureInput, ans.RecordToFile, ans.RandomModel, ans.SketchPolicy,
                                      ans.State.split, ans.State.fuse, ans.State.compute_at, ans.State.cache_write,
                                      ans.ComputeDAG.get_init_state])
def test_public_functions_are_annotated(function):
    signature = inspect.signature(function)
    assert signature.return_annotation is not EMPTY, function
    assert all(p.annotation is not EMPTY for name, p in signature.parameters.items() if name != "self"), function


def _stub_classes():
    tree = ast.parse((ROOT / "python" / "autosched" / "_core.pyi").read_text())
    return {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}


@pytest.mark.parametrize("name", ["HardwareParams", "SearchParams", "LocalBuilder", "TuningParams"])
def test_the_core_stub_lists_the_fields_of_the_built_module(name):
    """_core.pyi (what an IDE and mypy read for the compiled core) has every field as an attribute and a keyword,
    in the order of the field list, with the type of its value."""
    cls = getattr(_core, name)
    node = _stub_classes()[name]
    attributes = {n.target.id: ast.unparse(n.annotation) for n in node.body if isinstance(n, ast.AnnAssign)}
    init = next(n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    keywords = [a.arg for a in init.args.args[1:] + init.args.kwonlyargs if a.arg != "target"]
    assert keywords == list(cls.field_names)
    assert set(attributes) == set(cls.field_names) | {"field_names"}
    for field, value in cls().to_dict().items():
        expected = {bool: "bool", int: "int", float: "float", str: "str", list: "List[int]"}.get(type(value))
        if expected is not None:
            assert attributes[field] == expected, field


# ---- did you mean ----

@pytest.mark.parametrize("call, wrong, right", [
    (lambda: ans.TuningOptions(num_measure_trails=10), "num_measure_trails", "num_measure_trials"),
    (lambda: ans.TuningOptions(time_budget_sec=10), "time_budget_sec", "time_budget_s"),
    (lambda: ans.TaskScheduler([make_task(matmul(8), "mm")], stratgy="gradient"), "stratgy", "strategy"),
    (lambda: ans.TaskScheduler([make_task(matmul(8), "mm")]).tune(options(4), time_bugdet="1m"),
     "time_bugdet", "time_budget"),
    (lambda: make_task(matmul(8), "mm").tune(options(4), cost_modle="random"), "cost_modle", "cost_model"),
    (lambda: ans.HardwareParams(num_cors=2), "num_cors", "num_cores"),
    (lambda: ans.HardwareParams(vector_unit_byte=64), "vector_unit_byte", "vector_unit_bytes"),
    (lambda: ans.SearchParams(eps_gredy=0.1), "eps_gredy", "eps_greedy"),
    (lambda: ans.LocalBuilder(timout=3), "timout", "timeout"),
    (lambda: torch_compile._checked_options({"time_budgt": "5m"}), "time_budgt", "time_budget"),
    (lambda: torch_compile._checked_options({"num_measure_trial": 8}), "num_measure_trial", "num_measure_trials"),
])
def test_a_misspelled_keyword_names_the_right_one(call, wrong, right):
    with pytest.raises(TypeError) as info:
        call()
    assert f"'{wrong}' (did you mean '{right}'?)" in str(info.value), str(info.value)


def test_a_keyword_like_none_gets_no_guess():
    with pytest.raises(TypeError) as info:
        ans.TuningOptions(zzz=1)
    assert str(info.value) == "TuningOptions got an unknown keyword 'zzz'"


# ---- one name for the time budget ----

@pytest.mark.parametrize("given, seconds", [(90, 90.0), (2.5, 2.5), ("90s", 90.0), ("10m", 600.0), ("1h", 3600.0)])
def test_time_budget_takes_seconds_or_a_duration(given, seconds):
    assert ans.TuningOptions(time_budget=given).time_budget_s == seconds
    assert ans.TuningOptions(time_budget_s=given).time_budget == seconds  # the alias
    assert torch_compile._checked_options({"time_budget": given})["time_budget"] == seconds
    assert torch_compile._checked_options({"time_budget_s": given})["time_budget"] == seconds
    o = ans.TuningOptions()
    o.time_budget = given
    assert o.time_budget_s == seconds


def test_time_budget_and_its_alias_together_or_wrong_are_refused():
    with pytest.raises(TypeError, match="give time_budget or its alias time_budget_s, not both"):
        ans.TuningOptions(time_budget="1m", time_budget_s=60)
    with pytest.raises(TypeError, match="not both"):
        torch_compile._checked_options({"time_budget": "1m", "time_budget_s": 60})
    with pytest.raises(TypeError, match="num_measure_trials or its alias trials, not both"):
        torch_compile._checked_options({"num_measure_trials": 8, "trials": 8})
    with pytest.raises(ValueError, match="TuningOptions: time_budget: .*expected a duration such as 90s"):
        ans.TuningOptions(time_budget="ten minutes")
    with pytest.raises(ValueError, match="TuningOptions: time_budget must be positive, got -3"):
        ans.TuningOptions(time_budget=-3)
    with pytest.raises(TypeError, match="time_budget must be seconds or a duration"):
        ans.TuningOptions(time_budget=[60])
    assert torch_compile._checked_options({"trials": 8})["num_measure_trials"] == 8


def test_a_tuning_call_takes_its_own_time_budget():
    tasks = three_tasks(32)
    opts = options(100000, per_round=4, verbose=0)
    result = ans.TaskScheduler(tasks, cost_model="random").tune(opts, search_policy_params=FAST, time_budget="1.5s")
    assert result.stop_reason.startswith("time budget of 1.5 s used"), result.stop_reason
    assert opts.time_budget_s is None  # the caller's options are left as they are
    task = tasks[0]
    result = task.tune(options(100000, per_round=4, verbose=0), cost_model="random", time_budget=1.5)
    assert result.stop_reason.startswith("time budget of 1.5 s used"), result.stop_reason


# ---- HardwareParams: the host's defaults for every field not given ----

def test_hardware_params_take_the_hosts_defaults_for_the_fields_not_given():
    host = ans.Target("llvm").hardware_params
    assert ans.HardwareParams() == host
    for position, field in enumerate(ans.HardwareParams.field_names):
        value = getattr(host, field) + 1
        params = ans.HardwareParams(**{field: value})
        assert getattr(params, field) == value
        for other in ans.HardwareParams.field_names:
            if other != field:
                assert getattr(params, other) == getattr(host, other), (field, other)
    few_cores = ans.HardwareParams(num_cores=2)
    assert few_cores.vector_unit_bytes == host.vector_unit_bytes  # 64 on an AVX-512 host, not 32
    assert few_cores.num_vector_registers == host.num_vector_registers
    assert ans.HardwareParams(2, 16).cache_line_bytes == host.cache_line_bytes


def test_a_users_misspelled_keyword_is_flagged_by_a_type_checker(tmp_path):
    """What an IDE sees: mypy, reading the package's hints and _core.pyi, flags a misspelled keyword of
    TuningOptions and HardwareParams and knows what SearchTask.tune returns."""
    pytest.importorskip("mypy")
    script = tmp_path / "user.py"
    script.write_text("import autosched as ans\n"
                      "opts = ans.TuningOptions(num_measure_trails=10)\n"
                      "hw = ans.HardwareParams(num_cors=2)\n"
                      "task = ans.SearchTask(func='f', args=(1,), target='llvm')\n"
                      "n: int = task.tune(ans.TuningOptions(time_budget='10m'))\n"
                      "w: str = ans.HardwareParams(num_cores=2).vector_unit_bytes\n")
    env = dict(os.environ, MYPYPATH=str(ROOT / "python"))
    proc = subprocess.run([sys.executable, "-m", "mypy", "--ignore-missing-imports", "--follow-imports=silent",
                           "--no-incremental", str(script)], capture_output=True, text=True, timeout=600,
                          cwd=tmp_path, env=env)
    out = proc.stdout
    assert 'user.py:2: error: Unexpected keyword argument "num_measure_trails" for "TuningOptions"' in out, out
    assert 'user.py:3: error: Unexpected keyword argument "num_cors" for "HardwareParams"' in out, out
    assert 'user.py:5: error: Incompatible types in assignment (expression has type "TuneResult"' in out, out
    assert 'user.py:6: error: Incompatible types in assignment (expression has type "int"' in out, out
