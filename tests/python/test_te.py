"""The te DSL, ComputeDAG and the reference evaluator seen from Python."""
import numpy as np
import pytest

import autosched as ans
from autosched import te


def matmul_tensors(n=4, l=5, m=3, names=("A", "B", "C", "k")):
    a = te.placeholder((n, l), name=names[0])
    b = te.placeholder((l, m), name=names[1])
    k = te.reduce_axis((0, l), name=names[3])
    c = te.compute((n, m), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name=names[2])
    return [a, b, c]


# ---- building and printing ----

def test_placeholder_and_compute_properties():
    a, b, c = matmul_tensors()
    assert a.shape == (4, 5) and a.dtype == "float32" and a.name == "A" and a.ndim == 2
    assert a.op_kind == "placeholder" and c.op_kind == "compute"
    assert [iv.name for iv in c.axis] == ["i", "j"]
    assert c.reduce_axis[0].dom.extent == 5 and c.reduce_axis[0].dom.min == 0
    assert te.placeholder(7, name="v").shape == (7,)


def test_lambda_with_varargs_gets_default_names():
    a = te.placeholder((2, 3), name="A")
    b = te.compute(a.shape, lambda *idx: a[idx] * 2, name="B")
    assert [iv.name for iv in b.axis] == ["i0", "i1"]
    assert "B(i0, i1) = (A[i0, i1]*2f)" in str(ans.ComputeDAG([a, b]))


def test_expression_operators_and_literals():
    x = te.placeholder((3,), name="x")
    i = te.var("i")
    f = x[i]
    assert (f + 1).dtype == "float32"  # int literal takes the float type
    assert (1 - f).dtype == "float32" and (2 * f / 3).dtype == "float32"
    assert (i // 2 + i % 3).dtype == "int32"
    assert (f < 1).dtype == "bool" and ((f < 1) & (f > 0) | ~(f == 2)).dtype == "bool"
    assert str(i + 1) == "(i + 1)"
    assert te.const(2.5).dtype == "float32" and te.const(2).dtype == "int32" and te.const(True).dtype == "bool"
    assert te.const(3, "float16").dtype == "float16"
    assert te.cast(i, "float32").dtype == "float32" and f.astype("int8").dtype == "int8"
    assert te.max(f, 0.0).dtype == "float32" and te.min(i, 4).dtype == "int32"
    assert te.if_then_else(i < 2, f, 0.0).dtype == "float32" and te.select(i < 2, 1.0, f).dtype == "float32"
    assert te.abs(-f).dtype == "float32" and te.power(f, 2.0).dtype == "float32"
    assert te.all(i > 0, i < 3, i != 1).dtype == "bool" and te.any([i > 0, i < 3]).dtype == "bool"
    assert te.min_value("float32").value == -np.inf and te.max_value("int8").value == 127
    assert {f, f} == {f}  # hashable by identity although == builds an expression


def test_iter_var_behaves_as_its_variable():
    k = te.reduce_axis((0, 4), name="k")
    assert str(k + 1) == "(k + 1)" and str(2 * k) == "(2*k)"
    assert k.var.name == "k"


# ---- errors: a Python exception with a message naming the problem ----

def test_wrong_number_of_indices_names_tensor_and_rank():
    a = te.placeholder((4, 5), name="A")
    with pytest.raises(ValueError, match="tensor 'A' has rank 2"):
        a[1]
    with pytest.raises(ValueError, match="'A' has rank 2"):
        te.compute((4,), lambda i: a[i, i, i])


def test_reduce_axis_not_used():
    a = te.placeholder((4, 5), name="A")
    r = te.reduce_axis((0, 5), name="r")
    with pytest.raises(ValueError, match="reduce axis 'r' is not used"):
        te.compute((4,), lambda i: te.sum(a[i, 0], axis=r))


@pytest.mark.parametrize("dtype", ["float8", "complex64"])
def test_unsupported_dtype(dtype):
    with pytest.raises(TypeError, match=f"unsupported dtype '{dtype}'"):
        te.placeholder((2,), dtype=dtype)


def test_float_literal_on_int_expression():
    i = te.var("i")
    with pytest.raises(TypeError, match="float literal 0.5 .* int32.*cast"):
        i + 0.5
    with pytest.raises(TypeError, match="float literal"):
        0.5 * i


def test_integer_literal_must_fit_the_dtype():
    small = te.placeholder((2,), name="small", dtype="int8")
    assert (small[0] + 127).dtype == "int8"
    with pytest.raises(TypeError, match="integer literal 300 does not fit in int8"):
        small[0] + 300


def test_numpy_scalars_are_literals():
    x = te.placeholder((2,), name="x")
    assert (x[0] * np.float32(2)).dtype == "float32" and (x[0] + np.int64(1)).dtype == "float32"
    assert te.const(np.int64(3), "int64").value == 3
    with pytest.raises(TypeError, match="does not fit in int32"):
        te.const(2**40)


def test_mixed_dtypes_name_both():
    x = te.placeholder((3,), name="x", dtype="float16")
    y = te.placeholder((3,), name="y", dtype="float32")
    with pytest.raises(TypeError, match="float16 and float32"):
        x[0] + y[0]


def test_expression_has_no_truth_value():
    i = te.var("i")
    with pytest.raises(TypeError, match="no truth value"):
        bool(i < 3)
    with pytest.raises(TypeError, match="no truth value"):
        if i == 1:
            pass


def test_bad_operand_and_iteration():
    a = te.placeholder((4,), name="A")
    with pytest.raises(TypeError):
        a[0] + "x"
    assert (a[0] == None) is False  # noqa: E711
    with pytest.raises(TypeError, match="cannot be iterated"):
        list(a)
    with pytest.raises(ValueError, match="compute 'Q': the function takes 1 index argument"):
        te.compute((4, 4), lambda i: a[i], name="Q")
    with pytest.raises(TypeError, match="axis="):
        te.sum(a[0])


def test_evaluate_checks_input_shapes():
    dag = ans.ComputeDAG(matmul_tensors())
    with pytest.raises(ValueError, match="tensor 'A' has shape \\(2, 5\\), expected \\(4, 5\\)"):
        ans.evaluate(dag, [np.zeros((2, 5)), np.zeros((5, 3))])
    with pytest.raises(ValueError, match="expected 2 input"):
        ans.evaluate(dag, [np.zeros((4, 5))])


# ---- ComputeDAG ----

def test_compute_dag_prints_matmul():
    dag = ans.ComputeDAG(matmul_tensors())
    text = str(dag)
    assert "C(i, j) += (A[i, k]*B[k, j])" in text
    assert "A = PLACEHOLDER [4, 5]" in text
    assert dag.flop_ct == 2 * 4 * 3 * 5
    assert [t.name for t in dag.tensors] == ["A", "B", "C"]
    assert [t.name for t in dag.ops] == ["A", "B", "C"]
    info = dag.access_info("C")
    assert info["needs_multi_level_tiling"] and info["is_output"]


def test_workload_key_stable_under_renaming_and_sensitive_to_shape_dtype():
    key = ans.ComputeDAG(matmul_tensors()).workload_key()
    assert ans.ComputeDAG(matmul_tensors(names=("X", "Y", "Z", "r"))).workload_key() == key
    assert ans.ComputeDAG(matmul_tensors(n=8)).workload_key() != key
    a = te.placeholder((4, 5), name="A", dtype="float64")
    b = te.placeholder((5, 3), name="B", dtype="float64")
    k = te.reduce_axis((0, 5), name="k")
    c = te.compute((4, 3), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    assert ans.ComputeDAG([a, b, c]).workload_key() != key


def test_compute_dag_json_round_trip():
    dag = ans.ComputeDAG(matmul_tensors())
    back = ans.ComputeDAG.from_json(dag.to_json())
    assert back.workload_key() == dag.workload_key() and str(back) == str(dag)
    with pytest.raises(ValueError, match="not valid JSON"):
        ans.ComputeDAG.from_json("{oops")


# ---- evaluation ----

def test_evaluate_matmul_matches_numpy():
    a, b, c = matmul_tensors()
    out = te.compute(c.shape, lambda i, j: te.max(c[i, j], 0.0) + 1, name="out")
    dag = ans.ComputeDAG([a, b, out])
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((4, 5)).astype(np.float32), rng.standard_normal((5, 3)).astype(np.float32)
    (result,) = ans.evaluate(dag, [x, y])
    assert result.dtype == np.float32 and result.shape == (4, 3)
    expect = np.maximum(x @ y, 0) + 1
    np.testing.assert_allclose(result, expect, rtol=1e-5)
    points = ans.evaluate_points(dag, [x, y], 0, [(0, 0), (3, 2)])
    np.testing.assert_allclose(points, [result[0, 0], result[3, 2]], rtol=1e-6)


def test_prod_reduction_and_two_element_reduction():
    a = te.placeholder((3, 2), name="A")
    k = te.reduce_axis((0, 2), name="k")
    p = te.compute((3,), lambda i: te.prod(a[i, k], axis=k), name="P")
    s = te.compute((3,), lambda i: te.sum(a[i, k], axis=k, where=k > 0), name="S")
    m = te.compute((3,), lambda i: te.max(a[i, k], axis=k), name="M")
    x = np.array([[1.5, 2.0], [-3.0, 4.0], [0.5, 0.25]], dtype=np.float32)
    prod, tail, largest = ans.evaluate(ans.ComputeDAG([a, p, s, m]), [x])
    np.testing.assert_allclose(prod, x.prod(axis=1))
    np.testing.assert_allclose(tail, x[:, 1])
    np.testing.assert_allclose(largest, x.max(axis=1))

    v = te.placeholder((2,), name="v")
    r = te.reduce_axis((0, 2), name="r")
    total = te.compute((1,), lambda i: te.sum(v[r], axis=r), name="total")
    (res,) = ans.evaluate(ans.ComputeDAG([v, total]), [np.array([2.5, -1.0], dtype=np.float32)])
    assert res.tolist() == [1.5]


def test_evaluate_float16_and_integer_division():
    h = te.placeholder((4,), name="h", dtype="float16")
    twice = te.compute((4,), lambda i: h[i] * 2, name="twice")
    (res,) = ans.evaluate(ans.ComputeDAG([h, twice]), [np.array([1, 0.5, -2, 1000], dtype=np.float16)])
    assert res.dtype == np.float16 and res.tolist() == [2, 1, -4, 2000]

    n = te.placeholder((4,), name="n", dtype="int32")
    q = te.compute((4,), lambda i: n[i] // 3 + n[i] % 3 * 10 + n[i] / 3 * 100, name="q")
    (res,) = ans.evaluate(ans.ComputeDAG([n, q]), [np.array([7, -7, 2, -2], dtype=np.int32)])
    # floordiv, floormod (sign of the divisor), truncating division
    assert res.tolist() == [2 + 10 + 200, -3 + 20 - 200, 0 + 20 + 0, -1 + 10 + 0]


def test_tensors_beyond_32_bit_indexing_are_refused():
    with pytest.raises(ValueError, match="too large"):
        te.placeholder((1 << 16, 1 << 15), name="big")
    with pytest.raises(ValueError, match="too large"):
        te.placeholder((1 << 40, 1 << 40), name="huge")
    te.placeholder((1 << 15, 1 << 15), name="fits")  # 2^30 elements is fine
    with pytest.raises(ValueError, match="32-bit"):
        te.reduce_axis((0, 1 << 32), name="k")


def test_a_dag_whose_construction_failed_still_prints():
    """A traceback keeps the half-made object of a failed ComputeDAG(...) and pytest prints it: its repr and str
    say it was not constructed instead of reaching the core's empty DAG (which crashed the process)."""
    x = te.placeholder((3,), name="x")
    for bad in ([1, 2], [x, x]):
        with pytest.raises((TypeError, ValueError)) as info:
            ans.ComputeDAG(bad)
        for tb in _frames(info.value.__traceback__):
            obj = tb.tb_frame.f_locals.get("self")
            if isinstance(obj, ans.ComputeDAG):
                assert repr(obj) == str(obj) == "ComputeDAG(not constructed)"
    assert "ops, key" in repr(ans.ComputeDAG([x]))


def _frames(tb):
    while tb is not None:
        yield tb
        tb = tb.tb_next
