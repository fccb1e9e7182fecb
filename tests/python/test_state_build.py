"""Hand-written schedules, built with the LLVM backend, against the reference
evaluator; plus a small differential fuzzer of random step sequences
(AUTOSCHED_FUZZ_CASES=N for a long local run)."""
import os
import random

import pytest

import autosched as ans
from autosched import te

from schedule_helpers import cache_write_matmul, check, compute_at_inline, matmul_bias_relu, tile_matmul


def tiled(s, C, E, D):
    tile_matmul(s, C)


def fused_parallel(s, C, E, D):
    s.compute_inline(E)
    f = s.fuse(D, s[D].iters)
    fo, fi = s.split(D, f, [8])
    s.parallel(D, fo)
    s.vectorize(D, fi)


def cache_write(s, C, E, D):
    _, io, _ = cache_write_matmul(s, C)
    s.compute_inline(E)
    s.parallel(C, io)


def rfactor(s, C, E, D):
    k = s[C].iters[2]
    ko, ki = s.split(C, k, [4])
    s.rfactor(C, ki, 0)


def cache_read(s, C, E, D):
    shared = s.cache_read("B", "shared", [C])
    i, j, k = s[C].iters
    io, ii = s.split(C, i, [8])
    s.compute_at(shared, C, io)


SCHEDULES = [None, tiled, fused_parallel, compute_at_inline, cache_write, rfactor, cache_read]


@pytest.mark.parametrize("dtype", ["float32", "int32", "float16"])
@pytest.mark.parametrize("schedule", SCHEDULES, ids=lambda f: "default" if f is None else f.__name__)
def test_schedule_matches_reference(schedule, dtype):
    dag, C, E, D = matmul_bias_relu(21, 35, 13, dtype)  # no split factor divides these
    s = dag.get_init_state()
    if schedule is not None:
        schedule(s, C, E, D)
    check(dag, s)
    # The JSON form replays to the same loop nest and the same results.
    s2 = ans.State.from_json(dag, s.to_json())
    assert str(s2) == str(s)
    check(dag, s2, seed=1)


# ---- differential fuzzing through the real code generator ----

def random_step(s, rng):
    stages = [st for st in s.stages if st.op.op_kind == "compute"]
    st = rng.choice(stages)
    n = len(st.iters)
    it = rng.randrange(n)
    kind = rng.randrange(9)
    if kind <= 2:
        return lambda: s.split(st.name, it, [rng.randint(1, 6) for _ in range(rng.randint(1, 2))])
    if kind == 3:
        return lambda: s.fuse(st.name, list(range(it, min(n, it + 2))))
    if kind == 4:
        order = list(range(n))
        rng.shuffle(order)
        return lambda: s.reorder(st.name, order)
    if kind == 5:
        ann = rng.choice(["parallel", "vectorize", "unroll"])
        return lambda: getattr(s, ann)(st.name, it)
    if kind == 6:
        later = [x for x in s.stages if x.op.op_kind == "compute"]
        target = rng.choice(later)
        return lambda: s.compute_at(st.name, target.name, rng.randrange(len(target.iters)))
    if kind == 7:
        return lambda: s.compute_inline(st.name)
    return lambda: s.cache_write(st.name, "local")


def test_random_schedules_match_reference():
    cases = int(os.environ.get("AUTOSCHED_FUZZ_CASES", "6"))
    rejected = 0
    for case in range(cases):
        rng = random.Random(case)
        dag, C, E, D = matmul_bias_relu(9, 13, 7, "float32")
        s = dag.get_init_state()
        for _ in range(8):
            try:
                random_step(s, rng)()
            except ValueError as err:  # invalid steps are rejected with a message naming the step
                assert "step " in str(err)
                rejected += 1
        check(dag, s, seed=case)
    assert rejected > 0
