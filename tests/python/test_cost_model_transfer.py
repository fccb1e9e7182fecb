"""The cost model starting from an earlier log: transfer from other tasks of the same target, resume from the
task's own records, and the cost model's share in the tuner's time report.

A 64^3 matmul (task A) was tuned for 64 trials into a log, a matmul of another shape (task B, 96x32x128) for
48 (random search, target "llvm -num-cores=1"); both logs are kept in tests/records/ (cost_model_data.py says
how they were made), so the quality test does not depend on the CPU that runs it or on its load: a model
trained from A's log alone (update_from_file) must rank the measured states of B better than chance. Records
of another target and failed ones in A's log are skipped and counted, a model holding records of another
target refuses to tune, and tuning B resumes from its log (live: that test asserts counts, not quality).
"""
import random

import pytest

import autosched as ans
from autosched import search
from autosched.search.cost_model import RandomModel, XGBModel, pairwise_accuracy

import cost_model_data as data

needs = pytest.mark.skipif(not (ans._core.has_llvm() and ans._core.has_xgboost()),
                           reason="needs the LLVM backend and XGBoost")
pytestmark = needs

TARGET = data.TRANSFER_TARGET


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """log1: the 64 kept records of task A (ok_a of them successful) plus 5 of another target and 3 failed
    ones; log_b: the 48 kept records of task B. The tasks are made here (as a user would), and have the
    workload keys of the recorded ones."""
    tmp = tmp_path_factory.mktemp("transfer")
    task_a, task_b = data.transfer_tasks()
    log1 = data.recorded_log(data.TRANSFER_LOGS["A"], tmp / "log1.json")
    log_b = data.recorded_log(data.TRANSFER_LOGS["B"], tmp / "log_b.json")
    records_a = ans.load_records(log1)
    assert len(records_a) == 64 and {inp.task.workload_key for inp, _ in records_a} == {task_a.workload_key}
    assert {inp.task.workload_key for inp, _ in ans.load_records(log_b)} == {task_b.workload_key}
    ok_a = sum(res.ok for _, res in records_a)
    states_a = [inp.state for inp, _ in records_a]
    # The same schedules, claimed far faster (yet plausibly: a loaded time below what the hardware allows
    # counts as failed) on another target: used, they would rank B by noise.
    other = data.transfer_task(64, 64, 64, "A", target="llvm")
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
    scores = model.predict(records[0][0].task, states)  # B as recorded, with the hardware it was measured on
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
    policy = search.SketchPolicy(task_b, model, search.SearchParams(**data.FAST), seed=2)
    opts = ans.TuningOptions(num_measure_trials=56, num_measures_per_round=8, runner=data.transfer_runner(),
                             measure_callbacks=[ans.RecordToFile(log)], transfer_logs=[log1, log],
                             verbose=2)  # 2: a line per round
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
