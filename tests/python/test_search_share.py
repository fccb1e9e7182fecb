"""TuningOptions.search_time_share: the session sizes each round's search population to the share left, and a
deferred XGBModel trains when its turn comes (tune/share.py, SearchShare: the round's _core.RoundParams, the
policy's own SearchParams never changed); the pieces it uses
(SketchPolicy.set_population, XGBModel.defer_training / untrained_programs / train_pending) on their own."""
import math
import time

import pytest

import autosched as ans
from autosched import te
from autosched.tune.budget import TimeBudget
from autosched.search.cost_model import XGBModel, XGBModelParams
from autosched.search import SearchParams, SketchPolicy
from autosched.tune import task_tuner
from autosched.tune.share import (CARRIED_FIRST_GENERATION, POPULATION_FLOOR, STALE_GROWTH, TRAINING_PART,
                                  SearchShare)
import cost_model_data as data

pytestmark = pytest.mark.skipif(not ans._core.has_xgboost(), reason="needs XGBoost")


def _matmul_task(n=24, m=20, k=13):
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return ans.SearchTask(compute_dag=ans.ComputeDAG([A, B, C]), target="llvm")


def _measured_pairs():
    """Recorded (input, result) pairs of a matmul and a conv (tests/records)."""
    return data.recorded(data.RANKING_LOG)


def test_the_share_is_an_option_checked_like_the_others():
    assert ans.TuningOptions().search_time_share == 0.15
    with pytest.raises(ValueError, match="search_time_share"):
        ans.TuningOptions(search_time_share=1.5)


def test_set_population_changes_the_next_rounds_and_rejects_zero():
    policy = SketchPolicy(_matmul_task(), params=SearchParams(evolutionary_search_population=300))
    policy.set_population(70)
    assert policy.params.evolutionary_search_population == 70
    with pytest.raises(ValueError, match="at least 1"):
        policy.set_population(0)
    policy.continue_search_one_round(4)
    stats = policy.last_round  # the sampling is a part of the search's seconds
    assert stats["sampled"] > 0 and 0 < stats["sample_seconds"] <= stats["search_seconds"]


def test_set_generations_and_carry_over_change_the_next_rounds_and_reject_a_negative_count():
    policy = SketchPolicy(_matmul_task(), params=SearchParams(evolutionary_search_num_iters=4))
    policy.set_generations(1)
    assert policy.params.evolutionary_search_num_iters == 1
    with pytest.raises(ValueError, match="generation"):
        policy.set_generations(-1)
    assert policy.params.evolutionary_search_num_iters == 1
    policy.set_carry_over(True)
    assert policy.params.evolutionary_search_carry_over


def test_deferred_model_adds_programs_and_trains_when_asked():
    inputs, results = _measured_pairs()
    inputs, results = inputs[:40], results[:40]
    model = XGBModel(params=XGBModelParams(num_warmup_samples=10))
    model.defer_training = True
    model.update(inputs[:30], results[:30])
    assert not model.trained and model.untrained_programs == 30
    assert model.train_pending() and model.trained and model.untrained_programs == 0
    assert not model.train_pending()  # nothing new
    model.update(inputs[30:], results[30:])
    assert model.untrained_programs == len(inputs) - 30
    model.defer_training = False
    model.update([], [])  # an update with deferral off trains what waits
    assert model.untrained_programs == 0


def test_deferred_model_keeps_the_warm_up():
    inputs, results = _measured_pairs()
    inputs, results = inputs[:8], results[:8]
    model = XGBModel(params=XGBModelParams(num_warmup_samples=100))
    model.defer_training = True
    model.update(inputs, results)
    assert not model.train_pending() and not model.trained and model.untrained_programs == len(inputs)


def _session(monkeypatch, share, trials=64, per_round=16):
    """Tunes a matmul with its own policy; returns (policy, model, result, (population, bred generations,
    carried states) of each search round, the policy's SearchParams seen after each round)."""
    task = _matmul_task()
    model = XGBModel(params=XGBModelParams(num_warmup_samples=16))
    policy = SketchPolicy(task, model, SearchParams(evolutionary_search_population=400,
                                                    num_measures_per_round=per_round))
    populations, after = [], []
    take = task_tuner.TaskTuner.take_round

    def seen(self, rnd):
        if rnd.searched:
            stats = self.policy.last_round
            populations.append((rnd.population, stats["generations"] - 1, stats["carried"]))
        after.append(self.policy.params.to_dict())
        return take(self, rnd)

    monkeypatch.setattr(task_tuner.TaskTuner, "take_round", seen)
    opts = ans.TuningOptions(num_measure_trials=trials, num_measures_per_round=per_round, verbose=0,
                             search_time_share=share)
    result = ans.tune.tune(task, opts, search_policy=policy)
    return policy, model, result, populations, after


def test_a_small_share_shrinks_the_population_to_the_floor_and_trains_anyway(monkeypatch):
    policy, model, result, populations, after = _session(monkeypatch, share=1e-6)
    # the first round takes the policy's population; the later rounds the floor, each going on from the task's
    # last generation with one generation of its own
    assert populations[0] == (400, 4, 0) and populations[-1][:2] == (POPULATION_FLOOR, 1)
    assert populations[-1][2] == POPULATION_FLOOR
    # the rounds' parameters were the rounds' own: the policy's SearchParams never changed
    assert all(p == policy.params.to_dict() for p in after)
    assert policy.params.evolutionary_search_population == 400
    assert policy.params.evolutionary_search_num_iters == 4 and not policy.params.evolutionary_search_carry_over
    assert result.best_cost is not None
    assert not model.defer_training  # the session gave the model back
    # trained although the share left nothing: a quarter more programs forces a training
    assert model.trained and model.untrained_programs <= STALE_GROWTH * model.num_samples + 16


def test_share_one_keeps_the_policys_population_and_trains_every_round(monkeypatch):
    policy, model, _, populations, _ = _session(monkeypatch, share=1.0)
    assert set(populations) == {(400, 4, 0)} and policy.params.evolutionary_search_population == 400
    assert model.untrained_programs == 0 and not model.defer_training


class _FakeTuner:
    """What SearchShare reads of a TaskTuner: the result's seconds and trials, the policy."""

    def __init__(self, policy):
        self.policy = policy
        self.result = type("R", (), {})()
        self.result.seconds = {"measure": 0.0, "search": 0.0, "cost_model": 0.0}
        self.result.trials = 0


def test_round_params_follow_the_seconds_left_and_leave_the_policy_alone():
    policy = SketchPolicy(_matmul_task(), params=SearchParams(evolutionary_search_population=2000))
    own = policy.params.to_dict()
    tt = _FakeTuner(policy)
    share = SearchShare([tt], 0.2)  # 0.25 s of choosing per measured second
    params = share.round_params(tt, 16)  # nothing searched yet: the policy's own population
    assert params.num_measure == 16 and params.population is None and params.generations is None
    share.seconds_per_state[id(tt)] = 1e-4  # 5 generations of a state: 0.5 ms
    tt.result.seconds["measure"], tt.result.trials = 100.0, 100
    params = share.round_params(tt, 16)  # (100 + 16) s measured: 29 s, of which the search has its part
    want = int((0.25 * 116 * (1 - TRAINING_PART)) / (1e-4 * 5))
    assert params.population == min(2000, want)
    assert params.generations is None and params.carry_over is None  # the policy's own
    tt.result.seconds["search"] = 1000.0  # far over the account: the floor, going on from the last generation
    params = share.round_params(tt, 16)
    assert params.population == POPULATION_FLOOR and params.carry_over and params.generations == 1
    # a little left, not enough for the floor population bred anew: more generations going on from the last
    tt.result.seconds["search"] = 0.0
    left = 0.25 * 116 * (1 - TRAINING_PART)
    share.seconds_per_state[id(tt)] = left / (POPULATION_FLOOR * (CARRIED_FIRST_GENERATION + 2.5))
    params = share.round_params(tt, 16)
    assert params.population == POPULATION_FLOOR and params.generations == 2 and params.carry_over
    share.seconds_per_state[id(tt)] = 1e-4  # plenty again: the policy's own search
    params = share.round_params(tt, 16)
    assert params.population > POPULATION_FLOOR and params.generations is None and params.carry_over is None
    # the parameters are the rounds': the policy's SearchParams are what it was made with
    assert policy.params.to_dict() == own


def test_train_pending_on_every_core_keeps_the_prediction_threads():
    inputs, results = _measured_pairs()
    model = XGBModel(params=XGBModelParams(num_warmup_samples=10))
    model.defer_training = True
    model.update(inputs, results)
    assert model.train_pending(threads=0) and model.trained
    assert model.params.xgboost_threads == 1
    single = XGBModel(params=XGBModelParams(num_warmup_samples=10))
    single.update(inputs, results)
    task = inputs[0].task
    states = [i.state for i in inputs if i.task.workload_key == task.workload_key][:50]
    a, b = model.predict(task, states), single.predict(task, states)
    assert len(a) == len(states) and all(math.isfinite(x) for x in a)
    # the same data and trees up to the order of floating-point sums
    assert max(abs(x - y) for x, y in zip(a, b)) <= 1e-3 * max(1.0, max(abs(y) for y in b))
    with pytest.raises(ValueError, match="threads"):
        model.train_pending(threads=-2)


def test_no_training_starts_that_would_end_after_the_time_budget():
    inputs, results = _measured_pairs()
    model = XGBModel(params=XGBModelParams(num_warmup_samples=10))
    policy = SketchPolicy(_matmul_task(), model, SearchParams(evolutionary_search_population=64))
    policy.continue_search_one_round(4)
    tt = _FakeTuner(policy)
    tt.result.seconds["measure"], tt.result.trials = 100.0, 100  # the share's account has plenty left
    past = TimeBudget(1.0, start=time.monotonic() - 2)
    share = SearchShare([tt], 0.5, past)
    model.update(inputs[:40], results[:40])
    assert model.defer_training and model.untrained_programs == 40
    share.after_round(tt, 64)
    assert not model.trained and model.untrained_programs == 40
    assert share.trainings == 0 and "training that would end after it was deferred" in past.stop_reason()
    share.time_budget = TimeBudget(3600.0)  # within the budget: trained
    share.after_round(tt, 64)
    assert model.trained and share.trainings == 1
    share.close()
    assert not model.defer_training


def test_a_training_stops_boosting_at_its_deadline_and_its_programs_wait():
    inputs, results = _measured_pairs()
    model = XGBModel(params=XGBModelParams(num_warmup_samples=10))
    model.defer_training = True
    model.update(inputs, results)
    assert not model.train_pending(deadline_s=0.0) and not model.trained  # past it: no training starts
    # Packing the data and the first round take longer than a millisecond: boosting stops after that round.
    assert model.train_pending(deadline_s=0.001)
    report = model.last_training
    assert report.cut_at_deadline and report.rounds == 1 and model.trained, report
    assert model.untrained_programs == model.num_samples  # they wait for a whole training
    assert model.train_pending() and not model.last_training.cut_at_deadline and model.last_training.rounds > 1
    assert model.untrained_programs == 0
