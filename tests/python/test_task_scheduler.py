"""TaskScheduler: three small tasks with weights all get a valid (correct) schedule, the gradient allocation
gives the rounds to the task with the largest weighted latency while round-robin takes turns, a table is
printed per round, a run killed with SIGKILL resumes from its log without measuring anything twice, the time
budget and per-task early stopping end the run with the reason printed, and a task whose every measurement
fails is given up and diagnosed with its error counts while the others still tune."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import re

import numpy as np
import pytest

import autosched as ans
from autosched import te
from autosched.tune.scheduler import _rounds_without_gain
from schedule_helpers import matmul_tensors

if not ans._core.has_llvm():
    pytest.skip("built without the LLVM backend", allow_module_level=True)

# Small search rounds keep CI fast on two cores.
FAST = dict(evolutionary_search_population=128, evolutionary_search_num_iters=2, sample_init_min_population=32)


def make_task(tensors, desc):
    return ans.SearchTask(compute_dag=ans.ComputeDAG(tensors), target="llvm", desc=desc)


def matmul(n, name="mm"):
    return matmul_tensors(n, n, n, name=name)


def add2():
    X = te.placeholder((2,), name="X")
    Y = te.placeholder((2,), name="Y")
    return [X, Y, te.compute((2,), lambda i: X[i] + Y[i], name="add")]


def rowprod():
    P = te.placeholder((6, 40), name="P")
    r = te.reduce_axis((0, 40), name="r")
    return [P, te.compute((6,), lambda i: te.prod(P[i, r], axis=r), name="rowprod")]


def three_tasks(n=64):
    return [make_task(matmul(n), f"matmul{n}"), make_task(add2(), "add2"), make_task(rowprod(), "rowprod")]


def runner(**kw):
    return ans.LocalRunner(timeout=kw.pop("timeout", 10), min_repeat_ms=kw.pop("min_repeat_ms", 5), **kw)


def options(trials, log=None, per_round=8, **kw):
    callbacks = [ans.RecordToFile(log)] if log else []
    return ans.TuningOptions(num_measure_trials=trials, num_measures_per_round=per_round,
                             runner=kw.pop("runner", None) or runner(), measure_callbacks=callbacks, **kw)


def check_best_is_correct(task, log, seed=0):
    rng = np.random.default_rng(seed)
    specs = ans.build(task).arg_specs
    arrays = [rng.uniform(0.99, 1.01, size=shape).astype(dtype) for _, dtype, shape in specs]
    ins, out = arrays[:-1], np.zeros_like(arrays[-1])
    task.build_best(log)(*ins, out)
    want = np.asarray(ans.evaluate(task.compute_dag, ins)[-1]).reshape(out.shape)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)


def test_weighted_slow_task_gets_the_rounds_and_every_task_a_valid_schedule(tmp_path, capsys):
    tasks = three_tasks()
    log = str(tmp_path / "net.json")
    scheduler = ans.TaskScheduler(tasks, [4, 1, 1], cost_model="random")
    result = scheduler.tune(options(72, log), search_policy_params=FAST)
    out = capsys.readouterr().out
    assert result.trials == 72 and result.stop_reason.startswith("reached num_measure_trials")
    # verbose 1: the table once, at the end, and a summary line in plain words.
    assert re.search(r"\| Latency \((ns|us|ms)\) \| Speed \(GFLOP/s\) \| Weight \| Trials", out), out
    assert out.count("|  ID |") == 1 and "Estimated total latency:" not in out, out
    assert re.search(r"^Tuned 3 tasks with 72 measurements in \d+ s; estimated network latency [0-9.]+ (us|ms) "
                     r"\(untuned [0-9.]+ (us|ms), ", out, re.M), out
    assert "Task scheduler summary" not in out
    for i, task in enumerate(tasks):
        assert result.task_results[i].best_cost is not None, i
        check_best_is_correct(task, log, seed=i)
    # Warm-up: baselines, then search rounds by weighted latency (warm_up_rounds); the two small tasks, each far
    # below an equal share of the latency, get none there, and the gradient gives the matmul the rounds.
    assert result.rounds[0] == 0 and result.rounds.count(0) >= len(result.rounds) - 1, result.rounds
    mm, add, prod = result.task_trials
    assert mm > 3 * prod and mm > 3 * add, result.task_trials
    assert result.latency_after <= result.latency_before
    assert len(ans.load_records(log)) == 72
    # The curve against time: a point per batch, the same estimates as against trials, the clock going forward.
    assert [c for _, c in result.time_history] == [c for _, c in result.history]
    seconds = [t for t, _ in result.time_history]
    assert seconds == sorted(seconds) and 0 < seconds[-1] <= result.seconds


def test_warm_up_rounds_go_to_the_tasks_with_a_share_of_the_latency_largest_first():
    class Tuner:
        def __init__(self, cost):
            self.result = type("R", (), {"best_cost": cost})()

    def session(costs):
        result = type("Result", (), {"latency_scales": [1.0] * len(costs)})()
        return type("Session", (), {"n": len(costs), "tuners": [Tuner(c) for c in costs], "result": result})()

    scheduler = ans.TaskScheduler(three_tasks(16) + [make_task(matmul(8), "mm8")], [1, 1, 2, 1])
    # Weighted latencies 3, 10, 8 and 0.1: the last is below 1 / (2 x 4) of the total (21.1).
    assert scheduler.warm_up_rounds(session([3.0, 10.0, 4.0, 0.1])) == [1, 2, 0]
    assert scheduler.warm_up_rounds(session([1.0, 10.0, 4.0, 0.1])) == [1, 2]  # 1 of 19.1 is below it too
    # A task without a valid schedule comes first; round-robin keeps every task, in turn.
    assert scheduler.warm_up_rounds(session([3.0, None, 4.0, 0.1])) == [1, 2, 0]
    robin = ans.TaskScheduler(three_tasks(16) + [make_task(matmul(8), "mm8")], strategy="round-robin")
    assert robin.warm_up_rounds(session([1.0, 10.0, 4.0, 0.1])) == [0, 1, 2, 3]


def test_round_robin_takes_turns(tmp_path):
    tasks = [make_task(matmul(16), "mm16"), make_task(matmul(24), "mm24"), make_task(add2(), "add2")]
    scheduler = ans.TaskScheduler(tasks, [1, 100, 1], strategy="round-robin")
    # Policies of one's own, each with its own model.
    policies = [ans.SketchPolicy(t, "random", ans.SearchParams(**FAST), seed=i) for i, t in enumerate(tasks)]
    result = scheduler.tune(options(56, per_round=6, verbose=0), search_policy=policies)
    assert result.trials == 56
    after_warm_up = [i for i in result.rounds[3:]]
    assert 2 not in after_warm_up  # exhausted in its warm-up round
    assert all(a != b for a, b in zip(after_warm_up, after_warm_up[1:])), result.rounds


def fake_run(tasks, weights, costs, trials, **knobs):
    """A scheduler run whose tasks 'measured' the given best costs (no measurement)."""
    scheduler = ans.TaskScheduler(tasks, weights, cost_model="random", eps_random=0, **knobs)
    session = scheduler.session(options(1000, verbose=0), scheduler._policies(options(1), None, FAST),
                                [None] * len(tasks))
    for tt, cost, n in zip(session.tuners, costs, trials):
        tt.result.best_cost, tt.result.trials = cost, n
        tt.result.history = [(n, cost)]
    return session


def test_gradient_prefers_weighted_latency_slow_peers_and_tasks_without_a_schedule():
    tasks = [make_task(matmul(32), "a"), make_task(matmul(30), "b"), make_task(add2(), "c")]
    # Same latency and trials: the larger weight wins.
    assert fake_run(tasks, [1, 5, 1], [1e-3, 1e-3, 1e-3], [16, 16, 16]).pick() == 1
    # Same weight: the slower task (in weighted latency) wins.
    assert fake_run(tasks, [1, 1, 1], [1e-3, 4e-3, 1e-3], [16, 16, 16]).pick() == 1
    # Many trials already spent on task 1 shrink its expected gain (latency / rounds).
    assert fake_run(tasks, [1, 1, 1], [1e-3, 1.2e-3, 1e-3], [16, 320, 320]).pick() == 0
    # ...unless a similar task (a matmul of about the same FLOPs) runs far faster: room left.
    assert fake_run(tasks, [1, 1, 1], [1e-5, 1.2e-3, 1e-3], [16, 320, 320]).pick() == 1
    # A task without any valid schedule comes first.
    assert fake_run(tasks, [5, 5, 1], [1e-3, 1e-3, None], [16, 16, 16]).pick() == 2


def simulate(min_share, rounds=60, slow_gain=0.98, slow_lowest=0.0):
    """Rounds given by the gradient strategy to three tasks: "slow" stays far slower than its similar "peer" (a
    matmul of about the same FLOPs), its latency falling by the factor `slow_gain` per round down to
    `slow_lowest`; "other" (a third of the latency) gains nothing after its warm-up."""
    tasks = [make_task(matmul(32), "slow"), make_task(matmul(30), "peer"), make_task(rowprod(), "other")]
    session = fake_run(tasks, [1, 1, 1], [8e-3, 1e-5, 3e-3], [20, 20, 20], min_share=min_share)
    lowest, gain = [slow_lowest, 1e-5, 3e-3], [slow_gain, 0.9, 0.9]
    for _ in range(rounds):
        i = session.pick()
        r = session.tuners[i].result
        r.best_cost = max(lowest[i], r.best_cost * gain[i])
        r.trials += 16
        r.rounds += 1
        r.history.append((r.trials, r.best_cost))
        session.result.rounds.append(i)
    costs = [tt.result.best_cost for tt in session.tuners]
    return [tt.result.rounds for tt in session.tuners], [c / sum(costs) for c in costs]


def test_a_task_with_a_large_share_of_the_latency_does_not_starve():
    # Without the floor the slow task, still gaining every round, takes every round: the other one stays at
    # its warm-up.
    rounds, _ = simulate(min_share=0)
    assert rounds[2] == 0 and rounds[0] == 60, rounds
    # With it, the other one gets at least half its share of the latency in rounds.
    rounds, share = simulate(min_share=0.5)
    assert rounds[2] >= 0.5 * share[2] * 60 - 1 and rounds[2] >= 10, (rounds, share)
    assert rounds[0] > rounds[2], rounds
    with pytest.raises(ValueError, match="min_share"):
        ans.TaskScheduler(three_tasks(16), min_share=2)


def test_a_task_stalled_below_its_peers_gives_up_its_rounds():
    """A task far slower than its similar peer that stops gaining (it reaches its own floor after 5 rounds:
    a stride-2 convolution never runs at its stride-1 peer's speed) stops taking every round, even without
    the floor of min_share: each round that gains nothing divides its peer-based estimate."""
    rounds, _ = simulate(min_share=0, slow_gain=0.9, slow_lowest=5e-3)
    assert rounds[0] >= 5 and rounds[2] >= 10, rounds  # undivided: [60, 0, 0]
    assert _rounds_without_gain([]) == 0 and _rounds_without_gain([(1, None), (2, 3.0)]) == 0
    assert _rounds_without_gain([(1, 5.0), (2, 4.0), (3, 4.0), (4, 4.0)]) == 2
    assert _rounds_without_gain([(1, 4.0), (2, 4.0), (3, 3.0)]) == 0


def test_every_task_with_a_share_of_the_latency_leaves_its_warm_up(tmp_path):
    """With min_share 0.5, a task of a quarter of the latency has a floor of about two of the 17 rounds after the
    warm-ups: it leaves its warm-up (its weight keeps its share well above the 15% checked, whatever the timings)."""
    tasks = [make_task(matmul(48), "mm48"), make_task(matmul(40, name="mm40"), "mm40"),
             make_task(rowprod(), "rowprod")]
    result = ans.TaskScheduler(tasks, [4, 2, 1], cost_model="random").tune(
        options(80, per_round=4, verbose=0), search_policy_params=FAST)
    costs = [w * r.best_cost for w, r in zip(result.weights, result.task_results)]
    for i, r in enumerate(result.task_results):
        if costs[i] / sum(costs) >= 0.15 and i not in result.done:
            assert r.rounds >= 2, (i, result.task_trials, costs)


def test_options_and_tasks_are_checked():
    tasks = three_tasks(16)
    with pytest.raises(ValueError, match="same task"):
        ans.TaskScheduler([tasks[0], make_task(matmul(16), "again")])
    with pytest.raises(ValueError, match="3 tasks but 2 weights"):
        ans.TaskScheduler(tasks, [1, 2])
    with pytest.raises(ValueError, match="task_weights\\[1\\]"):
        ans.TaskScheduler(tasks, [1, 0, 1])
    with pytest.raises(ValueError, match="strategy"):
        ans.TaskScheduler(tasks, strategy="greedy")
    with pytest.raises(TypeError, match="list of SearchTasks"):
        ans.TaskScheduler(tasks[0])
    with pytest.raises(ValueError, match="load_log_file"):
        ans.TaskScheduler(tasks, load_log_file="/nonexistent/log.json")
    with pytest.raises(TypeError, match="TuningOptions"):
        ans.TaskScheduler(tasks).tune(None)
    with pytest.raises(ValueError, match="runners"):
        ans.TaskScheduler(tasks).tune(options(8), runners={7: runner()})
    with pytest.raises(ValueError, match="2 search policies for 3 tasks"):
        ans.TaskScheduler(tasks).tune(options(8), search_policy=[ans.SketchPolicy(t) for t in tasks[:2]])
    # Weights as numpy numbers (what a graph's use counts may be) are accepted.
    assert ans.TaskScheduler(tasks, np.array([1, 2, 3])).task_weights == [1.0, 2.0, 3.0]


def test_time_budget_and_per_task_early_stopping_end_the_run(capsys):
    tasks = three_tasks(32)
    result = ans.TaskScheduler(tasks, cost_model="random").tune(
        options(100000, per_round=4, time_budget_s=1.5), search_policy_params=FAST)
    assert result.stop_reason.startswith("time budget") and result.trials < 100000
    assert "Stopped: time budget of 1.5 s used" in capsys.readouterr().out
    result = ans.TaskScheduler(tasks, cost_model="random").tune(
        options(100000, per_round=4, early_stopping=8, time_budget_s=60, verbose=0), search_policy_params=FAST)
    assert result.stop_reason.startswith("every task is done"), result.stop_reason
    assert sorted(result.done) == [0, 1, 2]
    assert any(why.startswith("early stopping") for why in result.done.values()), result.done


def test_the_time_budget_ends_the_run_within_a_round(tmp_path):
    # Each candidate sleeps 0.5 s before its run: a round of 16 would take 8 s; the budget of 3 s stops the
    # measurements of the round it falls in (warm-up included), and no round starts after it.
    log = str(tmp_path / "budget.json")
    slow = runner(number=1, repeat=1, min_repeat_ms=0, cooldown_s=0.5)
    t0 = time.monotonic()
    result = ans.TaskScheduler(three_tasks(16), cost_model="random").tune(
        options(1000, log, per_round=16, time_budget_s=3, runner=slow, verbose=0), search_policy_params=FAST)
    took = time.monotonic() - t0
    assert result.stop_reason.startswith("time budget"), result.stop_reason
    assert 1 <= result.trials == len(ans.load_records(log)) < 16
    assert took < 3 + 5, took  # a candidate (0.5 s + its build and run) and the session's setup


def test_a_task_that_always_fails_is_diagnosed_while_the_others_tune(capsys):
    tasks = [make_task(matmul(32), "mm32"), make_task(matmul(16, name="mm16"), "doomed"),
             make_task(rowprod(), "rowprod")]
    broken = runner(inject_faults={"wrong_result": 0.6, "crash": 0.4}, fault_seed=1)
    scheduler = ans.TaskScheduler(tasks, [1, 10, 1], cost_model="random", failed_rounds_to_give_up=2)
    result = scheduler.tune(options(60, per_round=4), search_policy_params=FAST, runners={1: broken})
    out = capsys.readouterr().out
    doomed = result.task_results[1]
    assert doomed.best_cost is None and result.failed_tasks == [1]
    assert result.done[1].startswith("given up"), result.done
    assert set(doomed.errors) == {"wrong_answer", "runtime"} and sum(doomed.errors.values()) == doomed.trials
    line = next(ln for ln in out.splitlines() if ln.startswith("Task 1 (doomed): no valid schedule"))
    assert f"wrong_answer {doomed.errors['wrong_answer']}" in line and f"runtime {doomed.errors['runtime']}" in line
    assert "first runtime:" in out and "first wrong_answer:" in out
    # The others still tuned: valid schedules, and the rounds the doomed task gave up went to them.
    assert result.task_results[0].best_cost is not None and result.task_results[2].best_cost is not None
    assert result.trials == 60 and result.task_trials[0] > doomed.trials


KILLED_RUN = textwrap.dedent("""
    import sys
    sys.path[:0] = {paths!r}
    import autosched as ans
    from autosched import te
    def mm(n):
        A = te.placeholder((n, n), name="A"); B = te.placeholder((n, n), name="B")
        k = te.reduce_axis((0, n), name="k")
        return [A, B, te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="mm")]
    tasks = [ans.SearchTask(compute_dag=ans.ComputeDAG(mm(n)), target="llvm", desc=f"mm{{n}}") for n in (40, 24)]
    opts = ans.TuningOptions(num_measure_trials=1000, num_measures_per_round=6,
                             runner=ans.LocalRunner(min_repeat_ms=5),
                             measure_callbacks=[ans.RecordToFile({log!r})], verbose=0)
    ans.TaskScheduler(tasks, [2, 1], cost_model="random").tune(opts, search_policy_params={fast!r})
""")


def test_killed_run_resumes_without_remeasuring(tmp_path, capsys):
    log = str(tmp_path / "killed.json")
    script = KILLED_RUN.format(paths=[p for p in sys.path if p], fast=FAST, log=log)
    child = subprocess.Popen([sys.executable, "-c", script], env=dict(os.environ))
    try:
        deadline = time.time() + 60
        while time.time() < deadline and child.poll() is None:
            if os.path.exists(log) and sum(1 for _ in open(log)) >= 24:
                break
            time.sleep(0.05)
        assert child.poll() is None, "the tuning child ended before it was killed"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
    before = ans.load_records(log)
    assert len(before) >= 24
    old = {(inp.task.workload_key, inp.state.to_json()) for inp, _ in before}
    per_task = {}
    for inp, _ in before:
        per_task[inp.task.workload_key] = per_task.get(inp.task.workload_key, 0) + 1

    tasks = [make_task(matmul(n), f"mm{n}") for n in (40, 24)]
    assert set(per_task) <= {t.workload_key for t in tasks}
    target = len(before) + 18
    # The log read as load_log_file, written by RecordToFile and given as a transfer log: every record is a
    # trial, and reaches the cost model once (as a resumed record, not as a transferred one).
    result = ans.TaskScheduler(tasks, [2, 1], load_log_file=log, cost_model="random").tune(
        options(target, log, transfer_logs=[log]), search_policy_params=FAST)
    out = capsys.readouterr().out
    assert f"Resumed {len(before)} trials of {len(per_task)} tasks" in out
    transferred = result.task_results[0].transferred
    assert len(transferred) == 1 and transferred[0].used == 0
    assert transferred[0].excluded + transferred[0].failed == len(before), out
    assert result.resumed_trials == len(before) and result.trials == target
    assert [r.resumed_trials for r in result.task_results] == [per_task.get(t.workload_key, 0) for t in tasks]
    new = ans.load_records(log)[len(before):]
    assert len(new) == 18
    new_keys = [(inp.task.workload_key, inp.state.to_json()) for inp, _ in new]
    assert len(set(new_keys)) == 18 and not set(new_keys) & old


PARALLEL_RUN = textwrap.dedent("""
    import json, sys, threading, time
    sys.path[:0] = {paths!r}
    import autosched as ans
    from autosched import te

    class Elsewhere(ans.LocalRunner):
        # Measures outside the session's core round, as RayRunner does; each call is logged, and the first
        # call after the warm-up (the third) waits at a barrier that only a concurrent call of the other task
        # opens. Task 0's then sleeps, so that task 1's finishes first.
        measures_here = False
        barrier = threading.Barrier(2, timeout=20)

        def __init__(self, index, **kw):
            super().__init__(**kw)
            self.index, self.calls = index, 0

        def _measurer_for(self, builder):
            core, runner = super()._measurer_for(builder), self

            class Measurer(ans._core.Measurer):
                def measure(self, task, states, deadline_s=None):
                    runner.calls += 1
                    if runner.calls == 3:
                        Elsewhere.barrier.wait()
                        if runner.index == 0:
                            time.sleep(0.5)
                    return core.measure(task, states)
            return Measurer()

    def mm(n):
        A = te.placeholder((n, n), name="A"); B = te.placeholder((n, n), name="B")
        k = te.reduce_axis((0, n), name="k")
        return [A, B, te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="mm")]
    tasks = [ans.SearchTask(compute_dag=ans.ComputeDAG(mm(n)), target="llvm", desc=f"mm{{n}}") for n in (24, 16)]
    opts = ans.TuningOptions(num_measure_trials=40, num_measures_per_round=4, verbose=0,
                             measure_callbacks=[ans.RecordToFile({log!r})])
    runners = {{i: Elsewhere(i, min_repeat_ms=1) for i in range(2)}}
    res = ans.TaskScheduler(tasks, strategy="round-robin", cost_model="random", parallel_tasks=2).tune(
        opts, search_policy_params={fast!r}, runners=runners)
    print("RESULT " + json.dumps({{"trials": res.trials, "rounds": res.rounds, "calls": [runners[i].calls for i in
                                                                                       range(2)],
                                  "keys": [t.workload_key for t in tasks]}}), flush=True)
""")


def test_parallel_tasks_measure_at_once_and_log_in_rank_order(tmp_path):
    """parallel_tasks=2 with runners that measure elsewhere: after the warm-up the two tasks' measurements run
    at the same time (a barrier only both open), and the round of the task ranked first is logged first even
    when the other finishes first."""
    log = str(tmp_path / "parallel.json")
    script = PARALLEL_RUN.format(paths=[p for p in sys.path if p], fast=FAST, log=log)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    found = json.loads(out.stdout.split("RESULT ", 1)[1])
    assert found["trials"] == 40 and min(found["calls"]) >= 3
    assert found["rounds"][:4] == [0, 1, 0, 1]  # the warm-up's search rounds, then the first wave
    keys = [inp.task.workload_key for inp, _ in ans.load_records(log)]
    assert len(keys) == 40
    runs = [k for i, k in enumerate(keys) if i == 0 or keys[i - 1] != k]  # the log's runs of one task
    order = [found["keys"].index(k) for k in runs]
    assert order[:6] == [0, 1, 0, 1, 0, 1], order  # baselines, warm-up rounds, then the wave in rank order
