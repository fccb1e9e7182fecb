"""The default search policies of TaskScheduler and task.tune size the evolutionary search to the round
(tune.share.round_search_params); SearchParams a user gives are used as given."""
import pytest

import autosched as ans
from autosched import te
from autosched.search import SearchParams
from autosched.tune.share import ROUND_POPULATION_MIN, ROUND_POPULATION_PER_STATE, round_search_params

DEFAULT = SearchParams().evolutionary_search_population


def _task(n=8):
    A = te.placeholder((n, n), name="A")
    return ans.SearchTask(compute_dag=ans.ComputeDAG([A, te.compute((n, n), lambda i, j: A[i, j] * 2, name="B")]),
                          target="llvm")


@pytest.mark.parametrize("n", [1, 4, 16, 24, 64, 512])
def test_population_follows_the_round(n):
    params = round_search_params(n)
    want = min(DEFAULT, max(ROUND_POPULATION_MIN, n * ROUND_POPULATION_PER_STATE))
    assert params.evolutionary_search_population == want
    assert params.num_measures_per_round == n
    # the other knobs keep their defaults
    assert params.evolutionary_search_num_iters == SearchParams().evolutionary_search_num_iters
    assert params.sample_init_min_population == SearchParams().sample_init_min_population
    assert round_search_params(16).evolutionary_search_population < DEFAULT  # a scheduler round searches less


def test_task_scheduler_sizes_its_default_policies_and_keeps_given_params():
    tasks = [_task(8), _task(12)]
    sched = ans.TaskScheduler(tasks, cost_model="random")
    opts = ans.TuningOptions(num_measure_trials=32, num_measures_per_round=16, verbose=0)
    for p in sched._policies(opts, None, None):
        assert p.params.evolutionary_search_population == round_search_params(16).evolutionary_search_population
        assert p.params.num_measures_per_round == 16
    given = SearchParams(evolutionary_search_population=3000, num_measures_per_round=16)
    for p in sched._policies(opts, None, given):
        assert p.params.evolutionary_search_population == 3000
    for p in sched._policies(opts, None, {"evolutionary_search_num_iters": 7}):
        assert p.params.evolutionary_search_population == DEFAULT
        assert p.params.evolutionary_search_num_iters == 7


def test_task_tune_sizes_its_default_policy(monkeypatch):
    seen = []
    real = ans.tune.scheduler.SketchPolicy

    def spy(task, model, params, *args, **kw):
        seen.append(params.evolutionary_search_population)
        return real(task, model, params, *args, **kw)

    monkeypatch.setattr(ans.tune.scheduler, "SketchPolicy", spy)
    ans.tune.tune(_task(), ans.TuningOptions(num_measure_trials=2, num_measures_per_round=2, verbose=0),
                   cost_model="random")
    assert seen == [round_search_params(2).evolutionary_search_population]
