"""Differential fuzzer of the schedule language over the operator library's DAGs.

Each case picks a DAG of op_cases.CASES and a seeded random sequence of steps (split with random lengths,
most of which do not divide, fuse of adjacent iterators, reorder, parallel / vectorize / unroll, pragma,
compute_at to a random iterator of a consumer, compute_inline, compute_root, cache_write, rfactor). A step
is either rejected with a ValueError whose message names the step, leaving the state as it was, or
accepted; the final state must replay from its JSON to the same loop nest, build, and compute what the
reference evaluator computes.

CI runs a bounded number of cases (FUZZ_CASES below). A long local run:
    AUTOSCHED_FUZZ_CASES=5000 AUTOSCHED_FUZZ_SEED=1000 python3 -m pytest tests/python/test_fuzz_library.py
A failing case prints its DAG, dtype and the accepted steps as Python (dag.print_python_steps), which
replay it. States whose loop nests would run more than MAX_ITERATIONS innermost iterations are only
replayed, not built.
"""
import os
import random

import pytest

import autosched as ans
from autosched import te

from op_cases import CASES
from schedule_helpers import access, check, compute_stages, loop_iterations

FUZZ_CASES = int(os.environ.get("AUTOSCHED_FUZZ_CASES", "100"))
FUZZ_SEED = int(os.environ.get("AUTOSCHED_FUZZ_SEED", "0"))
CASES_PER_TEST = 10
# Random splits of small extents by large factors multiply the iterations of guarded loops; states above
# this many innermost iterations are checked for replay only, not built and run.
MAX_ITERATIONS = 300_000

ANNOTATIONS = ("parallel", "vectorize", "unroll")


def _random_split(s, rng, name):
    iters = s[name].iters
    it = rng.randrange(len(iters))
    lengths = [rng.choice([1, 2, 3, 4, 5, 7, 8, 16]) for _ in range(rng.choice([1, 1, 2]))]
    return lambda: s.split(name, it, lengths, inner_to_outer=rng.random() < 0.85)


def _random_fuse(s, rng, name):
    n = len(s[name].iters)
    first = rng.randrange(n)
    count = rng.choice([2, 2, 3])
    return lambda: s.fuse(name, list(range(first, min(n, first + count))))


def _random_reorder(s, rng, name):
    order = list(range(len(s[name].iters)))
    rng.shuffle(order)
    return lambda: s.reorder(name, order)


def _random_annotation(s, rng, name):
    it = rng.randrange(len(s[name].iters))
    return lambda: getattr(s, rng.choice(ANNOTATIONS))(name, it)


def _random_pragma(s, rng, name):
    it = rng.randrange(len(s[name].iters))
    return lambda: s.pragma(name, it, "auto_unroll_max_step$%d" % rng.choice([0, 4, 16, 64]))


def _random_compute_at(s, rng, name):
    consumers = [c for c in access(s, name)["consumers"] if s[c].iters]
    if not consumers or rng.random() < 0.1:  # sometimes any later stage (often invalid)
        later = compute_stages(s)
        later = [c for c in later[later.index(name) + 1:] if s[c].iters]
        if not later:
            return None
        consumers = later
    target = rng.choice(consumers)
    return lambda: s.compute_at(name, target, rng.randrange(len(s[target].iters)))


def _random_rfactor(s, rng, name):
    iters = s[name].iters
    reduce = [i for i, it in enumerate(iters) if it.kind == "reduce"]
    if not reduce:
        return None
    num_axes = len(s[name].op.axis)
    return lambda: s.rfactor(name, rng.choice(reduce), rng.randint(0, num_axes))


STEP_MAKERS = [  # (weight, maker)
    (25, _random_split),
    (10, _random_fuse),
    (10, _random_reorder),
    (15, _random_annotation),
    (4, _random_pragma),
    (14, _random_compute_at),
    (8, lambda s, rng, name: lambda: s.compute_inline(name)),
    (3, lambda s, rng, name: lambda: s.compute_root(name)),
    (5, lambda s, rng, name: lambda: s.cache_write(name, "local")),
    (6, _random_rfactor),
]


def random_step(s, rng):
    """A random step on a random compute stage of s, as a thunk; None when the draw does not apply."""
    name = rng.choice(compute_stages(s))
    if not s[name].iters:
        return None
    weights = [w for w, _ in STEP_MAKERS]
    maker = rng.choices([m for _, m in STEP_MAKERS], weights)[0]
    return maker(s, rng, name)


def run_case(case_id, build=True):
    """One fuzz case; returns (accepted, rejected) step counts. Raises AssertionError naming the case."""
    rng = random.Random(case_id)
    case = rng.choice(sorted(CASES))
    builder, dtypes, positive, _ = CASES[case]
    dtype = dtypes[0] if rng.random() < 0.7 else rng.choice(dtypes)
    dag = ans.ComputeDAG(builder(dtype))
    s = dag.get_init_state()
    accepted = rejected = 0
    for _ in range(rng.randint(1, 14)):
        step = random_step(s, rng)
        if step is None:
            continue
        before = s.to_json()
        try:
            step()
            accepted += 1
        except ValueError as err:
            rejected += 1
            assert "step " in str(err) or "stage" in str(err), f"case {case_id}: unclear message: {err}"
            assert s.to_json() == before, f"case {case_id}: a rejected step changed the state"
    label = f"fuzz case {case_id} ({case}, {dtype}):\n{dag.print_python_steps(s)}"
    replayed = ans.State.from_json(dag, s.to_json())
    assert str(replayed) == str(s), label
    if not build or loop_iterations(s) > MAX_ITERATIONS:
        return accepted, rejected
    try:
        check(dag, s, seed=case_id, positive=positive)
    except Exception as err:  # noqa: BLE001 (any failure of an accepted state is reported with its steps)
        raise AssertionError(f"{label}\n{type(err).__name__}: {err}") from None
    return accepted, rejected


@pytest.mark.parametrize("chunk", range((FUZZ_CASES + CASES_PER_TEST - 1) // CASES_PER_TEST))
def test_random_step_sequences_match_reference(chunk):
    first = FUZZ_SEED + chunk * CASES_PER_TEST
    last = min(FUZZ_SEED + FUZZ_CASES, first + CASES_PER_TEST)
    for case_id in range(first, last):
        run_case(case_id)


def test_fuzzer_makes_both_valid_and_invalid_steps():
    accepted = rejected = 0
    for case_id in range(40):
        a, r = run_case(case_id, build=False)
        accepted, rejected = accepted + a, rejected + r
    assert accepted > 20 and rejected > 5, (accepted, rejected)


# ---- reproducers of bugs the fuzzer found, kept as regression tests ----

def test_rfactor_after_splitting_a_spatial_axis():
    """rfactor derived the values of every split of the stage, also of other axes' splits whose parts
    had no value ("operand of mul is undefined")."""
    a, b = te.placeholder((5, 7), name="A"), te.placeholder((7, 6), name="B")
    k = te.reduce_axis((0, 7), name="k")
    c = te.compute((5, 6), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    dag = ans.ComputeDAG([a, b, c])
    s = dag.get_init_state()
    s.split("C", 2, [3])
    s.split("C", 0, [2])
    s.rfactor("C", 3, 0)
    check(dag, s)


def test_full_reduction_to_a_scalar_builds():
    """A reduction over every axis has a 0-d output; its loads and stores need an index."""
    x = te.placeholder((5, 7), name="x")
    r0, r1 = te.reduce_axis((0, 5), name="r0"), te.reduce_axis((0, 7), name="r1")
    total = te.compute((), lambda: te.sum(x[r0, r1], axis=[r0, r1]), name="total")
    scaled = te.compute((3,), lambda i: x[i, i] * total[()], name="scaled")
    dag = ans.ComputeDAG([x, scaled])
    check(dag, dag.get_init_state())
    s = dag.get_init_state()
    s.split("total", 1, [3])
    s.rfactor("total", 2, 0)
    check(dag, s)


def test_vectorize_fallback_does_not_unroll_a_loop_nest():
    # A vectorized loop that cannot become SIMD falls back to a plain loop when
    # its body holds loops: unrolling copies of a whole nest once made this
    # candidate take 39 s to compile.
    from autosched import ops

    data, kernel = te.placeholder((1, 7, 5, 3), name="data"), te.placeholder((3, 3, 3, 4), name="kernel")
    dag = ans.ComputeDAG([data, kernel, ops.conv2d_nhwc(data, kernel, stride=2, padding=1)])
    s = dag.get_init_state()
    s.compute_at("PaddedInput", "Conv2dOutput", 0)
    s.split("Conv2dOutput", 6, [1])
    s.split("PaddedInput", 2, [4, 16], inner_to_outer=False)
    s.split("PaddedInput", 0, [8])
    s.compute_at("PaddedInput", "Conv2dOutput", 7)
    s.split("Conv2dOutput", 0, [5])
    s.vectorize("Conv2dOutput", 4)
    s.reorder("PaddedInput", [3, 5, 1, 6, 0, 2, 4])
    assert "unrolled for (ff" not in ans.build(dag, s).lowered_ir()
    check(dag, s, seed=3)
