"""Measured schedules of a matmul and a conv2d: data for the cost model's tests and benchmark.

    tasks = [matmul_task(128), conv2d_task(16, 28, 32)]
    states = random_states(task, 200, seed=0)              # valid, reasonably sized schedules
    inputs, results = measure(task, states)                # built with ans.build, timed
    model.update(inputs, results)

The schedules follow the hand-written style: splits that divide, an outer loop (or fused outer loops) in
parallel, a vectorized inner loop, varied tile sizes and loop orders, sometimes an unrolled loop, an
auto-unroll pragma, a local cache_write stage or the padding computed inline / at a loop. Each generator step
can only make valid states for these DAGs; a ValueError from one would be a bug of the schedule language.

Timings depend on the CPU and on its load, so the tests of model quality read schedules measured once, kept
as gzipped record logs under tests/records/ (``recorded``, ``recorded_log``; tests/records/README.md names
the CPU, and tests/records/make_cost_model_records.py made them with the tasks and seeds below). Measuring
live (``measure``) is for the benchmark.
"""
import gzip
import pathlib
import random
import shutil
import tempfile
import types

import numpy as np

import autosched as ans
from autosched import ops, te
from schedule_helpers import matmul

TARGET = "llvm"
RECORDS = pathlib.Path(__file__).resolve().parents[1] / "records"

# The ranking test's data: 200 random schedules of each task, measured with measure() (RANKING_LOG).
RANKING_LOG = "cost_model_ranking.json.gz"
RANKING_STATES = 200

# Transfer between tasks: two matmuls of a single-threaded target, tuned by random search (FAST rounds of 16)
# into TRANSFER_LOGS; task A with seed 1 for 64 trials, task B with seed 11 for 48.
TRANSFER_TARGET = "llvm -num-cores=1"
TRANSFER_LOGS = {"A": "cost_model_transfer_a.json.gz", "B": "cost_model_transfer_b.json.gz"}
FAST = dict(evolutionary_search_population=128, evolutionary_search_num_iters=2, sample_init_min_population=32)


def matmul_task(n):
    return ans.SearchTask(compute_dag=matmul(n, n, n)[0], target=TARGET, desc=f"matmul{n}")


def conv2d_task(channels, size, filters):
    data = te.placeholder((1, channels, size, size), name="data", dtype="float32")
    kernel = te.placeholder((filters, channels, 3, 3), name="kernel", dtype="float32")
    out = ops.conv2d_nchw(data, kernel, stride=1, padding=1)
    return ans.SearchTask(compute_dag=ans.ComputeDAG([data, kernel, out]), target=TARGET,
                          desc=f"conv2d_{channels}x{size}x{size}_{filters}")


def ranking_tasks():
    return [matmul_task(64), conv2d_task(8, 14, 16)]


def transfer_task(n, m, k, desc, target=TRANSFER_TARGET):
    """C = A @ B with A (n, k), B (k, m)."""
    a = te.placeholder((n, k), name="A")
    b = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="k")
    c = te.compute((n, m), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="C")
    return ans.SearchTask(compute_dag=ans.ComputeDAG([a, b, c]), target=target, desc=desc)


def transfer_tasks():
    """Task A (a 64^3 matmul) and task B (96x32x128)."""
    return transfer_task(64, 64, 64, "A"), transfer_task(96, 32, 128, "B")


def transfer_runner():
    from autosched.measure import LocalRunner
    return LocalRunner(timeout=10, min_repeat_ms=5)


def tune_random(task, log, trials, seed, runner=None):
    """Random search (no cost model) of `trials` measurements in rounds of 16, appended to `log`."""
    from autosched import search
    policy = search.SketchPolicy(task, "random", search.SearchParams(**FAST), seed=seed)
    opts = ans.TuningOptions(num_measure_trials=trials, num_measures_per_round=16,
                             runner=runner or transfer_runner(), measure_callbacks=[ans.RecordToFile(log)],
                             verbose=0)
    return task.tune(opts, search_policy=policy)


def recorded_log(name, path):
    """Writes the record log kept as tests/records/`name` (gzipped) to `path`; returns the path as str."""
    with gzip.open(RECORDS / name, "rb") as src, open(path, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return str(path)


def recorded(name):
    """The records of tests/records/`name` as (inputs, results): input.task (the task as recorded, with its
    hardware parameters) / .state, result.costs / .error_no / .mean_cost."""
    with tempfile.TemporaryDirectory() as tmp:
        pairs = ans.load_records(recorded_log(name, pathlib.Path(tmp) / "log.json"))
    return [inp for inp, _ in pairs], [res for _, res in pairs]


def _divisors(n, limit=None):
    return [d for d in range(1, n + 1) if n % d == 0 and (limit is None or d <= limit)]


def _split3(rng, extent, inner_choices=None):
    """Two split factors (middle, inner) that divide `extent`, the inner one from `inner_choices`."""
    inner = rng.choice([d for d in (inner_choices or _divisors(extent, 16)) if extent % d == 0])
    middle = rng.choice(_divisors(extent // inner, 16))
    return [middle, inner]


def _annotate_outer(s, stage, outer, rng):
    """Outer loops: fused and parallel, only the first parallel, or serial."""
    draw = rng.random()
    if draw < 0.55 and len(outer) > 1:
        s.parallel(stage, s.fuse(stage, outer))
    elif draw < 0.9:
        s.parallel(stage, outer[0])


def _inner_loops(s, stage, middle, inner, vector, rng):
    """Orders the tiled loops: shuffled middle loops, shuffled inner loops, the vector loop last; unrolls
    and vectorizes some."""
    rng.shuffle(middle)
    rng.shuffle(inner)
    vectorize = rng.random() < 0.8
    return middle + inner + [vector], vectorize


def _finish(s, stage, order, vector, vectorize, rng):
    if vectorize:
        s.vectorize(stage, vector)
    if rng.random() < 0.4:
        s.unroll(stage, order[-2])
    if rng.random() < 0.3:
        s.pragma(stage, order[0], "auto_unroll_max_step$%d" % rng.choice([16, 64]))


def _tile_matmul(s, stage, rng, with_k=True):
    """Tiles i, j (and k) of a matmul-like stage; returns nothing (the state is changed in place)."""
    it = s[stage].iters
    i, j = it[0], it[1]
    i0, i1, i2 = s.split(stage, i, _split3(rng, s[stage].iters[0].extent))
    j0, j1, j2 = s.split(stage, j, _split3(rng, it[1].extent, [1, 4, 8, 16, 32]))
    middle, inner = [i1, j1], [i2]
    if with_k:
        k = s[stage].iters[-1]
        k0, k1 = s.split(stage, k, [rng.choice(_divisors(k.extent, 16))])
        middle.append(k0)
        inner.append(k1)
    order, vectorize = _inner_loops(s, stage, middle, inner, j2, rng)
    s.reorder(stage, [i0, j0] + order)
    _annotate_outer(s, stage, [i0, j0], rng)
    _finish(s, stage, order, j2, vectorize, rng)


def random_matmul_state(task, rng):
    s = task.compute_dag.get_init_state()
    if rng.random() < 0.3:
        # C.local accumulates a register tile; C copies it out.
        local = s.cache_write("C", "local")
        i, j = s["C"].iters
        i0, i1 = s.split("C", i, [rng.choice(_divisors(i.extent, 32))])
        j0, j1 = s.split("C", j, [rng.choice([d for d in (8, 16, 32, 64) if j.extent % d == 0])])
        s.reorder("C", [i0, j0, i1, j1])
        _annotate_outer(s, "C", [i0, j0], rng)
        s.vectorize("C", s["C"].iters[-1])
        s.compute_at(local, "C", s["C"].iters[-3])
        ci, cj, ck = s[local].iters
        cj0, cj1 = s.split(local, cj, [rng.choice([d for d in (1, 4, 8, 16) if cj.extent % d == 0])])
        order = [ck, ci, cj0] if rng.random() < 0.7 else [ci, ck, cj0]
        s.reorder(local, order + [cj1])
        if rng.random() < 0.8:
            s.vectorize(local, cj1)
        if rng.random() < 0.5:
            s.unroll(local, s[local].iters[1])
        return s
    _tile_matmul(s, "C", rng)
    return s


def random_conv2d_state(task, rng):
    s = task.compute_dag.get_init_state()
    conv, pad = "Conv2dOutput", "PaddedInput"
    placement = rng.random()
    if placement < 0.5:
        s.compute_inline(pad)
    nn, ff, yy, xx, rc, ry, rx = s[conv].iters
    f0, f1 = s.split(conv, ff, [rng.choice(_divisors(ff.extent, 16))])
    y0, y1 = s.split(conv, yy, [rng.choice(_divisors(yy.extent, 14))])
    x0, x1 = s.split(conv, xx, [rng.choice([d for d in (1, 2, 4, 7, 14, 28) if xx.extent % d == 0])])
    c0, c1 = s.split(conv, rc, [rng.choice(_divisors(rc.extent, 16))])
    middle, inner = [c0, ry, rx], [f1, y1, c1]
    order, vectorize = _inner_loops(s, conv, middle, inner, x1, rng)
    s.reorder(conv, [nn, f0, y0, x0] + order)
    outer = [nn, f0, y0] if rng.random() < 0.5 else [nn, f0]
    _annotate_outer(s, conv, outer, rng)
    _finish(s, conv, order, x1, vectorize, rng)
    if placement >= 0.5:
        s.parallel(pad, s[pad].iters[1])
        if rng.random() < 0.5:
            s.vectorize(pad, s[pad].iters[-1])
    return s


GENERATORS = {"matmul": random_matmul_state, "conv2d": random_conv2d_state}


def random_states(task, count, seed=0):
    """`count` distinct random schedules of a task made by matmul_task or conv2d_task."""
    rng = random.Random(seed)
    generate = GENERATORS["matmul" if task.desc.startswith("matmul") else "conv2d"]
    states, seen = [], set()
    for _ in range(count * 20):
        if len(states) == count:
            break
        s = generate(task, rng)
        key = s.to_json()
        if key not in seen:
            seen.add(key)
            states.append(s)
    return states


def _arrays(task, rng):
    out = []
    for t in task.compute_dag.tensors:
        out.append(rng.random(t.shape, dtype=np.float32) if t.op_kind == "placeholder"
                   else np.zeros(t.shape, dtype=t.dtype))
    return out


def measure(task, states, repeat=10, rounds=3, chunk=64):
    """(inputs, results): input.task / .state, result.costs ([seconds]: the fastest run) / .error_no (0, or 1
    when the build or run raised, with .error).

    Other processes sharing the cores slow some runs down; the fastest of many runs is a stable estimate
    only if the runs are spread over time, since a burst of load covers all runs made within a few
    milliseconds. So states are built `chunk` at a time, then timed in `rounds` passes over the chunk,
    `repeat` runs each: on a 2-core machine under a load of 6, two such measurements of the same states
    order 95% of the pairs alike, against 65% for the fastest of 3 runs in a row."""
    arrays = _arrays(task, np.random.default_rng(0))
    inputs = [types.SimpleNamespace(task=task, state=s) for s in states]
    results = [None] * len(states)
    for begin in range(0, len(states), chunk):
        modules = {}
        for i in range(begin, min(begin + chunk, len(states))):
            try:
                modules[i] = ans.build(task, states[i])
            except ValueError as e:
                results[i] = types.SimpleNamespace(costs=[], error_no=1, error=str(e))
        best = {i: float("inf") for i in modules}
        for _ in range(rounds):
            for i, mod in modules.items():
                best[i] = min(best[i], min(mod.time_evaluator(number=1, repeat=repeat)(*arrays)))
        for i, seconds in best.items():
            results[i] = types.SimpleNamespace(costs=[seconds], error_no=0)
    return inputs, results


def split_train_test(inputs, results, test_fraction=0.2, seed=0):
    """A random split of measured pairs, per task: ((train inputs, results), (test inputs, results))."""
    rng = random.Random(seed)
    ids = list(range(len(inputs)))
    rng.shuffle(ids)
    cut = int(len(ids) * test_fraction)
    test, train = ids[:cut], ids[cut:]
    return ([inputs[i] for i in train], [results[i] for i in train]), ([inputs[i] for i in test],
                                                                       [results[i] for i in test])


def pairwise_accuracy_of(model, inputs, results):
    """Pairwise ranking accuracy of the model's scores on measured pairs, pairs within each task."""
    by_task = {}
    for inp, res in zip(inputs, results):
        by_task.setdefault(inp.task.workload_key, (inp.task, [], []))
        by_task[inp.task.workload_key][1].append(inp.state)
        by_task[inp.task.workload_key][2].append(min(res.costs) if int(res.error_no) == 0 else float("inf"))
    scores, costs, groups = [], [], []
    for key, (task, states, task_costs) in by_task.items():
        scores += model.predict(task, states)
        costs += task_costs
        groups += [key] * len(states)
    return ans.cost_model.pairwise_accuracy(scores, costs, groups)
