"""The seams between the core and Python: enum names parsed by the core, steps applied through their
records, lowered functions, the ComputeDAG class, stage addressing, pickling and copying, and what a
state prints; the State API at its edges: split lengths past 32 bits, printed steps that replay with
duplicate stage names, argument types of split / te.sum / evaluate, and rfactor of fused reduce axes."""
import copy
import json
import pickle

import numpy as np
import pytest

import autosched as ans
from autosched import _core, te
from autosched.core.state import lower_state, lower_state_text

from schedule_helpers import (assert_close, cache_write_matmul, check, compute_at_inline, matmul, matmul_bias_relu,
                              random_inputs, vector_double)


# ---- enum names: one table per enum in the core ----

BINARY_OPS = ["add", "sub", "mul", "div", "mod", "floordiv", "floormod", "min", "max", "eq", "ne", "lt", "le",
              "gt", "ge"]


def test_every_binary_op_and_intrinsic_name_round_trips_through_the_tensor_graph():
    x = te.placeholder((4,), name="x")
    exprs = [_core.binary(op, x[0], x[1]) for op in BINARY_OPS]
    exprs += [_core.call(name, [x[0]]) for name in ["exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf",
                                                     "fabs", "floor", "ceil", "round"]]
    exprs += [_core.call("pow", [x[0], x[1]]), _core.call("if_then_else", [x[0] > x[1], x[0], x[1]])]
    r = te.reduce_axis((0, 4), name="r")
    exprs += [_core.reduce(c, x[r], [r]) for c in ["sum", "prod", "max", "min"]]

    def scalar(n, e):
        return te.compute((1,), lambda i: te.cast(e, "float32"), name=f"t{n}")

    outputs = [scalar(n, e) for n, e in enumerate(exprs)]
    dag = ans.ComputeDAG([x] + outputs)
    back = ans.ComputeDAG.from_json(dag.to_json())
    assert str(back) == str(dag) and back.workload_key() == dag.workload_key()


@pytest.mark.parametrize("make, words", [
    (lambda x: _core.binary("plus", x[0], x[1]), "unknown binary operator 'plus' (known: add, sub,"),
    (lambda x: _core.call("expm1", [x[0]]), "unknown intrinsic 'expm1' (known: exp, log,"),
    (lambda x: _core.reduce("avg", x[0], []), "unknown reduction 'avg' (known: sum, prod, max, min)"),
    (lambda x: _core.identity("avg", "float32"), "unknown reduction 'avg'"),
    (lambda x: _core.IterVar("i", 0, 4, "outer"), "unknown axis kind 'outer' (known: spatial, reduce)"),
])
def test_unknown_enum_names_are_refused_naming_the_known_ones(make, words):
    x = te.placeholder((4,), name="x")
    with pytest.raises(ValueError) as info:
        make(x)
    assert words in str(info.value)


def test_expression_kinds_and_memory_scopes_are_named_by_the_core():
    x = te.placeholder((4,), name="x")
    assert [(x[0] + x[1]).kind, x[0].kind, te.exp(x[0]).kind] == ["Binary", "TensorLoad", "Call"]
    dag, c = matmul(4, 4, 4)
    s = dag.get_init_state()
    local = s.cache_write(c, "local")
    assert s[local].scope == "local" and s[c].scope == "global"
    with pytest.raises(ValueError, match="step 1 \\(cache_write\\).*unknown memory scope 'texture'"):
        s.cache_write(c, "texture")


def test_a_malformed_graph_names_the_field_and_the_known_names():
    dag, _ = matmul(4, 4, 4)
    text = dag.to_json().replace('"op":"mul"', '"op":"times"')
    with pytest.raises(ValueError, match="malformed tensor graph: field '.*op': unknown binary operator 'times'"):
        ans.ComputeDAG.from_json(text)


# ---- every step through its record ----

def test_the_core_state_has_one_way_to_apply_a_step():
    steps = ["split", "follow_split", "follow_fused_split", "fuse", "reorder", "annotate", "pragma",
             "storage_align", "compute_at", "compute_inline", "compute_root", "cache_read", "cache_write",
             "rfactor"]
    assert not [name for name in steps if hasattr(_core.LoopState, name)]
    dag, C, E, D = matmul_bias_relu(8, 8, 8)
    core = _core.LoopState(dag).apply_step('["CI", 3]')
    assert core.stages[3].compute_at == "inlined" and core.to_json() == '[["CI",3]]'


def test_every_state_method_writes_the_record_it_replays():
    dag, C, E, D = matmul_bias_relu(12, 10, 8)
    s = dag.get_init_state()
    s.cache_read("A", "shared", [C])
    s.compute_inline(E)
    i, j = s[D].iters
    io, ii = s.split(D, i, [4])
    s.follow_split(D, j, 2, 1)
    s.pragma(D, io, "auto_unroll_max_step$8")
    local = s.cache_write(C, "local")
    s.compute_at(local, C, 0)
    s.compute_root(local)
    fused = s.fuse(C, s[C].iters[:2])
    s.parallel(C, fused)
    s.storage_align(local, s[local].iters[0], 4, 1)
    s.rfactor(local, s[local].iters[2], 0)
    records = [r[0] for r in json.loads(s.to_json())]
    assert records == ["CHR", "CI", "SP", "FSP", "PR", "CHW", "CA", "CR", "FU", "AN", "SA", "RF"]
    assert ans.State.from_json(dag, s.to_json()) == s


@pytest.mark.parametrize("make_error, error, words", [
    (lambda s, C: s.storage_align(C, 0, 2.5, 0), TypeError, "step 0 (storage_align): factor must be an integer"),
    (lambda s, C: s.rfactor(C, 2, "0"), TypeError, "step 0 (rfactor): factor_iter_id must be an integer"),
    (lambda s, C: s.cache_write(C, None), TypeError, "step 0 (cache_write): the scope must be a string"),
    (lambda s, C: s.reorder(C, [0, 1, 2**32]), ValueError, "stage 'C' has no iterator 4294967296 (it has 3)"),
    (lambda s, C: s.reorder(C, [0, 1, 7]), ValueError, "step 0 (reorder)"),
    (lambda s, C: s.follow_split(C, 0, 2**40, 1), ValueError, "step 0 (follow_split): src_step_id"),
    (lambda s, C: s.bind(C, 0, "warp.x"), ValueError, "unknown iterator annotation 'warp.x'"),
])
def test_step_arguments_are_checked_naming_the_step(make_error, error, words):
    dag, C = matmul(4, 4, 4)
    s = dag.get_init_state()
    with pytest.raises(error) as info:
        make_error(s, C)
    assert words in str(info.value)
    assert s.num_steps == 0


def test_a_malformed_record_is_refused_naming_it():
    dag, C = matmul(4, 4, 4)
    core = _core.LoopState(dag)
    with pytest.raises(ValueError, match="unknown step record 'XX'"):
        core.apply_step('["XX", 1]')
    with pytest.raises(ValueError, match="record 'SA'.*must be an integer"):
        core.apply_step('["SA", 2, 0, 1.5, 0]')


# ---- lowered functions ----

def test_lower_state_returns_a_lowered_function():
    dag, C = matmul(6, 5, 4)
    s = dag.get_init_state()
    s.split(C, 0, [2])
    f = lower_state(s)
    assert isinstance(f, _core.LoweredFunc)
    assert [(a.name, a.dtype, a.shape) for a in f.args] == \
        [("A", "float32", (6, 4)), ("B", "float32", (4, 5)), ("C", "float32", (6, 5))]
    assert f.name and "for (i.0, 0, 3)" in str(f) and str(f) == ans.core.state.lower_state_text(s)
    lowered = _core.lower(s)
    assert [a.name for a in lowered.args] == ["A", "B", "C"] and str(lowered) == ans.core.build.lower(s)


# ---- the ComputeDAG class ----

def test_dags_from_python_and_from_the_core_are_autosched_compute_dags():
    dag, C, E, D = matmul_bias_relu(8, 8, 8)
    assert issubclass(ans.ComputeDAG, _core.ComputeDAG) and ans.ComputeDAG is not _core.ComputeDAG
    assert not hasattr(_core.ComputeDAG, "get_init_state")  # nothing attached to the core's class
    task = ans.SearchTask(compute_dag=dag, target="llvm")
    s = dag.get_init_state()
    s.cache_write(C, "local")
    for other in [task.compute_dag, s.dag, ans.ComputeDAG.from_json(dag.to_json()), ans.ComputeDAG(dag)]:
        assert isinstance(other, ans.ComputeDAG)
        state = other.get_init_state()
        assert isinstance(state, ans.State) and str(other.infer_bound(state)) == str(state)
        assert other.print_python_steps(state) == ""


# ---- stage addressing, resolved by the core ----

def test_stages_by_tensor_name_and_position_including_negative():
    dag, C, E, D = matmul_bias_relu(8, 8, 8)
    s = dag.get_init_state()
    assert s[C].name == s["C"].name == s[2].name == "C"
    assert s[-1].name == "D" and dag.op_index(-1) == 4 and dag.op_index(D) == 4 and dag.op_index("E") == 3
    assert dag.access_info(C)["name"] == dag.access_info(2)["name"] == "C"
    local = s.cache_write(C, "local")
    assert s[C].name == "C" and s[local].name == "C.local"  # C's op was rebuilt: found by its name


@pytest.mark.parametrize("stage, error, words", [
    ("nope", ValueError, "no stage named 'nope' (the stages are A, B, C, E, D)"),
    (7, ValueError, "stage 7 does not exist (there are 5 stages"),
    (-6, ValueError, "stage -6 does not exist"),
    (True, TypeError, "a stage is given by tensor, name or index"),
    (2.0, TypeError, "a stage is given by tensor, name or index"),
])
def test_unknown_stages_are_refused_the_same_way_by_states_and_dags(stage, error, words):
    dag, C, E, D = matmul_bias_relu(8, 8, 8)
    with pytest.raises(error) as info:
        dag.get_init_state()[stage]
    assert words in str(info.value)
    if error is ValueError:
        with pytest.raises(ValueError) as info:
            dag.access_info(stage)
        assert words in str(info.value)


# ---- pickling and copying ----

def test_dag_state_and_tensor_pickle_to_equal_objects():
    dag, C, E, D = matmul_bias_relu(12, 10, 8)
    s = dag.get_init_state()
    s.compute_inline(E)
    cache_write_matmul(s, C)
    dag2 = pickle.loads(pickle.dumps(dag))
    assert isinstance(dag2, ans.ComputeDAG) and dag2.workload_key() == dag.workload_key()
    s2 = pickle.loads(pickle.dumps(s))
    assert isinstance(s2, ans.State) and s2 == s and str(s2) == str(s)
    assert ans.core.build.lower(s2) == ans.core.build.lower(s)
    best = pickle.loads(pickle.dumps(ans.core.state.BestState(s, dag.tensors)))
    assert isinstance(best, ans.core.state.BestState) and best == s and len(best.args) == len(dag.tensors)
    C2 = pickle.loads(pickle.dumps(C))
    assert (str(C2), C2.shape, C2.dtype) == (str(C), C.shape, C.dtype)
    rebuilt = ans.ComputeDAG(C2.input_tensors() + [C2])
    assert rebuilt.workload_key() == ans.ComputeDAG(C.input_tensors() + [C]).workload_key()


def test_copies_of_a_state_are_independent_and_immutable_values_are_shared():
    dag, C = matmul(8, 8, 8)
    s = dag.get_init_state()
    s.split(C, 0, [2])
    for s2 in [copy.copy(s), copy.deepcopy(s), s.copy()]:
        s2.parallel(C, 0)
        assert s.num_steps == 1 and s2.num_steps == 2
    assert copy.deepcopy(dag) is dag and copy.copy(C) is C
    tensors = copy.deepcopy(dag.tensors)  # still one graph
    assert ans.ComputeDAG(tensors).workload_key() == dag.workload_key()


def test_op_axes_read_as_in_tvm():
    dag, C = matmul(8, 6, 4)
    assert [ax.name for ax in C.op.axis] == ["i", "j"]
    assert [(ax.name, ax.dom.extent) for ax in C.op.reduce_axis] == [("k", 4)]
    assert C.op == C and C.op.name == "C"


# ---- what a state prints ----

def test_print_shows_inferred_extents_of_attached_stages():
    dag, C, E, D = matmul_bias_relu(21, 35, 13)
    s = dag.get_init_state()
    compute_at_inline(s, C, E, D)  # C at D's 4 x 8 tile
    text = str(s)
    assert "    for i (0,4)\n      for j (0,8)\n        for k (0,13)" in text, text
    assert "(0,21)" not in text and "(0,35)" not in text
    assert text == str(dag.infer_bound(s))


def test_print_marks_extents_not_yet_inferred():
    dag, C, E, D = matmul_bias_relu(21, 35, 13)
    s = dag.get_init_state()
    s.compute_inline(E)
    jo, ji = s.split(D, 1, [None])  # a sketch: the length is filled later
    s.compute_at(C, D, jo)
    text = str(s)
    assert "for j.1 (None)" in text
    assert "for i (0,?)" in text and "for k (0,?)" in text and "(0,13)" not in text, text


MAX = 2**31 - 1


# ---- split lengths are 32-bit, like shapes ----

@pytest.mark.parametrize("length", [2**31, 2**32 + 4, 2**63, 2**70])
def test_split_lengths_past_32_bits_are_refused(length):
    dag, b = vector_double()
    s = dag.get_init_state()
    with pytest.raises(ValueError) as info:
        s.split(b, 0, [length])
    message = str(info.value)
    assert "step 0 (split)" in message and str(length) in message and str(MAX) in message
    assert "32-bit" in message and "incompatible function arguments" not in message
    assert s.num_steps == 0


@pytest.mark.parametrize("length, words", [(0, "bad factor 0"), (-3, "bad factor -3"), (-2**70, "bad factor -")])
def test_split_lengths_below_one_are_refused(length, words):
    dag, b = vector_double()
    with pytest.raises(ValueError, match=words):
        dag.get_init_state().split(b, 0, [length])


def test_split_lengths_past_32_bits_are_refused_from_json():
    dag, b = vector_double()
    record = json.dumps([["SP", 1, 0, 16, [2**32 + 4], True]])
    with pytest.raises(ValueError, match="length 4294967300, more than 2147483647"):
        ans.State.from_json(dag, record)


def test_split_and_fuse_ranges_past_32_bits_are_refused():
    dag, b = vector_double()
    with pytest.raises(ValueError, match="multiply to more than 2147483647"):
        dag.get_init_state().split(b, 0, [2**16, 2**16])
    big = te.placeholder((MAX,), name="Big")
    twice = te.compute((MAX,), lambda i: big[i] * 2, name="T")
    big_dag = ans.ComputeDAG([big, twice])
    with pytest.raises(ValueError, match="covers 2147483650 iterations"):  # 2 parts of 2^30 + 1
        big_dag.get_init_state().split(twice, 0, [2**30 + 1])
    x = te.placeholder((2**20,), name="X")
    y = te.placeholder((2**20,), name="Y")
    k, l = te.reduce_axis((0, 2**20), name="k"), te.reduce_axis((0, 2**20), name="l")
    outer = te.compute((1,), lambda i: te.sum(x[k] * y[l], axis=[k, l]), name="O")
    s = ans.ComputeDAG([x, y, outer]).get_init_state()
    with pytest.raises(ValueError, match="fuse of \\[1, 2\\].*more than 2147483647"):
        s.fuse(outer, [1, 2])


def test_largest_split_length_is_accepted():
    dag, b = vector_double()
    s = dag.get_init_state()
    outer, inner = s.split(b, 0, [MAX])
    assert (outer.extent, inner.extent) == (1, MAX)


# ---- printed steps replay, also with duplicate stage names ----

def dup_names_dag():
    """Two unnamed element-wise stages and two unnamed reductions: every compute is called "compute"."""
    a = te.placeholder((7, 10), name="A")
    x = te.compute((7, 10), lambda i, j: a[i, j] + 1)
    y = te.compute((7, 10), lambda i, j: x[i, j] * 2)
    k = te.reduce_axis((0, 10), name="k")
    r = te.compute((7,), lambda i: te.sum(y[i, k], axis=k))
    k2 = te.reduce_axis((0, 7), name="k")
    total = te.compute((1,), lambda i: te.sum(r[k2] * 0.5, axis=k2))
    return ans.ComputeDAG([a, total])


def replay_printed(dag, s):
    code = dag.print_python_steps(s)
    fresh = dag.get_init_state()
    exec(code, {"s": fresh})  # noqa: S102  (the printed steps are the API's own calls)
    assert fresh == s and str(fresh) == str(s), code
    assert lower_state_text(fresh) == lower_state_text(s), code
    check(dag, fresh)
    return code


def test_printed_steps_replay_with_duplicate_stage_names():
    dag = dup_names_dag()
    assert [st.name for st in dag.get_init_state().stages].count("compute") == 4
    s = dag.get_init_state()
    s.split(2, 0, [3])      # the second element-wise "compute"
    s.split(1, 1, [4])      # the first one
    s.compute_at(1, 2, 0)
    s.cache_write(3, "local")
    rf = s.rfactor(s.stages[-1].index, 1, 0)
    s.split(rf, 0, [2])
    code = replay_printed(dag, s)
    assert 's.cache_write(3, "local")' in code and "s.split(2, 0, [3])" in code
    assert 's.split("compute.rf", 0, [2])' in code  # a unique name is still printed as the name


def test_printed_steps_replay_with_cache_write_and_rfactor_twice():
    dag = dup_names_dag()
    s = dag.get_init_state()
    s.cache_write(3, "local")  # the first reduction: "compute.local" at 3, its copy "compute" at 4
    s.cache_write(5, "local")  # the second: "compute.local" is taken, so "compute.local_1"
    index = {st.name: st.index for st in s.stages}
    s.split(index["compute.local"], 1, [4])
    s.rfactor("compute.local", 2, 0)
    s.split("compute.local_1", 1, [3])
    s.rfactor("compute.local_1", 1, 1)
    names = [st.name for st in s.stages]
    assert names.count("compute") == 4 and "compute.local.rf" in names and "compute.local_1.rf" in names
    code = replay_printed(dag, s)
    assert 's.cache_write(3, "local")' in code and 's.cache_write(5, "local")' in code
    assert 's.rfactor("compute.local_1", 1, 1)' in code


def test_printed_steps_quote_names_as_python():
    a = te.placeholder((4,), name="A")
    b = te.compute((4,), lambda i: a[i] + 1, name='B"q\\')
    dag = ans.ComputeDAG([a, b])
    s = dag.get_init_state()
    s.split(b, 0, [2])
    assert "s.split(\"B\\\"q\\\\\", 0, [2])" in replay_printed(dag, s)


# ---- argument types ----

def test_split_takes_one_int_and_refuses_non_integral_lengths():
    dag, b = vector_double()
    s = dag.get_init_state()
    outer, inner = s.split(b, 0, 4)
    assert (outer.extent, inner.extent) == (4, 4)
    s2 = dag.get_init_state()
    s2.split(b, 0, [np.int64(4)])
    assert s2 == s
    for bad in ([2.7], 2.7, [2.0], [True], ["4"], [np.float32(3)]):
        with pytest.raises(TypeError, match="split lengths must be integers"):
            dag.get_init_state().split(b, 0, bad)
    with pytest.raises(TypeError, match="an int or a list of ints"):
        dag.get_init_state().split(b, 0, object())
    check(dag, s)


def test_duplicate_reduce_axes_are_refused():
    a = te.placeholder((4, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    for reduce in (te.sum, te.prod, te.max, te.min):
        with pytest.raises(ValueError, match="reduce axis 'k' is given more than once"):
            reduce(a[k, k], axis=[k, k])
    other = te.reduce_axis((0, 4), name="k")  # same name, another axis: fine
    c = te.compute((1,), lambda i: te.sum(a[k, other], axis=[k, other]), name="C")
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    (out,) = ans.evaluate(ans.ComputeDAG([a, c]), [x])
    np.testing.assert_allclose(out, [x.sum()])


def test_evaluate_refuses_dtypes_a_module_refuses():
    dag, b = vector_double()
    x64 = np.arange(16, dtype=np.float64)
    out = np.zeros(16, np.float32)
    with pytest.raises(TypeError, match="must have dtype float32, got float64"):
        ans.build(dag)(x64, out)
    with pytest.raises(TypeError, match="input 0 \\(tensor 'A'\\) must have dtype float32, got float64"):
        ans.evaluate(dag, [x64])
    with pytest.raises(TypeError, match="must have dtype float32, got int32"):
        ans.evaluate_points(dag, [np.arange(16, dtype=np.int32)], 0, [(0,)])
    with pytest.raises(TypeError, match="must be a numpy.ndarray, got list"):
        ans.evaluate(dag, [list(range(16))])
    (ok,) = ans.evaluate(dag, [x64.astype(np.float32)])
    np.testing.assert_array_equal(ok, x64 * 2)


# ---- rfactor of fused reduce axes ----

def two_axis_sum(n, kk, ll, k_lo=0, combiner=te.sum, where=False):
    """out[i] = reduce over k in [k_lo, kk), l in [0, ll) of A[i, k, l] * (l + 1)."""
    a = te.placeholder((n, kk, ll), name="A")
    k = te.reduce_axis((k_lo, kk), name="k")
    l = te.reduce_axis((0, ll), name="l")
    cond = (k + l) % 3 != 1 if where else None
    out = te.compute((n,), lambda i: combiner(a[i, k, l] * (l + 1).astype("float32"), axis=[k, l], where=cond),
                     name="out")
    return ans.ComputeDAG([a, out]), out


def numpy_two_axis(x, k_lo, where, reduce=np.sum):
    n, kk, ll = x.shape
    vals = x * (np.arange(ll, dtype=np.float32) + 1)
    mask = np.zeros((kk, ll), bool)
    mask[k_lo:, :] = True
    if where:
        kgrid, lgrid = np.meshgrid(np.arange(kk), np.arange(ll), indexing="ij")
        mask &= (kgrid + lgrid) % 3 != 1
    fill = 0 if reduce is np.sum else -np.inf
    return reduce(np.where(mask, vals, fill), axis=(1, 2))


def fused_rfactor(s, out, split, which, pos):
    fused = s.fuse(out, [1, 2])
    if split:
        s.split(out, fused, split)
        fused = s[out].iters[1 + which]
    return s.rfactor(out, fused, pos)


@pytest.mark.parametrize("shape, k_lo, split, which, pos, where", [
    ((3, 7, 5), 0, None, 0, 0, False),      # the fused iterator itself
    ((3, 7, 5), 0, [4], 1, 1, False),       # inner part of a non-dividing split of it
    ((2, 7, 5), 0, [4], 0, 0, False),       # outer part
    ((3, 11, 3), 4, [5], 0, 1, True),       # a reduce axis not starting at 0, with a condition
    ((2, 5, 7), 0, [3, 2], 1, 0, False),    # middle part of a three-way split
    ((1, 13, 1), 0, [6], 1, 0, True),
])
def test_rfactor_of_fused_reduce_axes(shape, k_lo, split, which, pos, where):
    dag, out = two_axis_sum(*shape, k_lo=k_lo, where=where)
    s = dag.get_init_state()
    rf = fused_rfactor(s, out, split, which, pos)
    rf_stage = s[rf]
    assert [it.kind for it in rf_stage.iters].count("spatial") == 2
    x = random_inputs(dag, np.random.default_rng(1))[0]
    (ref,) = ans.evaluate(dag, [x])
    assert_close(ref, numpy_two_axis(x, k_lo, where), "float32")
    got = np.zeros(shape[0], np.float32)
    ans.build(dag, s)(x, got)
    assert_close(got, ref, "float32", message=str(s))
    replay_printed(dag, s)


def test_rfactor_of_a_fuse_across_split_parts_of_two_axes():
    dag, out = two_axis_sum(3, 7, 5)
    s = dag.get_init_state()
    s.split(out, 1, [3])    # i, k.0, k.1, l
    s.split(out, 3, [2])    # i, k.0, k.1, l.0, l.1
    ki_lo = s.fuse(out, [2, 3])
    s.rfactor(out, ki_lo, 1)
    s.parallel(out, 0)
    check(dag, s)


def test_rfactor_of_a_fused_max_reduction_keeps_guarded_values_out():
    dag, out = two_axis_sum(2, 7, 3, combiner=te.max)
    s = dag.get_init_state()
    fused_rfactor(s, out, [4], 1, 0)
    x = random_inputs(dag, np.random.default_rng(2))[0] - 3  # all negative: a stray 0 would win
    got = np.zeros(2, np.float32)
    ans.build(dag, s)(x, got)
    assert_close(got, numpy_two_axis(x, 0, False, reduce=np.max), "float32")


def test_rfactor_of_split_parts_fused_back_without_reduce_left():
    a = te.placeholder((7,), name="A")
    k = te.reduce_axis((0, 7), name="k")
    total = te.compute((1,), lambda i: te.sum(a[k], axis=k), name="T")
    dag = ans.ComputeDAG([a, total])
    s = dag.get_init_state()
    s.split(total, 1, [3])    # 3 x 3 = 9 iterations for 7 values
    s.fuse(total, [1, 2])
    s.rfactor(total, 1, 0)    # nothing left to reduce in the rf stage; 2 of its 9 elements are identities
    x = np.arange(1, 8, dtype=np.float32)
    got = np.zeros(1, np.float32)
    ans.build(dag, s)(x, got)
    assert got[0] == x.sum()


def test_reduce_axis_not_starting_at_zero_lowers_from_its_lower_bound():
    """Loops count from 0; the reduce axis's value adds its lower bound (also in the region a producer
    computed at a loop of the reduction has to cover)."""
    a = te.placeholder((4, 9), name="A")
    sq = te.compute((4, 9), lambda i, j: a[i, j] * a[i, j], name="Sq")
    k = te.reduce_axis((3, 8), name="k")
    out = te.compute((4,), lambda i: te.sum(sq[i, k], axis=k), name="Out")
    dag = ans.ComputeDAG([a, out])
    x = random_inputs(dag, np.random.default_rng(3))[0]
    want = (x[:, 3:8] ** 2).sum(axis=1)
    s_plain = dag.get_init_state()
    s_at = dag.get_init_state()
    s_at.split(out, 1, [2])
    s_at.compute_at(sq, out, 1)  # Sq per k.0: the columns 3 + 2 * k.0 and 4 + 2 * k.0
    for s in (s_plain, s_at):
        (ref,) = ans.evaluate(dag, [x])
        assert_close(ref, want, "float32")
        got = np.zeros(4, np.float32)
        ans.build(dag, s)(x, got)
        assert_close(got, want, "float32", message=str(s))
