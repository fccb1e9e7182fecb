"""The pack step: a copy of a tensor in a tile-contiguous layout (Bp[jo, k, jv] = B[k, jo * L + jv]) read by
the given stages, built with the LLVM backend and compared with the reference evaluator and numpy."""
import numpy as np
import pytest

import autosched as ans
from autosched import ops, te

from schedule_helpers import check, matmul_tensors


def matmul(n, m, k):
    a, b, c = matmul_tensors(n, m, k)
    return ans.ComputeDAG([a, b, c]), b, c


def run_matmul(dag, s, n, m, k):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((n, k)).astype("float32")
    b = rng.standard_normal((k, m)).astype("float32")
    c = np.zeros((n, m), "float32")
    ans.build(dag, s)(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    check(dag, s)


@pytest.mark.parametrize("m,lanes", [(32, 8), (37, 8), (29, 7), (5, 8), (13, 1)])
def test_pack_matmul_b(m, lanes):
    n, k = 11, 19
    dag, B, C = matmul(n, m, k)
    s = dag.get_init_state()
    Bp = s.pack(B, [C], 1, lanes)
    assert Bp.name == "B.pack"
    assert tuple(Bp.shape) == ((m + lanes - 1) // lanes, k, lanes)
    assert [st.name for st in s.stages] == ["A", "B", "B.pack", "C"]
    run_matmul(dag, s, n, m, k)


@pytest.mark.parametrize("m,lanes", [(64, 16), (41, 8)])
def test_pack_scheduled(m, lanes):
    """The pack stage parallel and vectorized; the reader split, reordered and computed through a cache."""
    n, k = 24, 23
    dag, B, C = matmul(n, m, k)
    s = dag.get_init_state()
    Bp = s.pack(B, [C], 1, lanes)
    jo, kk, jv = s[Bp].iters
    s.parallel(Bp, jo)
    s.vectorize(Bp, jv)
    CC = s.cache_write(C, "local")
    i, j = s[C].iters
    io, ii = s.split(C, i, [8])
    jt, jr = s.split(C, j, [lanes])
    s.reorder(C, [io, jt, ii, jr])
    s.parallel(C, io)
    s.compute_at(CC, C, jt)
    ci, cj, ck = s[CC].iters
    s.reorder(CC, [ck, ci, cj])
    s.unroll(CC, ci)
    s.vectorize(CC, cj)
    s.vectorize(C, jr)
    run_matmul(dag, s, n, m, k)
    # Records and printed steps replay the same state.
    same = ans.State.from_json(dag, s.to_json())
    assert same == s and str(same) == str(s)
    code = dag.print_python_steps(s)
    assert f's.pack("B", ["C"], 1, {lanes})' in code
    replayed = dag.get_init_state()
    exec(code, {"s": replayed})
    assert replayed == s and str(replayed) == str(s)


def test_pack_after_split_of_reader():
    """Packing after the reader was tiled keeps the reader's loops."""
    n, m, k = 16, 40, 9
    dag, B, C = matmul(n, m, k)
    s = dag.get_init_state()
    i, j, kk = s[C].iters
    jo, ji = s.split(C, j, [8])
    s.reorder(C, [i, jo, kk, ji])
    s.pack(B, [C], 1, 8)
    assert [it.name for it in s[C].iters] == ["i", "j.0", "k", "j.1"]
    s.vectorize(C, s[C].iters[3])
    run_matmul(dag, s, n, m, k)


def test_pack_conv2d_nhwc_weight():
    data = te.placeholder((1, 7, 7, 5), name="data")
    kernel = te.placeholder((3, 3, 5, 19), name="kernel")
    out = ops.conv2d_nhwc(data, kernel, 1, 1)
    dag = ans.ComputeDAG([data, kernel, out])
    s = dag.get_init_state()
    (reader,) = [st.name for st in s.stages if st.op.op_kind == "compute" and st.name != "data" and
                 any(it.kind == "reduce" for it in st.iters)]
    packed = s.pack("kernel", [reader], 3, 8)
    assert tuple(packed.shape) == (3, 3, 3, 5, 8)  # [co // 8, kh, kw, ci, co % 8]
    it = s[packed].iters
    s.parallel(packed, it[0])
    s.vectorize(packed, it[-1])
    check(dag, s)


def test_pack_computed_tensor():
    """A computed tensor can be packed too (its readers read the packed copy)."""
    a = te.placeholder((6, 20), name="A")
    b = te.placeholder((20, 21), name="B")
    e = te.compute((20, 21), lambda x, y: b[x, y] * 2.0, name="E")
    r = te.reduce_axis((0, 20), name="k")
    c = te.compute((6, 21), lambda i, j: te.sum(a[i, r] * e[r, j], axis=r), name="C")
    dag = ans.ComputeDAG([a, b, c])
    s = dag.get_init_state()
    s.pack(e, [c], 1, 4)
    check(dag, s)


@pytest.mark.parametrize("args,words", [
    (("B", ["C"], 2, 8), "axis 2 is out of range"),
    (("B", ["C"], -1, 8), "axis -1 is out of range"),
    (("B", ["C"], 1, 0), "lanes must be at least 1"),
    (("B", ["E"], 1, 4), "stage 'E' does not read 'B'"),
    (("B", [], 1, 4), "needs at least one reader"),
])
def test_pack_errors(args, words):
    a = te.placeholder((4, 4), name="A")
    b = te.placeholder((4, 8), name="B")
    r = te.reduce_axis((0, 4), name="k")
    c = te.compute((4, 8), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="C")
    e = te.compute((4, 4), lambda x, y: a[x, y] + 1.0, name="E")
    dag = ans.ComputeDAG([a, b, c, e])
    s = dag.get_init_state()
    before = str(s)
    with pytest.raises(ValueError, match=r"\(pack\).*" + words):
        s.pack(*args)
    assert str(s) == before
