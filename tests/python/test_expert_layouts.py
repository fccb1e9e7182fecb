"""The CPU expert schedule on convolutions of every layout and on transposed, batched and small-M matmuls: its
state computes what the reference evaluator computes on awkward shapes (primes, 1, extents no block divides),
and it has the structure that makes it fast: an NCHWc convolution reduces over the input-channel lane (contiguous
in the input) innermost and keeps several output-channel blocks in one panel; x * W^T with a few rows of x takes
dot products along K (an rfactor stage, W read in place) instead of packing W, and with many rows the register
block."""
import numpy as np
import pytest

import autosched as ans
from autosched import ops, search, te
from autosched.core.evaluate import evaluate
from autosched.ops import nchwc

pytestmark = pytest.mark.needs_llvm

RNG = np.random.default_rng(5)


def _task(tensors):
    return ans.SearchTask(compute_dag=ans.ComputeDAG(tensors), target="llvm", desc="expert layouts")


# float32 lanes of this host's vectors over AVX2's 8: the shapes below are written for 8 lanes and scaled by
# this along the axes whose size the experts compare with the vector width (1 with AVX2, 2 with AVX-512).
WIDTH = max(1, ans._core.Target("llvm").hardware_params.vector_unit_bytes // 32)


def _expert(task):
    state, reason, note = search.expert_schedule_info(task)
    assert state is not None, reason
    return state, note


def _check_against_reference(task, state):
    dag = task.compute_dag
    tensors = dag.tensors
    inputs = [RNG.standard_normal([int(d) for d in t.shape]).astype("float32") for t in tensors[:-1]]
    want = evaluate(dag, inputs)[-1]
    got = np.zeros([int(d) for d in tensors[-1].shape], "float32")
    ans.build(task, state)(*inputs, got)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(want).max())))


def _conv_nchwc(cin, cout, size, kernel, stride, groups=1, block=8):
    data = te.placeholder((1, cin // block, size, size, block), name="data")
    weight = te.placeholder((cout // block, cin // groups // block, kernel, kernel, block, block), name="kernel")
    return [data, weight, nchwc.conv2d_nchwc(data, weight, stride, kernel // 2, groups=groups)]


def _iters(state, stage):
    return state.stages[state.stage_id(stage)].iters


NCHWC = [(128, 16, 5, 1, 2, 1), (96, 8, 3, 3, 1, 1), (16, 24, 7, 1, 2, 1), (24, 16, 11, 3, 1, 1), (8, 16, 13, 7, 2, 1), (32, 32, 5, 3, 1, 2),
         (64, 40, 1, 1, 1, 1), (16, 8, 3, 3, 2, 1)]


@pytest.mark.parametrize("cin,cout,size,kernel,stride,groups", NCHWC)
def test_nchwc_convolutions_reduce_the_channel_lane_innermost_and_match_the_reference(cin, cout, size, kernel,
                                                                                     stride, groups):
    task = _task(_conv_nchwc(cin, cout, size, kernel, stride, groups))
    state, note = _expert(task)
    reduce = [it for it in _iters(state, "conv2d_NCHWc.local") if str(it.kind) == "reduce"]
    # The innermost reduce loop walks the 8 input channels of a block (one cache line of the input), not the
    # channel blocks (a whole image apart).
    assert reduce[-1].name == "ri.1" and reduce[-1].extent == 8, note
    _check_against_reference(task, state)


def test_nchwc_output_channel_blocks_share_the_panel():
    """The output-channel blocks whose weights fit half of L2 are walked inside a row of input pixels (read
    once per panel, not once per block): the outermost loop over them covers what the panel leaves."""
    task = _task(_conv_nchwc(64, 128, 9, 1, 1))
    state, note = _expert(task)
    assert "ob: 16 of 16 in the panel" in note, note
    _check_against_reference(task, state)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("cin,cout,size,kernel,stride", [(5, 7, 11, 3, 1), (13, 17, 9, 3, 2), (1, 3, 7, 1, 1)])
def test_plain_layout_convolutions_match_the_reference(layout, cin, cout, size, kernel, stride):
    if layout == "NCHW":
        data, weight = te.placeholder((1, cin, size, size), name="data"), te.placeholder((cout, cin, kernel, kernel),
                                                                                         name="kernel")
        out = ops.conv2d_nchw(data, weight, stride, kernel // 2)
    else:
        data, weight = te.placeholder((1, size, size, cin), name="data"), te.placeholder((kernel, kernel, cin, cout),
                                                                                         name="kernel")
        out = ops.conv2d_nhwc(data, weight, stride, kernel // 2)
    task = _task([data, weight, out])
    state, _ = _expert(task)
    _check_against_reference(task, state)


def _matmul(batch, m, n, k, transpose_a=False, transpose_b=False):
    lead = (batch,) if batch else ()
    a = te.placeholder(lead + ((k, m) if transpose_a else (m, k)), name="A")
    b = te.placeholder(lead + ((n, k) if transpose_b else (k, n)), name="B")
    if batch:
        return [a, b, ops.batch_matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b)]
    return [a, b, ops.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b)]


def _stage_names(state):
    return [s.name for s in state.stages]


@pytest.mark.parametrize("batch,m,n,k", [(0, 1, 37, 64), (0, 3, 67, 24), (0, 16, 40, 8), (5, 2, 13, 40),
                                         (0, 1, 1, 8)])
def test_few_rows_times_a_transposed_operand_take_dot_products_along_k(batch, m, n, k):
    k *= WIDTH  # whole vectors of K
    task = _task(_matmul(batch, m, n, k, transpose_b=True))
    state, note = _expert(task)
    names = _stage_names(state)
    assert any(name.endswith(".rf") for name in names), (names, note)
    assert not any(name.endswith(".pack") for name in names), (names, note)
    vectorized = [it for it in _iters(state, next(n for n in names if n.endswith(".rf")))
                  if str(it.annotation) == "vectorize"]
    assert len(vectorized) == 1 and vectorized[0].extent % (8 * WIDTH) == 0, note
    # Several rows share each loaded vector of B: a block of them unrolled around the vector of K.
    unrolled = [it for it in _iters(state, next(n for n in names if n.endswith(".rf")))
                if str(it.annotation) == "unroll"]
    assert (len(unrolled) == 1 and m % unrolled[0].extent == 0) if m > 1 else not unrolled, note
    _check_against_reference(task, state)


@pytest.mark.parametrize("batch,m,n,k,transpose_a,transpose_b",
                         [(0, 64, 24, 16, False, True),    # many rows: the register block, W packed
                          (0, 3, 29, 13, False, True),     # K not whole vectors: the register block
                          (0, 2, 19, 16, False, False),    # B not contiguous along K: the register block
                          (0, 7, 31, 5, True, False),
                          (3, 17, 9, 11, True, True),
                          (12, 16, 16, 8, False, False)])
def test_other_matmuls_keep_the_register_block_and_match_the_reference(batch, m, n, k, transpose_a, transpose_b):
    n, k = n * WIDTH, k * WIDTH  # the rows sharing a vector stay above two vectors of lanes
    task = _task(_matmul(batch, m, n, k, transpose_a, transpose_b))
    state, note = _expert(task)
    assert not any(name.endswith(".rf") for name in _stage_names(state)), note
    assert "register block" in note, note
    _check_against_reference(task, state)


def test_dense_with_bias_and_relu_inlines_its_epilogue_on_the_dot_path():
    a, w, bias = (te.placeholder(shape, name=name) for shape, name in (((2, 48), "A"), ((33, 48), "W"), ((33,), "b")))
    out = ops.relu(ops.dense(a, w, bias))
    task = _task([a, w, bias, out])
    state, note = _expert(task)
    assert any(name.endswith(".rf") for name in _stage_names(state)), note
    _check_against_reference(task, state)


@pytest.mark.parametrize("m,n,k,packed", [(1, 131, 40, False), (4, 160, 31, False), (16, 200, 8, False),
                                          (64, 256, 40, True)])
def test_b_already_contiguous_along_the_vector_is_packed_only_for_many_rows(m, n, k, packed):
    """x * B with B stored [K, N]: a few rows read B's rows in place (packing would only copy B on every
    call); with many rows the block reads a packed B (the K-stride walk of B costs more than the copy)."""
    task = _task(_matmul(0, m, n, k))
    state, note = _expert(task)
    assert any(name.endswith(".pack") for name in _stage_names(state)) == packed, (_stage_names(state), note)
    assert "register block" in note, note
    _check_against_reference(task, state)


@pytest.mark.parametrize("n,epilogue", [(200, False), (131, True), (17, True)])
def test_rows_that_overflow_l1_go_round_panels_of_the_streamed_operand(n, epilogue):
    """16 rows of K = 768 floats (48 KiB) overflow a 32 KiB L1, a block of 8 rows (24 KiB) fits: on an AVX2-like
    machine's parameters the dot path takes the blocks of rows round panels of W's rows that fit half of L2
    (prime N and N = 17 included, with a bias and GELU epilogue or none), and equals the reference."""
    hw = ans.HardwareParams(vector_unit_bytes=32, num_vector_registers=16, l1_cache_bytes=32 * 1024,
                            l2_cache_bytes=512 * 1024)
    a, w = te.placeholder((16, 768), name="A"), te.placeholder((n, 768), name="W")
    tensors = [a, w]
    if epilogue:
        bias = te.placeholder((n,), name="b")
        tensors += [bias, ops.gelu(ops.dense(a, w, bias))]
    else:
        tensors.append(ops.dense(a, w))
    task = ans.SearchTask(compute_dag=ans.ComputeDAG(tensors), target="llvm", hardware_params=hw,
                          desc="panels")
    state, note = _expert(task)
    assert "go round panels" in note and "a block's 24 KiB" in note, note
    _check_against_reference(task, state)


@pytest.mark.parametrize("m,n,k,shared", [(128, 96, 64, True), (12, 24, 8, True),
                                          (131, 40, 17, False)])  # 12-row blocks: one to a line
def test_row_blocks_of_a_transposed_a_share_its_cache_lines_and_match_the_reference(m, n, k, shared):
    """A stored [K, M]: a 64-byte line of it holds several blocks' rows at one step of K (4-row blocks: 4), so
    on an AVX2-like machine's parameters those blocks run inside the reduction's outer loop (each line read
    once per chunk of K); prime and small M included, against the reference. A stored [M, K] keeps one."""
    hw = ans.HardwareParams(vector_unit_bytes=32, num_vector_registers=16, l1_cache_bytes=32 * 1024,
                            l2_cache_bytes=512 * 1024, cache_line_bytes=64)
    for transpose_a in (True, False):
        task = ans.SearchTask(compute_dag=ans.ComputeDAG(_matmul(0, m, n, k, transpose_a=transpose_a)),
                              target="llvm", hardware_params=hw, desc="A^T")
        state, note = _expert(task)
        assert ("share a cache line" in note) == (transpose_a and shared), note
        _check_against_reference(task, state)
