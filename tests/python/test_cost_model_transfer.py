"""The cost model starting from an earlier log: transfer from other tasks of the same target, resume from the
task's own records, and the cost model's share in the tuner's time report.

A 64^3 matmul (task A) is tuned for 64 trials into log1; a model trained from log1 alone (update_from_file)
must rank the measured states of a matmul of another shape (task B, 96x32x128) better than chance. The tasks
target "llvm -num-cores=1": single-threaded kernels, whose timings the other processes of a loaded 2-core
machine disturb far less than those of kernels that need both cores. Records of another target and failed
ones in log1 are skipped and counted, and a model holding records of another target refuses to tune.
About 20 s on a 2-core machine.
"""
import random

import pytest

import autosched as ans
from autosched import search, te
from autosched.cost_model import RandomModel, XGBModel, pairwise_accuracy
from autosched.measure import LocalRunner

needs = pytest.mark.skipif(not (ans._core.has_llvm() and ans._core.has_xgboost()),
                           reason="needs the LLVM backend and XGBoost")
pytestmark = needs

TARGET = "llvm -num-cores=1"
FAST = dict(evolutionary_search_population=128, evolutionary_search_num_iters=2, sample_init_min_population=32)


def matmul_task(n, m, k, desc, target=TARGET):
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return ans.SearchTask(compute_dag=ans.ComputeDAG([A, B, C]), target=target, desc=desc)


def runner():
    return LocalRunner(timeout=10, min_repeat_ms=5)


def tune_random(task, log, trials, seed):
    policy = search.SketchPolicy(task, "random", search.SearchParams(**FAST), seed=seed)
    opts = ans.TuningOptions(num_measure_trials=trials, num_measures_per_round=16, runner=runner(),
                             measure_callbacks=[ans.RecordToFile(log)], verbose=0)
    return task.tune(opts, search_policy=policy)


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """log1: 64 records of task A (ok_a of them successful) plus 5 of another target and 3 failed ones; log_b:
    48 records of task B."""
    tmp = tmp_path_factory.mktemp("transfer")
    task_a, task_b = matmul_task(64, 64, 64, "A"), matmul_task(96, 32, 128, "B")
    log1, log_b = str(tmp / "log1.json"), str(tmp / "log_b.json")
    tune_random(task_a, log1, 64, seed=1)
    tune_random(task_b, log_b, 48, seed=11)
    records_a = ans.load_records(log1)
    ok_a = sum(res.ok for _, res in records_a)
    states_a = [inp.state for inp, _ in records_a]
    # The same schedules, claimed far faster (yet plausibly: a loaded time below what the hardware allows
    # counts as failed) on another target: used, they would rank B by noise.
    other = matmul_task(64, 64, 64, "A", target="llvm")
    ans.records.save_records(log1, [ans.MeasureInput(other, s) for s in states_a[:5]],
                             [ans.MeasureResult(costs=[4e-6 * (i + 1)]) for i in range(5)])
    ans.records.save_records(log1, [ans.MeasureInput(task_a, s) for s in states_a[5:8]],
                             [ans.MeasureResult(error="runtime", error_msg="injected") for _ in range(3)])
    return task_a, task_b, log1, log_b, ok_a


def clear_pair_accuracy(scores, costs, ratio):
    """Share of pairs whose costs differ by `ratio` or more that the scores order right."""
    right = total = 0
    for i, ci in enumerate(costs):
        for j, cj in enumerate(costs):
            if cj >= ratio * ci:
                total += 1
                right += scores[i] > scores[j]
    return right / max(total, 1)


def test_model_from_another_task_ranks_states_of_b(logs):
    task_a, task_b, log1, log_b, ok_a = logs
    model = XGBModel(num_warmup_samples=0).update_from_file(log1, target=task_b.target)
    report = model.last_file_update
    assert (report.used, report.tasks, report.other_target, report.failed) == (ok_a, 1, 5, 67 - ok_a), report
    assert ok_a >= 56 and model.trained and model.num_samples == ok_a and model.targets == {TARGET}
    records = ans.load_records(log_b)
    states = [inp.state for inp, _ in records]
    costs = [res.mean_cost if res.ok else float("inf") for _, res in records]
    scores = model.predict(task_b, states)
    # Two random halves of B's states; pairs at least 1.5x apart, which timing noise rarely reorders.
    accuracy = []
    for seed in (0, 1):
        order = list(range(len(states)))
        random.Random(seed).shuffle(order)
        for half in (order[:len(order) // 2], order[len(order) // 2:]):
            accuracy.append(clear_pair_accuracy([scores[i] for i in half], [costs[i] for i in half], 1.5))
    mean = sum(accuracy) / len(accuracy)
    print(f"\ntransfer A -> B: {report}; accuracy on pairs 1.5x apart {mean:.3f} "
          f"({', '.join(f'{a:.3f}' for a in accuracy)}), on all pairs {pairwise_accuracy(scores, costs):.3f}")
    assert mean > 0.6, accuracy


def test_records_of_another_target_are_never_used(logs, tmp_path):
    task_a, task_b, log1, _, ok_a = logs
    only_other = str(tmp_path / "other.json")
    pairs = ans.load_records(log1)
    other = [(inp, res) for inp, res in pairs if inp.task.target.text != TARGET]
    ans.records.save_records(only_other, [i for i, _ in other], [r for _, r in other])
    model = XGBModel(num_warmup_samples=0).update_from_file(only_other, target=TARGET)
    assert model.last_file_update.used == 0 and model.last_file_update.other_target == 5
    assert model.num_samples == 0 and not model.trained
    # target=None takes the log's one target, and refuses to pick one from several.
    assert XGBModel().update_from_file(only_other).last_file_update.target == "llvm"
    with pytest.raises(ValueError, match="2 targets"):
        XGBModel().update_from_file(log1)
    # A model holding records of another target does not tune this one.
    foreign = XGBModel().update_from_file(only_other, target="llvm")
    with pytest.raises(ValueError, match="holds records of target 'llvm'"):
        task_b.tune(ans.TuningOptions(num_measure_trials=1, verbose=0), cost_model=foreign)
    with pytest.raises(ValueError, match="transfer log"):
        ans.TuningOptions(transfer_logs=[str(tmp_path / "missing.json")])


def test_tune_with_transfer_and_resume_reports_the_cost_model(logs, tmp_path, capsys):
    task_a, task_b, log1, log_b, ok_a = logs
    log = str(tmp_path / "b.json")
    ans.records.save_records(log, *zip(*ans.load_records(log_b)))  # 48 records of B to resume from
    model = XGBModel(num_warmup_samples=32, max_rounds=30)
    policy = search.SketchPolicy(task_b, model, search.SearchParams(**FAST), seed=2)
    opts = ans.TuningOptions(num_measure_trials=56, num_measures_per_round=8, runner=runner(),
                             measure_callbacks=[ans.RecordToFile(log)], transfer_logs=[log1, log])
    result = task_b.tune(opts, search_policy=policy)
    out = capsys.readouterr().out
    assert result.resumed_trials == 48 and result.trials == 56
    first, second = result.transferred
    assert (first.used, first.other_target, first.failed) == (ok_a, 5, 67 - ok_a)
    assert second.used == 0 and second.excluded == 48  # B's own records come through resume, once
    # ok_a transferred + 48 resumed + 8 measured: the resumed log reaches the model too.
    assert model.num_samples == ok_a + 48 + 8 and model.trained
    assert f"Transfer: the cost model starts from {ok_a} records of 1 tasks" in out
    assert f"(skipped: 5 of other targets, {67 - ok_a} failed)" in out
    round_lines = [line for line in out.splitlines() if line.startswith("[  round")]
    assert round_lines and all("cost model" in line for line in round_lines), out
    time_row = next(line for line in out.splitlines() if line.startswith("| time"))
    assert "cost model" in time_row and "%)" in time_row, time_row
    assert any(line.startswith("| transfer") for line in out.splitlines()), out


def test_random_model_takes_a_file_too(logs):
    _, task_b, log1, _, ok_a = logs
    model = RandomModel(1).update_from_file(log1, target=task_b)
    assert model.last_file_update.used == ok_a
