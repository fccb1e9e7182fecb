"""The seams between the core and Python: enum names parsed by the core, steps applied through their
records, lowered functions, the ComputeDAG class, stage addressing, pickling and copying, and what a
state prints."""
import copy
import json
import pickle

import pytest

import autosched as ans
from autosched import _core, te
from autosched.state import lower_state

from schedule_helpers import cache_write_matmul, compute_at_inline, matmul, matmul_bias_relu


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
    assert s.core.num_steps == 0


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
    assert f.name and "for (i.0, 0, 3)" in str(f) and str(f) == ans.state.lower_state_text(s)
    lowered = _core.lower(s.core)
    assert [a.name for a in lowered.args] == ["A", "B", "C"] and str(lowered) == ans.build_module.lower(s)


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
    assert ans.build_module.lower(s2) == ans.build_module.lower(s)
    core2 = pickle.loads(pickle.dumps(s.core))
    assert core2.same_steps(s.core)
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
        assert s.core.num_steps == 1 and s2.core.num_steps == 2
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
