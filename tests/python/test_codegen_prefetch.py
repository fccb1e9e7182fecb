"""Software prefetch in CPU kernels (cpp/codegen/prefetch_plan.h): the outermost serial loop that streams a
4-128 KiB slice of a read-only argument with enough arithmetic per element prefetches the next iteration's
slice, once per element, in the first pass of the loops inside that do not move along it; loads that an outer
serial loop repeats, copies and other kernels prefetch nothing; `-prefetch=off` turns it off. Results equal
the reference on dividing and awkward shapes either way.
"""
import re

import numpy as np
import pytest

import autosched as ans
from schedule_helpers import check, matmul

pytestmark = pytest.mark.needs_llvm

LANES = ans._core.default_hardware_params(ans.Target("llvm")).vector_unit_bytes // 4
ROWS, VECTORS = 6, 4
STEP = 64  # reduction steps per iteration of the outer reduction loop: a slice of B of STEP x VECTORS vectors


def weight_streaming_matmul(n, m, k, repeat_rows_outside=False):
    """C = A @ B like a convolution of a network's last layers: column blocks of VECTORS vectors in parallel,
    then the reduction in steps of STEP (ko), then two passes over the rows (io, which does not move along B),
    the inner reduction step, and ROWS x VECTORS vectors unrolled. B's slice of one ko iteration is STEP x
    VECTORS x LANES floats, read again by each pass of io. With repeat_rows_outside, io runs outside ko: every
    row block then reads all of B again, from the caches after the first."""
    dag, c = matmul(n, m, k)
    s = dag.get_init_state()
    i, j, kk = s[c].iters
    io, ii = s.split(c, i, [ROWS])
    jo, ji = s.split(c, j, [VECTORS * LANES])
    jv, jl = s.split(c, ji, [LANES])
    ko, ki = s.split(c, kk, [STEP])
    order = [jo, io, ko, ki, ii, jv, jl] if repeat_rows_outside else [jo, ko, io, ki, ii, jv, jl]
    s.reorder(c, order)
    s.parallel(c, jo)
    s.unroll(c, ii)
    s.unroll(c, jv)
    s.vectorize(c, jl)
    return dag, s


def prefetches(mod):
    return re.findall(r"^\s*prefetcht1\s+(\S+)", mod.get_source("asm"), re.M)


def test_streamed_slice_is_prefetched_once_per_vector_in_the_first_pass():
    dag, s = weight_streaming_matmul(2 * ROWS, 2 * VECTORS * LANES, 3 * STEP)
    mod = check(dag, s)
    # One per vector of B's row in the unrolled block (the ROWS copies load the same vectors).
    assert len(prefetches(mod)) == VECTORS, mod.get_source("asm")
    # Guarded by the first pass of the rows (io), which does not move along B.
    ll = mod.get_source("ll")
    assert ll.count("call void @llvm.prefetch") == VECTORS, ll
    assert "prefetch_done" in ll


def test_prefetch_off_builds_the_same_kernel_without_prefetches():
    dag, s = weight_streaming_matmul(2 * ROWS, 2 * VECTORS * LANES, 3 * STEP)
    mod = check(dag, s, target="llvm -prefetch=off")
    assert prefetches(mod) == []
    assert ans.Target("llvm -prefetch=off").text == "llvm -prefetch=off"
    with pytest.raises(ValueError, match="prefetch"):
        ans.Target("llvm -prefetch=maybe")


def test_slice_an_outer_loop_reads_again_is_not_prefetched():
    dag, s = weight_streaming_matmul(2 * ROWS, 2 * VECTORS * LANES, 3 * STEP, repeat_rows_outside=True)
    assert prefetches(check(dag, s)) == []


def test_copy_streams_without_prefetch():
    """A copy does one store per element it streams: the hardware prefetcher follows it."""
    from autosched import te
    a = te.placeholder((64, 4096), name="A")
    b = te.compute((64, 4096), lambda i, j: a[i, j] * 2, name="B")
    dag = ans.ComputeDAG([a, b])
    s = dag.get_init_state()
    i, j = s["B"].iters
    s.vectorize("B", s.split("B", j, [LANES])[1])
    assert prefetches(check(dag, s)) == []


@pytest.mark.parametrize("n, m, k", [(2 * ROWS, 2 * VECTORS * LANES, 3 * STEP + 7), (7, 3 * VECTORS * LANES - 5, 131),
                                     (1, VECTORS * LANES, STEP + 1), (13, VECTORS * LANES + 1, 2 * STEP)])
def test_prefetching_kernels_equal_the_reference_on_awkward_shapes(n, m, k):
    """Non-dividing splits (guards and partitioned tails), a prime and a single row: whatever the planner
    picks, the results equal the reference evaluator's, and the last iteration's prefetch past the end of B
    (which never faults) changes nothing."""
    dag, s = weight_streaming_matmul(n, m, k)
    with_prefetch = check(dag, s)
    without = check(dag, s, target="llvm -prefetch=off")
    rng = np.random.default_rng(3)
    a = rng.standard_normal((n, k)).astype("float32")
    b = rng.standard_normal((k, m)).astype("float32")
    out1, out2 = np.zeros((n, m), "float32"), np.zeros((n, m), "float32")
    with_prefetch(a, b, out1)
    without(a, b, out2)
    np.testing.assert_array_equal(out1, out2)
