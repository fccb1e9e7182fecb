"""Sketch rules written in Python: they go before the built-in rules, their sketches come first and the states
sampled from them compute what numpy and the reference evaluator compute; "skip" changes nothing; an exception
in a rule is a SketchRuleError naming it; a result of the wrong type is a TypeError; tuning runs with them."""
import gc
import json
import threading
import weakref

import numpy as np
import pytest

import autosched as ans
from autosched import search, te
from autosched.search import SketchRuleCondition

from schedule_helpers import check, matmul_tensors

HAS_LLVM = ans._core.has_llvm()


def _task(tensors):
    hardware = ans.HardwareParams(target="llvm", num_cores=4)
    return ans.SearchTask(compute_dag=ans.ComputeDAG(tensors), target="llvm", hardware_params=hardware)


def matmul_task(n=32, m=24, k=16):
    return _task(matmul_tensors(n, m, k))


def exp_scale_task(n=12, m=20):
    """T = exp(X), Y = T * 2 + T mirrored along its rows (not inlined by the built-in rules: exp is expensive,
    and Y reads T at two elements)."""
    x = te.placeholder((n, m), name="X")
    t = te.compute((n, m), lambda i, j: te.exp(x[i, j]), name="T")
    y = te.compute((n, m), lambda i, j: t[i, j] * 2.0 + t[i, m - 1 - j], name="Y")
    return _task([x, y])


def steps(state):
    return json.loads(state.to_json())


class InlineT(search.SketchRule):
    """Inlines stage T, which the built-in rules leave as its own loop nest."""
    name = "inline-exp"

    def __init__(self):
        self.calls = 0

    def condition(self, policy, state, stage_id):
        self.calls += 1
        assert isinstance(policy, search.SketchPolicy) and isinstance(state, ans.State)
        if state.stages[stage_id].name == "T" and state.stages[stage_id].compute_at == "root":
            return SketchRuleCondition.APPLY_AND_SKIP_REST
        return SketchRuleCondition.SKIP

    def apply(self, policy, state, stage_id):
        state.compute_inline(stage_id)
        return [(state, stage_id - 1)]


def split_rows_condition(policy, state, stage_id):
    return "apply" if state.stages[stage_id].name == "C" else "skip"


def split_rows_apply(policy, state, stage_id):
    """Two sketches: C's rows split in 2 with an unknown inner length, and split by 4 with the columns too."""
    i, j, k = state[stage_id].iters
    first = state.copy()
    first.split(stage_id, i, [None])
    second = state.copy()
    io, ii = second.split(stage_id, i, [4])
    jo, ji = second.split(stage_id, j, [None])
    second.reorder(stage_id, [io, jo, k, ii, ji])
    return [(first, stage_id - 1), (second, stage_id - 1)]


def test_user_rule_inlines_a_stage_and_sampled_states_match_numpy():
    task = exp_scale_task()
    dag = task.compute_dag
    default = search.generate_sketches(task)
    assert all(s["T"].compute_at == "root" for s in default)
    rule = InlineT()
    policy = search.SketchPolicy(task, sketch_rules=[rule])
    assert policy.sketch_rule_names[:2] == ["inline-exp", "always-inline"]
    sketches = policy.generate_sketches()
    assert sketches[0]["T"].compute_at == "inlined" and rule.calls > 0
    assert len(sketches) == 1  # ApplyAndSkipRest: the built-in rules were not asked at T
    states, drops = policy.sample_init_population(8, seed=1)
    assert states and set(drops) <= {"duplicate"}, drops
    x = np.random.default_rng(0).standard_normal((12, 20)).astype("float32")
    for state in states:
        assert state["T"].compute_at == "inlined"
        if HAS_LLVM:
            y = np.zeros_like(x)
            ans.build(dag, state)(x, y)
            np.testing.assert_allclose(y, np.exp(x) * 2 + np.exp(x)[:, ::-1], rtol=1e-5)
            np.testing.assert_allclose(y, ans.evaluate(dag, [x])[0], rtol=1e-5)


@pytest.mark.needs_llvm
def test_user_rule_sketches_come_first_and_built_in_ones_follow():
    task = matmul_task()
    default = [s.to_json() for s in search.generate_sketches(task)]
    policy = search.SketchPolicy(task)
    policy.add_sketch_rule(split_rows_condition, split_rows_apply, name="split-rows")
    sketches = policy.generate_sketches()
    # "apply": the rule's two sketches first, then the built-in ones (which also see its results at C's
    # cache stage, C.local, and so on: at least the default sketches follow).
    assert steps(sketches[0]) == [["SP", 2, 0, 32, [None], True]]
    assert [r[0] for r in steps(sketches[1])] == ["SP", "SP", "RE"]
    assert set(default) <= {s.to_json() for s in sketches[2:]}
    for k in range(2):
        states, drops = search.sample_init_population(task, 6, seed=k, sketches=[sketches[k]])
        assert states and set(drops) <= {"duplicate"}, drops
        for state in states:
            first = steps(state)[0]
            assert first[:4] == ["SP", 2, 0, 32] and None not in first[4]
            check(task.compute_dag, state)


def test_skip_leaves_the_sketches_unchanged():
    task = matmul_task()
    default = [s.to_json() for s in search.generate_sketches(task)]
    asked = []

    def never(policy, state, stage_id):
        asked.append(stage_id)
        return "skip"

    def apply(policy, state, stage_id):
        raise AssertionError("apply of a skipped rule")

    policy = search.SketchPolicy(task, sketch_rules=[search.SketchRule()])  # the base class skips
    policy.add_sketch_rule(never, apply, name="never")
    assert policy.sketch_rule_names[:2] == ["SketchRule", "never"]
    assert [s.to_json() for s in policy.generate_sketches()] == default
    assert 2 in asked and policy.rule_failures == []
    # The same through the module function, with the enum.
    enum_skip = type("EnumSkip", (), {"condition": lambda self, p, s, i: SketchRuleCondition.SKIP,
                                      "apply": lambda self, p, s, i: []})()
    assert [s.to_json() for s in search.generate_sketches(task, sketch_rules=[enum_skip])] == default


class Fails(search.SketchRule):
    name = "fails-at-C"

    def __init__(self, where):
        self.where = where

    def condition(self, policy, state, stage_id):
        if self.where == "condition":
            return {}["missing"]
        return "apply"

    def apply(self, policy, state, stage_id):
        state.compute_inline("C")  # C is an output: the core refuses it
        return [(state, stage_id - 1)]


@pytest.mark.parametrize("where", ["condition", "apply"])
def test_an_exception_in_a_user_rule_is_an_error_naming_it(where):
    task = matmul_task()
    policy = search.SketchPolicy(task, sketch_rules=[Fails(where)])
    with pytest.raises(search.SketchRuleError, match=f"sketch rule 'fails-at-C' raised .* in its {where}") as err:
        policy.generate_sketches()
    assert isinstance(err.value.__cause__, KeyError if where == "condition" else ValueError)
    # Sampling and the search rounds generate sketches too (with the GIL released): the same error.
    with pytest.raises(search.SketchRuleError, match="fails-at-C"):
        policy.sample_init_population(4)
    with pytest.raises(search.SketchRuleError, match="fails-at-C"):
        policy.continue_search_one_round(4)


def _policy_with(condition_result=SketchRuleCondition.APPLY, apply_result=None):
    def condition(policy, state, stage_id):  # asked at C first (the last stage)
        return condition_result if state.stages[stage_id].name == "C" else "skip"

    def apply(policy, state, stage_id):
        return apply_result(state, stage_id) if callable(apply_result) else apply_result

    policy = search.SketchPolicy(matmul_task())
    policy.add_sketch_rule(condition, apply, name="odd")
    return policy


@pytest.mark.parametrize("value", [True, None, 1, "maybe", [SketchRuleCondition.APPLY]])
def test_a_bad_condition_is_a_type_error(value):
    with pytest.raises(TypeError, match=r"sketch rule 'odd': its condition must return a SketchRuleCondition"):
        _policy_with(condition_result=value).generate_sketches()


@pytest.mark.parametrize("result, message", [
    (None, "must return a list of"),
    (lambda s, i: s, "must return a list of"),
    (lambda s, i: [s], "got the item"),
    (lambda s, i: [(s, i - 1, 0)], "got the item"),
    (lambda s, i: [("state", i - 1)], "returned str where a State goes"),
    (lambda s, i: [(s, "1")], "next stage id '1'"),
    (lambda s, i: [(s, 1.0)], "next stage id 1.0"),
])
def test_a_bad_apply_result_is_a_type_error(result, message):
    with pytest.raises(TypeError, match=f"sketch rule 'odd': its apply .*{message}"):
        _policy_with(apply_result=result).generate_sketches()


@pytest.mark.parametrize("result, message", [
    (lambda s, i: [(s, 7)], "next stage id 7"),
    (lambda s, i: [(s, i)], "never end"),
    (lambda s, i: [(matmul_task(8, 8, 8).compute_dag.get_init_state(), i - 1)], "another compute DAG"),
    (lambda s, i: [(s.copy(), i)] if s.split(i, 0, [1]) else [], "did not finish"),
])
def test_results_the_search_cannot_use_are_value_errors(result, message):
    with pytest.raises(ValueError, match=message):
        _policy_with(apply_result=result).generate_sketches()


def test_bad_rules_are_refused_when_added():
    policy = search.SketchPolicy(matmul_task())
    with pytest.raises(TypeError, match="condition and apply"):
        policy.add_sketch_rule(object())
    with pytest.raises(TypeError, match="callable"):
        policy.add_sketch_rule(split_rows_condition, "apply", name="x")
    with pytest.raises(TypeError, match="list of sketch rules"):
        search.SketchPolicy(matmul_task(), sketch_rules=InlineT())
    policy.add_sketch_rule(split_rows_condition, split_rows_apply, name="split-rows")
    with pytest.raises(ValueError, match="already has a rule named 'split-rows'"):
        policy.add_sketch_rule(split_rows_condition, split_rows_apply, name="split-rows")
    with pytest.raises(ValueError, match="already has a rule named 'skip-stage'"):
        policy.add_sketch_rule(split_rows_condition, split_rows_apply, name="skip-stage")


def test_generation_in_another_thread_and_no_reference_cycle():
    task = exp_scale_task()
    rule = InlineT()
    policy = search.SketchPolicy(task, sketch_rules=[rule])
    out = []
    worker = threading.Thread(target=lambda: out.append(policy.generate_sketches()))
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive() and out and out[0][0]["T"].compute_at == "inlined"
    alive = weakref.ref(rule)
    del policy, rule, out
    gc.collect()
    assert alive() is None  # the policy does not keep itself (and the rule) alive


@pytest.mark.needs_llvm
def test_tune_with_a_user_rule(tmp_path):
    task = exp_scale_task(64, 48)
    rule = InlineT()
    params = search.SearchParams(evolutionary_search_population=64, evolutionary_search_num_iters=1,
                                 sample_init_min_population=16)
    policy = search.SketchPolicy(task, "random", params, seed=0, sketch_rules=[rule])
    log = str(tmp_path / "t.json")
    runner = ans.LocalRunner(timeout=10, min_repeat_ms=1)
    opts = ans.TuningOptions(num_measure_trials=10, num_measures_per_round=8, runner=runner,
                             measure_callbacks=[ans.RecordToFile(log)], verbose=0)
    result = task.tune(opts, search_policy=policy)
    assert result.best_cost is not None and rule.calls > 0
    baseline = {s.to_json() for s in search.baseline_states(task, params)}
    searched = [inp.state for inp, _ in ans.records.load_records(log) if inp.state.to_json() not in baseline]
    # The rounds sample from the rule's sketch (T inlined); mutations of the measured baseline keep T.
    assert any(s["T"].compute_at == "inlined" for s in searched), searched
    x = np.random.default_rng(1).standard_normal((64, 48)).astype("float32")
    y = np.zeros_like(x)
    task.build_best(log)(x, y)
    np.testing.assert_allclose(y, np.exp(x) * 2 + np.exp(x)[:, ::-1], rtol=1e-5)
