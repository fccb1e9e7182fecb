"""The Python State API: steps, printing, replay, JSON, errors and lowering."""
import pytest

import autosched as ans
from autosched import te


def matmul_relu(n=10, m=9, k=7):
    a = te.placeholder((n, k), name="A")
    b = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="k")
    c = te.compute((n, m), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="C")
    d = te.compute((n, m), lambda i, j: te.max(c[i, j], 0.0), name="D")
    return ans.ComputeDAG([a, b, d]), c, d


def test_steps_apply_and_print():
    dag, C, D = matmul_relu()
    s = dag.get_init_state()
    i, j, k = s[C].iters
    io, ii = s.split(C, i, [4])
    assert (io.name, io.extent, ii.extent) == ("i.0", 3, 4)
    jo, ji = s.split(C, j, [3])
    s.reorder(C, [io, jo, k, ii, ji])
    fused = s.fuse(C, [io, jo])
    assert fused.name == "i.0@j.0" and fused.extent == 9
    s.parallel(C, fused)
    s.vectorize(C, s[C].iters[-1])
    s.unroll("C", 2)
    text = str(s)
    assert "parallel i.0@j.0 (0,9)" in text
    assert "vectorize j.1 (0,3)" in text
    assert "unroll i.1 (0,4)" in text
    assert "Placeholder: A, B" in text


def test_replay_json_and_python_steps():
    dag, C, D = matmul_relu()
    s = dag.get_init_state()
    local = s.cache_write(C, "local")
    assert local.name == "C.local"
    s.split(C, 0, [2, 2])
    s.compute_at(local, C, 1)
    s2 = ans.State.from_json(dag, s.to_json())
    assert s2 == s and str(s2) == str(s)
    code = dag.print_python_steps(s)
    assert 's.cache_write("C", "local")' in code
    assert 's.compute_at("C.local", "C", 1)' in code
    # The printed steps are valid Python of this API and replay the state.
    s3 = dag.get_init_state()
    exec(code, {"s": s3})
    assert s3 == s and str(s3) == str(s)


def test_bound_inference_after_compute_at():
    dag, C, D = matmul_relu()
    s = dag.get_init_state()
    s.split(D, 0, [4])
    s.split(D, 2, [5])
    s.reorder(D, [0, 2, 1, 3])
    s.compute_at(C, D, 1)
    bounded = dag.infer_bound(s)
    assert [it.extent for it in bounded[C].iters] == [4, 5, 7]
    assert bounded[C].attach_point == ("D", "j.0")
    ir = ans.core.state.lower_state_text(s)
    assert "allocate C: float32[4, 5]" in ir


@pytest.mark.parametrize("make_error, words", [
    (lambda s, C, D: s.vectorize(C, 2), ["step 0 (annotation)", "vectorize", "reduce"]),
    (lambda s, C, D: s.split(C, 0, [0]), ["step 0 (split)", "bad factor"]),
    (lambda s, C, D: s.split("nope", 0, [2]), ["no stage named 'nope'"]),
    (lambda s, C, D: s.split(C, "zz", [2]), ["no iterator 'zz'"]),
    (lambda s, C, D: (s.parallel(C, 0), s.parallel(C, 1)), ["step 1 (annotation)", "nested parallel"]),
    (lambda s, C, D: s.compute_inline(C), ["reduction"]),
    (lambda s, C, D: s.pragma(C, 0, "bogus"), ["unknown pragma"]),
])
def test_invalid_steps_raise_value_error_naming_the_step(make_error, words):
    dag, C, D = matmul_relu()
    s = dag.get_init_state()
    with pytest.raises(ValueError) as info:
        make_error(s, C, D)
    for w in words:
        assert w in str(info.value)


def test_compute_at_breaking_a_dependence_is_rejected():
    a = te.placeholder((8,), name="A")
    b = te.compute((8,), lambda i: a[i] * 2.0, name="B")
    c = te.compute((8,), lambda i: b[i] + 1.0, name="C")
    d = te.compute((8,), lambda i: b[i] + c[i], name="D")
    dag = ans.ComputeDAG([a, d])
    s = dag.get_init_state()
    with pytest.raises(ValueError, match=r"step 0 \(compute_at\).*breaks a dependence"):
        s.compute_at(b, c, 0)  # D reads B outside C's loop
    s.compute_inline(c)  # now only D reads B (directly and through C)
    s.compute_at(b, d, 0)
    assert s[b].compute_at == "at"


def test_ambiguous_stage_name_is_refused_and_tensors_pick_their_own_stage():
    import numpy as np

    import autosched as ans
    from autosched import ops, te

    x = te.placeholder((5, 7), name="x")
    first = ops.add(x, 1.0)
    second = ops.add(first, 2.0)  # same default name as `first`
    dag = ans.ComputeDAG([x, second])
    s = dag.get_init_state()
    with pytest.raises(ValueError, match="ambiguous"):
        s.split(first.name, 0, [2])
    s.split(second, 1, [3])
    s.vectorize(second, 2)
    assert len(s[second].iters) == 3 and len(s[first].iters) == 2
    data = np.random.default_rng(0).standard_normal((5, 7)).astype("float32")
    out = np.zeros((5, 7), "float32")
    ans.build(dag, s)(data, out)
    np.testing.assert_allclose(out, data + 3.0, rtol=1e-6)


def test_repeated_cache_write_gets_a_unique_stage_name():
    import numpy as np

    a = te.placeholder((7, 5), name="a")
    k = te.reduce_axis((0, 5), name="k")
    c = te.compute((7,), lambda i: te.sum(a[i, k], axis=k), name="c")
    dag = ans.ComputeDAG([a, c])
    s = dag.get_init_state()
    first = s.cache_write(c, "local")
    second = s.cache_write(c, "local")
    assert (first.name, second.name) == ("c.local", "c.local_1")
    same = ans.State.from_json(dag, s.to_json())
    assert str(same) == str(s)
    data = np.random.default_rng(1).standard_normal((7, 5)).astype("float32")
    out = np.zeros(7, "float32")
    ans.build(dag, s)(data, out)
    np.testing.assert_allclose(out, data.sum(axis=1), rtol=1e-5)
