"""graph.build computes the stages of a schedule that read only constants (packed or cached weights) once at
build time; the kernel reads the result. Checked against Graph.evaluate and a build without it."""
import numpy as np
import pytest

import autosched as ans
from autosched import _core
from autosched.graph import Graph

RNG = np.random.default_rng(11)


def _w(*shape):
    return (RNG.standard_normal(shape) * 0.3).astype(np.float32)


def awkward_net(_w=_w):
    """Prime channel counts, a 3x3 stride-2 conv, a 1x1 stride-2 conv, a dense and a matmul with a constant
    right operand whose sizes no block size divides. `_w(*shape)` makes the weights."""
    g = Graph("awkward")
    x = g.add_input("data", (1, 5, 11, 11))
    y = g.add_node("conv2d", [x, g.add_constant("c1.w", _w(13, 5, 3, 3)), g.add_constant("c1.b", _w(13))],
                   dict(strides=2, pads=1), name="c1")
    y = g.add_node("relu", [y], name="c1.relu")
    y = g.add_node("conv2d", [y, g.add_constant("c2.w", _w(7, 13, 1, 1))], dict(strides=2), name="c2")
    y = g.add_node("flatten", [y], name="flat")                                          # (1, 63)
    y = g.add_node("dense", [y, g.add_constant("fc.w", _w(29, 63)), g.add_constant("fc.b", _w(29))], name="fc")
    y = g.add_node("matmul", [y, g.add_constant("proj.w", _w(29, 17))], name="proj")
    g.set_outputs([y])
    return g


def _readers(state, name):
    """The stages that read the tensor `name` (not inlined: an init state has none)."""
    return [st.op.name for st in state.stages
            if any(t.name == name for t in st.op.input_tensors()) and not st.op.name.startswith(name + ".")]


def _schedule(task, group, constants, variant):
    """The init state with every constant input re-laid out for its readers: packed at the root (variant 0),
    cached and attached to the reader's second loop (1), packed and attached to the reader's first loop (2)."""
    state = task.compute_dag.get_init_state()
    names = [t.name for t in task.compute_dag.tensors]
    for value, name in zip(group.inputs, names):
        if value not in constants:
            continue
        readers = _readers(state, name)
        if not readers:
            continue
        ndim = len(constants[value].shape)
        if variant == 0:
            state.pack(name, readers, 0, 3)
        elif variant == 1:
            cache = state.cache_read(name, "local", readers[:1])
            state.compute_at(cache.name, readers[0], min(1, len(state[readers[0]].iters) - 1))
        else:
            packed = state.pack(name, readers[:1], ndim - 1, 4)
            state.compute_at(packed.name, readers[0], 0)
    return state


def _log(tmp_path, g, variant):
    net = ans.graph.build(g, "llvm", verbose=False, prepack=False, layout="NCHW")
    constants = net.graph.constants
    log = str(tmp_path / f"v{variant}.json")
    done = set()
    for info in net.groups:
        key = info.task.workload_key
        if key in done:
            continue
        done.add(key)
        group = next(grp for grp in _groups(net) if grp.output == info.output)
        state = _schedule(info.task, group, constants, variant)
        ans.records.save_records(log, [ans.MeasureInput(info.task, state)], [ans.MeasureResult(costs=[1e-3])])
    return log


def _groups(net):
    from autosched.graph.extract import lower_graph
    return lower_graph(net.graph, "llvm", layout="NCHW").groups


@pytest.mark.parametrize("variant", [0, 1, 2])
def test_prepacked_weights_match_evaluate_and_the_unpacked_build(tmp_path, variant):
    g = awkward_net()
    log = _log(tmp_path, g, variant)
    # the weights as the graph holds them (the layout pass would hand the kernels blocked copies); the records
    # are made here, not measured, so build runs them as they are (check_defaults=False)
    packed = ans.graph.build(g, "llvm", log=log, verbose=False, layout="NCHW", check_defaults=False)
    plain = ans.graph.build(g, "llvm", log=log, verbose=False, prepack=False, layout="NCHW", check_defaults=False)
    assert all(info.tuned for info in packed.groups)
    with_constants = [i for i, info in enumerate(packed.groups) if any(v in g.constants for v in info.inputs)]
    assert len(with_constants) == 4
    for i in with_constants:
        info = packed.groups[i]
        assert info.prepacked, info.name          # every weight's re-layout runs once, here
        assert not plain.groups[i].prepacked
        args = [a[0] for a in info.module.arg_specs]
        assert args[-len(info.prepacked):] == info.prepacked      # the kernel reads them as arguments
        for name, array in zip(info.prepacked, info.prepacked_arrays):
            assert array.flags.c_contiguous
    for _ in range(2):
        x = RNG.standard_normal((1, 5, 11, 11)).astype(np.float32)
        (want,), (got,), (ref,) = plain(x), packed(x), g.evaluate(x)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(got, ref, rtol=2e-4, atol=2e-4 * float(np.abs(ref).max()))


def test_packed_weight_is_the_pack_layout():
    """The array computed at build time is the packed layout: Bp[jo, k, jv] = B[k, min(jo * 4 + jv, 16)]."""
    g = Graph("mm")
    x = g.add_input("x", (3, 29))
    b = g.add_constant("b", _w(29, 17))
    g.set_outputs([g.add_node("matmul", [x, b], name="mm")])
    net = ans.graph.build(g, "llvm", verbose=False, prepack=False)
    task = net.groups[0].task
    state = task.compute_dag.get_init_state()
    state.pack("b", ["mm"], 1, 4)
    state.split("mm", 1, [4])
    kernel, ids, dags, args = _core.split_constant_stages(state, [1])
    assert [state.stages[i].name for i in ids] == ["b.pack"] and args == [[1]]
    assert [t.name for t in kernel.dag.tensors] == ["x", "b", "mm", "b.pack"]
    module = ans.build(dags[0])
    out = np.empty((5, 29, 4), np.float32)
    module(g.constants["b"], out)
    cols = np.minimum(np.arange(5)[:, None] * 4 + np.arange(4)[None, :], 16)
    np.testing.assert_array_equal(out, np.transpose(g.constants["b"][:, cols], (1, 0, 2)))
    # the data input is not constant: nothing to split for it; bad positions name the problem
    assert _core.split_constant_stages(state, [0])[1] == []
    with pytest.raises(ValueError, match="out of range"):
        _core.split_constant_stages(state, [7])
    with pytest.raises(ValueError, match="not a placeholder"):
        _core.split_constant_stages(state, [2])


def _starts(arrays):
    return {array.ctypes.data % 64 for array in arrays}


def test_the_network_holds_its_arrays_on_64_byte_boundaries(tmp_path):
    """Constants, prepacked arrays, intermediate buffers and the outputs of each call start at a multiple of
    64 bytes (a vector load crossing cache lines is slow; numpy places arrays at 16 bytes), in a built network
    and in one loaded from its file, even where the graph's own constants start elsewhere; the results are
    unchanged."""
    def shifted(*shape):  # a weight 16 bytes off a cache line
        array = _w(*shape)
        raw = np.empty(array.nbytes + 80, np.uint8)
        start = (-raw.ctypes.data) % 64 + 16
        out = raw[start:start + array.nbytes].view(array.dtype).reshape(array.shape)
        out[...] = array
        return out

    g = awkward_net(shifted)
    assert _starts(g.constants.values()) == {16}
    log = _log(tmp_path, g, 0)
    net = ans.graph.build(g, "llvm", log=log, verbose=False, layout="NCHW", check_defaults=False)
    path = str(tmp_path / "net.so")
    net.export_library(path)
    x = RNG.standard_normal((1, 5, 11, 11)).astype(np.float32)
    (ref,) = g.evaluate(x)
    for module in (net, ans.graph.load_module(path)):
        prepacked = [a for info in module.groups for a in info.prepacked_arrays]
        assert prepacked and _starts(prepacked) == {0}
        assert _starts(module._static.values()) == {0}
        (got,) = module(x)
        assert got.ctypes.data % 64 == 0
        np.testing.assert_allclose(got, ref, rtol=2e-4, atol=2e-4 * float(np.abs(ref).max()))
