"""Winograd convolution (ops/winograd.py, graph/ops/winograd.py, the layout pass's winograd option): the
matrices compute a correlation; conv2d_winograd_nchwc with weights from winograd_weight equals a direct
convolution on awkward shapes (prime sizes, one output pixel, tiles past the output, channels padded to a
block, batches, uneven padding), through the reference evaluator, the default schedule and states sampled by
the search; the search unrolls the transforms and vectorizes them over the channel lanes; the layout pass
converts exactly the convolutions asked for; bad input is refused by name."""
import json
import re

import numpy as np
import pytest

import autosched as ans
from autosched import ops, search, te
from autosched.graph import Graph, GraphError, zoo
from autosched.graph.fusion import fold_batch_norm
from autosched.graph.layout import (WINOGRAD4_MIN_BLOCK, WINOGRAD4_MIN_CHANNELS, WINOGRAD_MIN_CHANNELS,
                                    WINOGRAD_MIN_TILES, WINOGRAD_TILE, block_for_target, convert_layout,
                                    resolve_winograd, winograd_tile)
from autosched.graph.ops.layout import to_blocked
from autosched.ops.winograd import WINOGRAD_TILES, winograd_matrices

RNG = np.random.default_rng(11)


def direct_conv(x, w, pads):
    """float64 NCHW convolution, 3x3, stride 1: x (N, C, H, W), w (O, C, 3, 3), pads (top, left, bottom, right)."""
    top, left, bottom, right = pads
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (top, bottom), (left, right)))
    oh, ow = xp.shape[2] - 2, xp.shape[3] - 2
    out = np.zeros((x.shape[0], w.shape[0], oh, ow))
    for i in range(3):
        for j in range(3):
            out += np.einsum("nchw,oc->nohw", xp[:, :, i:i + oh, j:j + ow], w[:, :, i, j].astype(np.float64))
    return out


@pytest.mark.parametrize("tile", WINOGRAD_TILES)
def test_matrices_compute_a_correlation(tile):
    a_t, b_t, g = winograd_matrices(tile)
    assert a_t.shape == (tile, tile + 2) and b_t.shape == (tile + 2, tile + 2) and g.shape == (tile + 2, 3)
    for _ in range(5):
        d, k = RNG.standard_normal(tile + 2), RNG.standard_normal(3)
        want = [sum(d[i + r] * k[r] for r in range(3)) for i in range(tile)]
        np.testing.assert_allclose(a_t @ ((g @ k) * (b_t @ d)), want, rtol=1e-12, atol=1e-12)


# (N, C, H, W, O, tile, block, pads)
SHAPES = [
    (1, 5, 7, 9, 3, 2, 4, (1, 1, 1, 1)),      # channels padded to a block, odd sizes
    (2, 16, 13, 5, 20, 4, 8, (1, 1, 1, 1)),   # a batch, tiles past the output
    (1, 3, 3, 3, 1, 2, 2, (0, 0, 0, 0)),      # one output pixel
    (1, 8, 6, 6, 8, 4, 8, (1, 0, 2, 1)),      # uneven padding
    (1, 7, 11, 2, 5, 2, 16, (2, 1, 0, 1)),    # fewer channels than the block, a prime height
]


def _dag(shape):
    n, c, h, w, o, tile, block, pads = shape
    x = te.placeholder((n, -(-c // block), h, w, block), name="X")
    u = te.placeholder((tile + 2, tile + 2, -(-o // block), -(-c // block), block, block), name="U")
    return ans.ComputeDAG([x, u, ops.relu(ops.conv2d_winograd_nchwc(x, u, tile, pads))])


def _arrays(shape):
    n, c, h, w, o, tile, block, pads = shape
    x = RNG.standard_normal((n, c, h, w)).astype(np.float32)
    k = RNG.standard_normal((o, c, 3, 3)).astype(np.float32)
    want = to_blocked(np.maximum(direct_conv(x, k, pads), 0).astype(np.float32), block)
    return [to_blocked(x, block), ops.winograd_weight(k, tile, block, block)], want


def _assert_conv(got, want, tile):
    tol = 1e-5 if tile == 2 else 1e-4  # F(4x4, 3x3) rounds more: its matrices hold 1/24 ... 8
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * float(np.abs(want).max()))


@pytest.mark.parametrize("shape", SHAPES, ids=[str(s[:6]) for s in SHAPES])
def test_equals_a_direct_convolution(shape):
    dag = _dag(shape)
    inputs, want = _arrays(shape)
    _assert_conv(ans.evaluate(dag, inputs)[0], want, shape[5])
    out = np.zeros_like(want)
    ans.build(dag, dag.get_init_state(), "llvm")(*inputs, out)
    _assert_conv(out, want, shape[5])


@pytest.mark.parametrize("shape", SHAPES[:4], ids=[str(s[:6]) for s in SHAPES[:4]])
def test_sampled_states_equal_a_direct_convolution(shape):
    dag = _dag(shape)
    task = ans.SearchTask(compute_dag=dag, target="llvm")
    inputs, want = _arrays(shape)
    states, _ = search.sample_init_population(task, 6, seed=1)
    assert states
    for state in states:
        out = np.zeros_like(want)
        ans.build(dag, state, "llvm")(*inputs, out)
        _assert_conv(out, want, shape[5])


def _fused_task(dag, l2_bytes):
    hardware = ans.HardwareParams(target="llvm", l2_cache_bytes=l2_bytes)
    return ans.SearchTask(compute_dag=dag, target="llvm", hardware_params=hardware)


def _is_row_fused(state):
    """Whether data_pack is computed inside the output's loops (the winograd-row-fusion sketch)."""
    return any(r[0] == "CA" and state.stages[r[1]].name == "data_pack" for r in json.loads(state.to_json()))


@pytest.mark.parametrize("shape", SHAPES, ids=[str(s[:6]) for s in SHAPES])
def test_row_fused_states_equal_a_direct_convolution(shape):
    """Where the transformed weights fit in half of L2, a sketch computes data_pack, bgemm and inverse per
    output row of tiles; its states compute the convolution, tiles past the output included."""
    dag = _dag(shape)
    task = _fused_task(dag, 1 << 20)
    fused = [s for s in search.generate_sketches(task) if _is_row_fused(s)]
    assert len(fused) == 1
    at = {st.name: st.compute_at for st in fused[0].stages}
    assert at["data_pack"] == at["bgemm"] == at["inverse"] == at["PaddedInput"] == "at"
    assert at["A"] == at["B"] == "inlined"  # their values fold into the unrolled transforms
    inputs, want = _arrays(shape)
    states, _ = search.sample_init_population(task, 3, seed=2, sketches=fused)
    assert states
    for state in states:
        assert _is_row_fused(state)
        out = np.zeros_like(want)
        ans.build(dag, state, "llvm")(*inputs, out)
        _assert_conv(out, want, shape[5])


def test_row_fused_transforms_fold_their_coefficients():
    """ResNet-18's layer-1 convolution fused per row of tiles: its products' register block and its transforms
    share one kernel, and the transforms' coefficients still fold to constants (no float compare is left of
    their select chains), with the right results."""
    shape = (1, 64, 56, 56, 64, 4, 16, (1, 1, 1, 1))
    dag = _dag(shape)
    task = _fused_task(dag, 2 << 20)
    fused = [s for s in search.generate_sketches(task) if _is_row_fused(s)]
    states, _ = search.sample_init_population(task, 3, seed=5, sketches=fused)
    assert states
    inputs, want = _arrays(shape)
    for state in states:
        mod = ans.build(dag, state, "llvm")
        assert "= fcmp" not in mod.get_source("ll"), str(state)
        out = np.zeros_like(want)
        mod(*inputs, out)
        _assert_conv(out, want, shape[5])


def test_row_fusion_is_not_offered_where_the_weights_do_not_fit():
    dag = _dag((1, 64, 12, 12, 64, 4, 16, (1, 1, 1, 1)))  # weights 6 x 6 x 64 x 64 floats: 590 KB
    assert any(_is_row_fused(s) for s in search.generate_sketches(_fused_task(dag, 2 << 20)))
    for l2_bytes in (1 << 20, 0):  # half of 1 MiB is too little; 0: the cache size is not known
        sketches = search.generate_sketches(_fused_task(dag, l2_bytes))
        assert sketches and not any(_is_row_fused(s) for s in sketches)


def test_transforms_are_unrolled_and_vectorized_over_the_lanes():
    """The data transform reads its coefficients with (t_a, eps), (t_b, nu): those loops are unrolled innermost
    but for the channel lanes, which some sampled states vectorize: each unrolled step is one vector operation."""
    dag = _dag((1, 32, 14, 14, 32, 2, 16, (1, 1, 1, 1)))
    task = ans.SearchTask(compute_dag=dag, target="llvm")
    sketches = search.generate_sketches(task)
    assert sketches
    states, _ = search.sample_init_population(task, 16, seed=0)
    texts = [str(s) for s in states]
    pattern = re.compile(r"unroll t_b \(0,2\)\n\s*vectorize ci[.0-9]* \(0,(\d+)\)\n\s*data_pack = ")
    lanes = [int(m.group(1)) for t in texts for m in [pattern.search(t)] if m]
    assert lanes and max(lanes) > 1, texts[0]
    for text in texts:
        assert re.search(r"unroll eps \(0,4\)\n\s*unroll nu \(0,4\)\n\s*unroll t_a \(0,2\)\n\s*unroll t_b", text)


# ---------------- the layout pass ----------------


def _small_net(channels):
    """3x3 stride-1 convolutions (one with bias and relu, one with uneven padding, one into a residual add),
a strided 3x3 one and a 1x1 one."""
    g = Graph("small")
    x = g.add_input("x", (1, channels, 9, 7))

    def w(*shape):
        return g.add_constant(f"w{len(g.constants)}", (RNG.standard_normal(shape) * 0.2).astype(np.float32))

    c1 = g.add_node("relu", [g.add_node("conv2d", [x, w(channels, channels, 3, 3), w(channels)], dict(pads=1))])
    c2 = g.add_node("conv2d", [c1, w(channels, channels, 3, 3)], dict(pads=1, strides=2), name="strided")
    c3 = g.add_node("conv2d", [c1, w(channels, channels, 1, 1)], name="pointwise")
    c4 = g.add_node("conv2d", [c3, w(channels, channels, 3, 3)], dict(pads=(1, 0, 2, 1)), name="uneven")
    c5 = g.add_node("add", [g.add_node("conv2d", [c1, w(channels, channels, 3, 3)], dict(pads=1)), c3])
    g.set_outputs([c2, c4, c5])
    return g


def _winograd_nodes(g):
    return sorted(n.name for n in g.nodes if n.op == "conv2d_winograd_nchwc")


def test_layout_pass_converts_the_convolutions_asked_for():
    g = _small_net(5)
    x = RNG.standard_normal((1, 5, 9, 7)).astype(np.float32)
    want = g.evaluate(x)
    for winograd, block in ((True, 4), (True, 16), ("auto", 4), (False, 4)):
        blocked = convert_layout(fold_batch_norm(g), block, winograd)
        converted = _winograd_nodes(blocked)
        # the strided and the 1x1 convolutions never; 5 channels are below "auto"'s minimum
        assert len(converted) == (3 if winograd is True else 0), converted
        for got, ref in zip(blocked.evaluate(x), want):
            np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 * float(np.abs(ref).max()))
        net = ans.graph.build(g, "llvm", verbose=False, layout="NCHWc", winograd=winograd)
        for got, ref in zip(net(x), want):
            np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 * float(np.abs(ref).max()))


def _tiles_by_node(g):
    return {n.name: n.attrs["tile"] for n in g.nodes if n.op == "conv2d_winograd_nchwc"}


def test_auto_chooses_the_tile_of_each_convolution_of_resnet18():
    g = fold_batch_norm(zoo.get_model("resnet18"))
    stride1 = [n for n in g.nodes if n.op == "conv2d" and g.shape(n.inputs[1])[2:] == (3, 3)
               and tuple(n.attrs["strides"]) == (1, 1)]
    assert len(stride1) == 13  # every 3x3 convolution but the first of layers 2-4, of stride 2
    by_size = {n.name: n.shape[2] for n in stride1}
    tiles = _tiles_by_node(convert_layout(g, 16, "auto"))
    # layer 1 (64 channels, 56x56: 196 tiles of 4) and layer 2 (128, 28x28: 49) by F(4); layer 3 (256, 14x14)
    # has 16 tiles of 4, too few, and 49 of 2: F(2); layer 4 (512, 7x7) has 16 tiles of 2: direct
    assert sorted((by_size[name], tile) for name, tile in tiles.items()) == \
        [(14, 2)] * 3 + [(28, 4)] * 3 + [(56, 4)] * 4
    assert WINOGRAD4_MIN_CHANNELS <= 64 < WINOGRAD_MIN_CHANNELS <= 256 and WINOGRAD_MIN_TILES > 16
    every = _tiles_by_node(convert_layout(g, 16, True))
    assert len(every) == 13 and set(every.values()) == {WINOGRAD_TILE}  # True: every one, layer 4 too
    # blocks of 8 (AVX2): no F(4); layer 1 has too few channels for F(2), layers 2 and 3 run by F(2)
    tiles8 = _tiles_by_node(convert_layout(g, 8, "auto"))
    assert sorted((by_size[name], tile) for name, tile in tiles8.items()) == [(14, 2)] * 3 + [(28, 2)] * 3
    tasks, _ = ans.extract_tasks(zoo.get_model("resnet18"), "llvm")
    # + relu and + add + relu per layer: layers 1-3 with AVX-512's blocks of 16, layers 2-3 with AVX2's 8
    expected = 6 if block_for_target("llvm") >= WINOGRAD4_MIN_BLOCK else 4
    assert sum(t.desc.startswith("conv2d_winograd_nchwc") for t in tasks) == expected


def test_auto_builds_a_network_of_both_tiles_equal_to_the_original():
    """64 channels at 24x24 (36 tiles of 4): F(4); 128 channels at 12x12 (9 tiles of 4, 36 of 2): F(2)."""
    g = Graph("tiles")
    x = g.add_input("x", (1, 64, 24, 24))
    w1 = g.add_constant("w1", (RNG.standard_normal((64, 64, 3, 3)) * 0.05).astype(np.float32))
    w2 = g.add_constant("w2", (RNG.standard_normal((128, 64, 2, 2)) * 0.05).astype(np.float32))
    w3 = g.add_constant("w3", (RNG.standard_normal((128, 128, 3, 3)) * 0.05).astype(np.float32))
    y = g.add_node("relu", [g.add_node("conv2d", [x, w1], dict(pads=1))])
    y = g.add_node("conv2d", [y, w2], dict(strides=2))
    g.set_outputs([g.add_node("conv2d", [y, w3], dict(pads=1), name="last")])
    assert sorted(_tiles_by_node(convert_layout(fold_batch_norm(g), 16, "auto")).values()) == [2, 4]
    data = RNG.standard_normal((1, 64, 24, 24)).astype(np.float32)
    want = g.evaluate(data)[0]
    # blocks of 16 on any host (the vector width of the hardware parameters), so F(4) is chosen on AVX2 too
    wide = ans.HardwareParams(target="llvm", vector_unit_bytes=64)
    net = ans.graph.build(g, "llvm", hardware_params=wide, verbose=False, layout="NCHWc", winograd="auto")
    assert sum("winograd" in info.task.desc for info in net.groups) == 2, [i.task.desc for i in net.groups]
    got = net(data)[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


@pytest.mark.parametrize("channels, out_channels, out_hw, block, tile", [
    (64, 64, (56, 56), 16, 4), (63, 64, (56, 56), 16, 0), (64, 128, (23, 23), 16, 4), (64, 64, (20, 20), 16, 0),
    (128, 128, (20, 20), 16, 2), (128, 128, (10, 10), 16, 0), (256, 256, (14, 14), 16, 2),
    (512, 512, (7, 7), 16, 0), (128, 256, (1, 200), 16, 4), (64, 64, (56, 56), 8, 0), (128, 128, (28, 28), 8, 2),
    (128, 128, (28, 28), 32, 4)])
def test_winograd_tile_follows_the_minimums(channels, out_channels, out_hw, block, tile):
    assert winograd_tile(channels, out_channels, out_hw, block) == tile


# ---------------- bad input ----------------


def test_bad_input_is_refused_by_name():
    x = te.placeholder((1, 2, 5, 5, 4), name="x5")
    with pytest.raises(ValueError, match=r"tile must be one of \(2, 4\).*got 3"):
        ops.conv2d_winograd_nchwc(x, te.placeholder((5, 5, 1, 2, 4, 4), name="u"), 3, 1)
    with pytest.raises(ValueError, match="'u'.*is not transformed for tile 2"):
        ops.conv2d_winograd_nchwc(x, te.placeholder((6, 6, 1, 2, 4, 4), name="u"), 2, 1)
    with pytest.raises(ValueError, match="channel mismatch: data 'x5'"):
        ops.conv2d_winograd_nchwc(x, te.placeholder((4, 4, 1, 3, 4, 4), name="u"), 2, 1)
    with pytest.raises(ValueError, match=r"needs a \(O, C, 3, 3\) weight, got shape \(2, 2, 5, 5\)"):
        ops.winograd_weight(np.zeros((2, 2, 5, 5), np.float32), 2, 4, 4)
    with pytest.raises(ValueError, match="in_block must be a positive int"):
        ops.winograd_weight(np.zeros((2, 2, 3, 3), np.float32), 2, 0, 4)
    g = _small_net(4)
    with pytest.raises(ValueError, match="winograd must be True, False or 'auto', got 'yes'"):
        convert_layout(g, 4, "yes")
    with pytest.raises(ValueError, match="winograd=True needs the channel-blocked layout"):
        ans.extract_tasks(g, "llvm", layout="NCHW", winograd=True)
    assert resolve_winograd("auto", None) is False
    bad = Graph("bad")
    v = bad.add_input("v", (1, 1, 5, 5, 4))
    with pytest.raises(GraphError, match="tile must be one of"):
        bad.add_node("conv2d_winograd_nchwc", [v, bad.add_constant("u", np.zeros((4, 4, 1, 1, 4, 4), np.float32))],
                     dict(tile=3))
    with pytest.raises(GraphError, match="is not transformed for tile 4"):
        bad.add_node("conv2d_winograd_nchwc", [v, bad.add_constant("u2", np.zeros((4, 4, 1, 1, 4, 4), np.float32))],
                     dict(tile=4))
