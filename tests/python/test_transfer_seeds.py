"""Transfer seeds: tasks of one compute structure share a structure key (other shapes) while others do not; a
schedule of one shape re-fitted to another (prime extents, extents of 1) lowers, builds and equals the
reference evaluator; a dissimilar task's schedule is refused; the seeds join the first population and are
measured in the first round; a tuning session seeds a task from its similar tasks and from the logs it reads,
and never a dissimilar one."""
import json

import pytest

import autosched as ans
from autosched import te
from autosched.tune import transfer
from autosched.ops import nn
from schedule_helpers import check, matmul_tensors

pytestmark = pytest.mark.needs_llvm

FAST = dict(evolutionary_search_population=64, evolutionary_search_num_iters=1, sample_init_min_population=16)


def task_of(tensors, desc=""):
    return ans.SearchTask(compute_dag=ans.ComputeDAG(tensors), target="llvm", desc=desc)


def matmul_relu(n, m, k):
    a, b, c = matmul_tensors(n, m, k)
    return [a, b, te.compute((n, m), lambda i, j: te.max(c[i, j], 0.0), name="relu")]


def conv(c_in, size, c_out, kernel=3, pad=1):
    data = te.placeholder((1, c_in, size, size), name="data")
    weight = te.placeholder((c_out, c_in, kernel, kernel), name="weight")
    out = nn.conv2d_nchw(data, weight, 1, pad)
    return [data, weight, te.compute(out.shape, lambda *i: te.max(out[i], 0.0), name="relu")]


MATMUL_SHAPES = [(13, 1, 7), (1, 17, 31), (29, 23, 1), (37, 41, 19)]  # primes and ones
CONV_SHAPES = [(3, 7, 5), (1, 11, 13), (5, 1, 2)]  # (c_in, image size, c_out)


def kinds(state):
    return [step[0] for step in json.loads(state.to_json())]


def source_states(task, n=6):
    """The expert schedule and sampled states of `task`: splits of every kind (register blocks, tails, rfactor)."""
    states, _ = ans.search.sample_init_population(task, n, seed=3)
    expert = ans.search.expert_schedule(task)
    return ([expert] if expert is not None else []) + states


def test_structure_key_ignores_sizes_only():
    keys = [ans.ComputeDAG(matmul_tensors(*s)).structure_key() for s in [(64, 64, 64)] + MATMUL_SHAPES]
    assert len(set(keys)) == 1
    workload_keys = {ans.ComputeDAG(matmul_tensors(*s)).workload_key() for s in [(64, 64, 64)] + MATMUL_SHAPES}
    assert len(workload_keys) == len(MATMUL_SHAPES) + 1
    conv_keys = {ans.ComputeDAG(conv(*s)).structure_key() for s in [(16, 14, 16)] + CONV_SHAPES}
    assert len(conv_keys) == 1
    others = {
        keys[0],
        ans.ComputeDAG(matmul_relu(64, 64, 64)).structure_key(),  # another op
        next(iter(conv_keys)),
        ans.ComputeDAG(conv(16, 14, 16, pad=0)).structure_key(),  # no padding stage
        ans.ComputeDAG(matmul_tensors(64, 64, 64, dtype="float64")).structure_key(),  # another dtype
    }
    assert len(others) == 5
    assert transfer.similarity_key(task_of(matmul_tensors(8, 8, 8))) == (keys[0], "llvm")


@pytest.mark.parametrize("shape", MATMUL_SHAPES)
def test_matmul_schedules_refit_to_awkward_shapes_and_equal_the_reference(shape):
    source = task_of(matmul_tensors(64, 48, 32))
    task = task_of(matmul_tensors(*shape))
    kept = 0
    for i, state in enumerate(source_states(source)):
        refit, failure, message = transfer.refit(task, state)
        if refit is None:
            assert failure in ("padding", "infer_bound", "lower", "replay"), (failure, message)
            continue
        assert failure == "" and refit.init_dag.workload_key() == task.workload_key
        assert kinds(refit) == kinds(state)
        check(task.compute_dag, refit, seed=i)
        kept += 1
    assert kept >= 3, f"only {kept} schedules re-fitted to {shape}"


@pytest.mark.parametrize("shape", CONV_SHAPES)
def test_conv_schedules_refit_to_awkward_shapes_and_equal_the_reference(shape):
    source = task_of(conv(16, 14, 32))
    task = task_of(conv(*shape))
    kept = 0
    for i, state in enumerate(source_states(source, 4)):
        refit, failure, message = transfer.refit(task, state)
        if refit is not None:
            check(task.compute_dag, refit, seed=i)
            kept += 1
    assert kept >= 2, f"only {kept} schedules re-fitted to {shape}"


def test_split_lengths_fit_the_new_extent_nearest_to_the_old_ones():
    source = task_of(matmul_tensors(64, 64, 64))
    state = source.compute_dag.get_init_state()
    state.split("C", 0, [8, 4])
    state.split("C", 3, [16])
    refit, failure, _ = transfer.refit(task_of(matmul_tensors(56, 13, 64)), state)
    assert failure == ""
    splits = [step for step in json.loads(refit.to_json()) if step[0] == "SP"]
    assert [(s[3], s[4]) for s in splits] == [(56, [7, 4]), (13, [13])]


def test_a_dissimilar_task_gets_no_seed():
    source = task_of(matmul_tensors(64, 64, 64))
    state = ans.search.expert_schedule(source)
    refit, failure, message = transfer.refit(task_of(matmul_relu(64, 64, 64)), state)
    assert refit is None and failure == "dissimilar" and "compute structure" in message
    policy = ans.SketchPolicy(task_of(matmul_relu(32, 32, 32)), "random", ans.SearchParams(**FAST))
    report = policy.set_transfer_seeds([state], 8)
    assert report["kept"] == 0 and report["drops"] == {"dissimilar": 1}
    policy.continue_search_one_round(4)
    assert policy.last_round["transfer_seeds"] == 0 and policy.last_round["picked_transfer"] == 0


def test_seeds_join_the_first_population_and_are_measured_first():
    source = task_of(matmul_tensors(64, 64, 64))
    task = task_of(matmul_tensors(31, 1, 17))
    states = source_states(source, 4)
    policy = ans.SketchPolicy(task, "random", ans.SearchParams(**FAST, transfer_seeds_measured=2))
    report = policy.set_transfer_seeds(list(states), 8)
    assert report["given"] == len(states) and report["kept"] >= 3, report
    seeds = policy.transfer_seeds
    assert len(seeds) == report["kept"]
    batch = policy.continue_search_one_round(6)
    stats = policy.last_round
    assert stats["transfer_seeds"] == len(seeds) and stats["picked_transfer"] == 2
    keys = [ans._core.state_key(s) for s in batch]
    assert keys[:2] == [ans._core.state_key(s) for s in seeds[:2]]
    for i, state in enumerate(batch[:2]):
        check(task.compute_dag, state, seed=i)
    # the next round holds them again, and measures the next ones
    policy.continue_search_one_round(6)
    assert policy.last_round["transfer_seeds"] == len(seeds)
    assert policy.last_round["picked_transfer"] == min(2, len(seeds) - 2)


def runner():
    return ans.LocalRunner(timeout=20, min_repeat_ms=1)


def test_a_session_seeds_similar_tasks_from_each_other_and_from_logs(tmp_path, capsys):
    tasks = [task_of(matmul_tensors(48, 48, 48), "mm48"), task_of(matmul_tensors(13, 29, 7), "mm13"),
             task_of(matmul_relu(16, 16, 16), "mmrelu")]
    log = str(tmp_path / "net.json")
    opts = ans.TuningOptions(num_measure_trials=40, num_measures_per_round=4, runner=runner(), verbose=2,
                             measure_callbacks=[ans.RecordToFile(log)])  # verbose 2: the transfer lines and rows
    result = ans.TaskScheduler(tasks, cost_model="random", strategy="round-robin").tune(
        opts, search_policy_params=FAST)
    out = capsys.readouterr().out
    mm48, mm13, other = result.task_results
    # The first matmul's best seeds the second from its first round on, and the other way round.
    assert mm13.transfer_seeds >= 1 and mm48.transfer_seeds >= 1
    # measured where a seed was not one of the task's own states already (its expert schedule, say)
    assert mm13.transfer_seeds_measured + mm48.transfer_seeds_measured >= 1
    assert other.transfer_seeds == 0 and other.transfer_seeds_measured == 0
    assert "Transfer: task 1 (mm13): 1 seeds of similar tasks" in out
    assert "| transfer seeds |" in out
    for task in tasks[:2]:
        state = task.apply_best(log)
        check(task.compute_dag, state)

    # A task alone, of a third shape, seeded from the log of the others (a transfer log).
    task = task_of(matmul_tensors(1, 37, 11), "mm1")
    opts = ans.TuningOptions(num_measure_trials=8, num_measures_per_round=4, runner=runner(),
                             transfer_logs=[log], verbose=0)
    alone = task.tune(opts, search_policy=ans.SketchPolicy(task, "random", ans.SearchParams(**FAST)))
    # (a seed may equal one of its start states, measured before)
    assert alone.transfer_seeds >= 2 and alone.transfer_seeds_measured >= 1, alone
    # ...and not without transfer_seeds
    opts = ans.TuningOptions(num_measure_trials=8, num_measures_per_round=4, runner=runner(),
                             transfer_logs=[log], verbose=0, transfer_seeds=False)
    none = task.tune(opts, search_policy=ans.SketchPolicy(task, "random", ans.SearchParams(**FAST)))
    assert none.transfer_seeds == 0 and none.transfer_seeds_measured == 0
    with pytest.raises(TypeError, match="transfer_seeds"):
        ans.TuningOptions(transfer_seeds="yes")


def test_seed_sources_rank_the_closest_shape_first():
    tasks = [task_of(matmul_tensors(n, n, n)) for n in (8, 64, 16)]

    class Tuner:
        def __init__(self, task):
            self.task, self.result = task, ans.TuneResult(task)
            self.policy = ans.SketchPolicy(task, "random", ans.SearchParams(**FAST))

    tuners = [Tuner(t) for t in tasks]
    for tt, cost in zip(tuners, (1e-6, 1e-4, 1e-5)):
        tt.result.best_state, tt.result.best_cost = ans.search.expert_schedule(tt.task), cost
    sources = transfer.SeedSources(tuners)
    assert [s[0] for s in sources.sources(0)] == [tasks[2].workload_key, tasks[1].workload_key]
    seeds = sources.seeds_for(0)
    assert len(seeds) == 2
    report = tuners[0].policy.set_transfer_seeds(seeds, transfer.MAX_SEEDS)  # what the round does with them
    assert report["given"] == 2 and report["kept"] >= 1, report
    assert report["kept"] + sum(report["drops"].values()) == 2, report  # e.g. both re-fit to one state
    assert sources.seeds_for(0) is None  # unchanged: not given again
    tuners[0].policy.continue_search_one_round(2)
    assert tuners[0].policy.last_round["transfer_seeds"] == report["kept"]
