"""The child process of test_ray_runner.py: starts a two-node Ray cluster on loopback (ray.cluster_utils.Cluster,
one CPU per node), runs the scenarios the test names on argv, prints one JSON line of findings, and shuts the
cluster down whatever happens. Run as: python ray_cluster_child.py TEMP_DIR OUT_DIR SCENARIO..."""
import json
import os
import signal
import sys
import threading
import time
import warnings

import numpy as np

import ray
from ray.cluster_utils import Cluster

import autosched as ans
from autosched import search, te
from schedule_helpers import check

FAST = dict(evolutionary_search_population=64, evolutionary_search_num_iters=1, sample_init_min_population=16)


def matmul_task():
    A = te.placeholder((32, 32), name="A")
    B = te.placeholder((32, 32), name="B")
    r = te.reduce_axis((0, 32), name="k")
    C = te.compute((32, 32), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return ans.SearchTask(compute_dag=ans.ComputeDAG([A, B, C]), target="llvm", desc="mm32")


def tune(task, runner, log, trials=16, per_round=8, callbacks=()):
    policy = search.SketchPolicy(task, "random", search.SearchParams(**FAST), seed=1)
    opts = ans.TuningOptions(num_measure_trials=trials, num_measures_per_round=per_round, runner=runner,
                             builder=ans.LocalBuilder(n_parallel=1), verbose=0,
                             measure_callbacks=[ans.RecordToFile(log), *callbacks])
    return ans.tune.tune(task, opts, search_policy=policy)


def record_shape(line):
    """The structure of a record line: its keys, nested, with the types of the leaves."""
    def shape(x):
        if isinstance(x, dict):
            return {k: shape(v) for k, v in sorted(x.items())}
        if isinstance(x, list):
            return ["list"]
        return type(x).__name__
    return shape(json.loads(line))


def runner(**kw):
    return ans.RayRunner(min_repeat_ms=2, actor_start_timeout_s=30, **kw)


def scenario_tune(out, found):
    """RayRunner on both nodes and LocalRunner tune the same task: same record format, correct best."""
    task = matmul_task()
    ray_log, local_log = os.path.join(out, "ray.json"), os.path.join(out, "local.json")
    rr = runner()
    res = tune(task, rr, ray_log)
    found["actor_nodes"] = len({a.info["node_id"] for a in rr.actors})
    found["ray_trials"] = res.trials
    found["ray_errors"] = dict(res.errors)
    rr.close()
    tune(task, ans.LocalRunner(min_repeat_ms=2), local_log)
    with open(ray_log) as f:
        ray_lines = f.read().splitlines()
    with open(local_log) as f:
        local_lines = f.read().splitlines()
    found["ray_records"] = len(ray_lines)
    found["same_format"] = all(record_shape(a) == record_shape(local_lines[0]) for a in ray_lines)
    found["same_tasks"] = {json.dumps(json.loads(a)["task"], sort_keys=True) for a in ray_lines} == \
        {json.dumps(json.loads(a)["task"], sort_keys=True) for a in local_lines}
    state = task.apply_best(ray_log)
    check(task.compute_dag, state)  # raises when the best schedule computes a wrong result
    found["best_is_best"] = abs(
        ans.load_best_record(ray_log, task.workload_key)[1].mean_cost - res.best_cost) <= 1e-12
    found["best_checked"] = True


def scenario_kill(out, found):
    """An actor is SIGKILLed while it measures: the log keeps every record written before, the run ends."""
    task = matmul_task()
    log = os.path.join(out, "kill.json")
    rr = runner(cooldown_s=0.15)
    snapshots = []

    def after_batch(policy, inputs, results):
        with open(log) as f:
            snapshots.append(f.read())
        if len(snapshots) == 1:
            victim = rr.actors[0].info["pid"]
            found["victim"] = victim

            def kill():
                time.sleep(0.3)  # the next batch is on the actors by then
                os.kill(victim, signal.SIGKILL)
            threading.Thread(target=kill, daemon=True).start()

    res = tune(task, rr, log, trials=24, callbacks=[after_batch])
    with open(log) as f:
        final = f.read()
    found["kill_trials"] = res.trials
    found["kill_records"] = len(final.splitlines())
    found["kill_prefixes_kept"] = all(final.startswith(s) for s in snapshots)
    found["kill_failures"] = [why for _, _, why in rr.failures]
    found["kill_errors"] = dict(res.errors)
    found["kill_victim_gone"] = all(a.info["pid"] != found["victim"] for a in rr.actors)
    rr.close()


def scenario_retries_spent(out, found):
    """With no retries, the chunk of a killed actor becomes runtime errors and the batch goes on."""
    task = matmul_task()
    rr = runner(cooldown_s=0.15, max_retries=0, batch_size=2)
    states = [s for _, s in search.tuning_start_states(search.SketchPolicy(
        task, "random", search.SearchParams(**FAST), seed=1))][:4]
    rr._measurer_for(ans.LocalBuilder(n_parallel=1))  # starts the actors
    rr._ensure_actors(rr._measurer._options)
    victim = rr.actors[0].info["pid"]
    threading.Timer(0.2, os.kill, (victim, signal.SIGKILL)).start()
    results = ans.measure.measure(task, states, ans.LocalBuilder(n_parallel=1), rr)
    found["spent_errors"] = sorted(r.error for r in results)
    found["spent_messages"] = [r.error_msg for r in results if not r.ok]
    rr.close()


def scenario_foreign_arch(out, found):
    """No actor of the target's architecture: a clear error."""
    rr = runner()
    try:
        task = ans.SearchTask(compute_dag=matmul_task().compute_dag,
                              target="llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a76")
        ans.measure.measure(task, [task.compute_dag.get_init_state()], ans.LocalBuilder(n_parallel=1), rr)
        found["foreign_error"] = None
    except (ValueError, RuntimeError) as err:
        found["foreign_error"] = f"{type(err).__name__}: {err}"
    rr.close()


def scenario_parallel(out, found):
    """TaskScheduler(parallel_tasks=2): two tasks' rounds measured at once on the two actors, one shared log."""
    a = matmul_task()
    X = te.placeholder((48, 40), name="X")
    W = te.placeholder((40, 64), name="W")
    r = te.reduce_axis((0, 40), name="r")
    Y = te.compute((48, 64), lambda i, j: te.sum(X[i, r] * W[r, j], axis=r), name="Y")
    b = ans.SearchTask(compute_dag=ans.ComputeDAG([X, W, Y]), target="llvm", desc="mm48x64x40")
    log = os.path.join(out, "parallel.json")
    rr = runner(cooldown_s=0.1)
    calls = []  # (task key, start, end) of every measurement call
    measure = rr._measure

    def timed(task, states, options):
        t0 = time.monotonic()
        try:
            return measure(task, states, options)
        finally:
            calls.append((task.workload_key, t0, time.monotonic()))
    rr._measure = timed
    policies = [search.SketchPolicy(t, "random", search.SearchParams(**FAST), seed=1) for t in (a, b)]
    opts = ans.TuningOptions(num_measure_trials=40, num_measures_per_round=6, runner=rr, verbose=0,
                             builder=ans.LocalBuilder(n_parallel=1), measure_callbacks=[ans.RecordToFile(log)])
    sched = ans.TaskScheduler([a, b], strategy="round-robin", parallel_tasks=2)
    res = sched.tune(opts, search_policy=policies)
    with open(log) as f:
        lines = f.read().splitlines()
    found["parallel_trials"] = res.trials
    found["parallel_records"] = len(lines)
    found["parallel_task_trials"] = res.task_trials
    found["parallel_stop"] = res.stop_reason
    found["parallel_overlaps"] = sum(1 for x in calls for y in calls
                                     if x[0] < y[0] and x[1] < y[2] and y[1] < x[2])
    found["parallel_keys_in_log"] = len({json.loads(l)["task"]["workload_key"] for l in lines})
    rr.close()


SCENARIOS = {"parallel": scenario_parallel, "tune": scenario_tune, "kill": scenario_kill,
             "retries_spent": scenario_retries_spent, "foreign_arch": scenario_foreign_arch}


def main():
    temp_dir, out, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    warnings.simplefilter("ignore")
    found = {}
    t0 = time.monotonic()
    # Ray 2.60's Cluster writes the head's address into the default temporary folder (not temp_dir), and
    # fails where that folder does not exist yet.
    address_file = getattr(ray._private.utils, "get_ray_address_file", None)
    if address_file is not None:
        os.makedirs(os.path.dirname(address_file(None)), exist_ok=True)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "temp_dir": temp_dir,
                                                            "include_dashboard": False,
                                                            "object_store_memory": 80 * 2**20})
    try:
        cluster.add_node(num_cpus=1, object_store_memory=80 * 2**20)
        ray.init(address=cluster.address, logging_level="error")
        found["start_s"] = time.monotonic() - t0
        for name in names:
            t = time.monotonic()
            SCENARIOS[name](out, found)
            found[f"{name}_s"] = time.monotonic() - t
    finally:
        ray.shutdown()
        cluster.shutdown()
    print("FOUND " + json.dumps(found), flush=True)


if __name__ == "__main__":
    main()
