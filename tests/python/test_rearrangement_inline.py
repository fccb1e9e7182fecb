"""Stages that only rearrange elements (slice, concat, reshape, transpose: loads whose indices use floordiv and
floormod) are inlined into consumers that do not reduce, on CPU targets: a channel shuffle as ONNX writes it
(ShuffleNet's slice -> concat -> reshape -> transpose -> reshape) is one pass, and the simplifier folds the
composed flat indices back to the channel and row, so the one pass is a vectorized copy, not a gather.
Checked against the reference evaluator on awkward shapes, with the default schedule and sampled states."""
import pytest

import autosched as ans
from autosched import search
from autosched.core.build import lower
from autosched.search.policy import default_schedules

from schedule_helpers import check

te = ans.te


def _channel_shuffle(channels, groups, height, width):
    """x [1, groups*channels + channels, H, W] sliced to its first (groups-1)*channels channels, concatenated
    with b [1, channels, H, W], then the shuffle of `groups` groups written as ONNX exports it: a reshape to
    [1, groups, channels, H, W] by the flat index, a transpose of the two channel axes, a reshape back."""
    total = groups * channels
    kept = total - channels
    x = te.placeholder((1, total + channels, height, width), name="x")
    b = te.placeholder((1, channels, height, width), name="b")
    sliced = te.compute((1, kept, height, width), lambda n, c, h, w: x[n, c, h, w], name="slice")
    concat = te.compute((1, total, height, width),
                        lambda n, c, h, w: te.if_then_else(c < kept, sliced[n, c, h, w], b[n, c - kept, h, w]),
                        name="concat")
    plane, block = height * width, channels * height * width

    def flat5(n, g, c, h, w):
        return n * total * plane + g * block + c * plane + h * width + w

    def from_flat(flat):
        return [te.floordiv(flat, total * plane), te.floormod(te.floordiv(flat, plane), total),
                te.floormod(te.floordiv(flat, width), height), te.floormod(flat, width)]

    reshaped = te.compute((1, groups, channels, height, width),
                          lambda n, g, c, h, w: concat[tuple(from_flat(flat5(n, g, c, h, w)))], name="reshape")
    transposed = te.compute((1, channels, groups, height, width),
                            lambda n, c, g, h, w: reshaped[n, g, c, h, w], name="transpose")

    def flat4(n, c, h, w):
        return n * total * plane + c * plane + h * width + w

    def to5(flat):
        return [te.floordiv(flat, total * plane), te.floormod(te.floordiv(flat, groups * plane), channels),
                te.floormod(te.floordiv(flat, plane), groups), te.floormod(te.floordiv(flat, width), height),
                te.floormod(flat, width)]

    out = te.compute((1, total, height, width), lambda n, c, h, w: transposed[tuple(to5(flat4(n, c, h, w)))],
                     name="shuffle")
    return ans.ComputeDAG([x, b, out])


def _task(dag):
    return ans.SearchTask(compute_dag=dag, target="llvm")


SHAPES = [(29, 2, 28, 28), (3, 2, 7, 13), (1, 2, 1, 1), (5, 3, 6, 5), (58, 2, 14, 14)]


@pytest.mark.parametrize("channels,groups,height,width", SHAPES)
def test_a_channel_shuffle_is_one_pass_and_exact(channels, groups, height, width):
    dag = _channel_shuffle(channels, groups, height, width)
    task = _task(dag)
    intermediate = ("slice", "concat", "reshape", "transpose")
    sketches = search.generate_sketches(task)
    assert sketches
    for sketch in sketches:
        assert all(sketch[name].compute_at == "inlined" for name in intermediate), sketch
    name, state = default_schedules(task)[0]
    check(dag, state)
    assert "allocate" not in lower(state)
    states, _ = search.sample_init_population(task, 4, seed=1)
    for sampled in states:
        check(dag, sampled)


def test_the_inlined_shuffle_loads_rows_whole():
    """With the flat indices folded, a row of the output reads a contiguous row of one input (the flat index
    divided per element by 1568 becomes the channel's floordiv by 2): no gather in the kernel's code."""
    dag = _channel_shuffle(29, 2, 28, 28)
    task = _task(dag)
    name, state = default_schedules(task)[0]
    mod = check(dag, state)
    code = lower(state)
    assert "allocate" not in code, code
    assert "gather" not in mod.get_source("asm").lower()


def test_a_rearrangement_read_by_a_reduction_keeps_its_stage():
    """A transpose whose consumer reduces (a sum over its rows) is not inlined by this rule: the reduction
    would read it across a reduce axis."""
    x = te.placeholder((6, 10), name="x")
    flat = te.compute((4, 15), lambda i, j: x[te.floordiv(i * 15 + j, 10), te.floormod(i * 15 + j, 10)],
                      name="reshape")
    r = te.reduce_axis((0, 15), name="r")
    rows = te.compute((4,), lambda i: te.sum(flat[i, r], axis=r), name="rows")
    dag = ans.ComputeDAG([x, rows])
    task = _task(dag)
    assert all(s["reshape"].compute_at != "inlined" for s in search.generate_sketches(task))
    check(dag, default_schedules(task)[0][1])


def test_a_reshape_that_computes_keeps_its_stage():
    """A stage that scales the values while it reshapes them does arithmetic: not a rearrangement."""
    x = te.placeholder((6, 10), name="x")
    scaled = te.compute((4, 15), lambda i, j: x[te.floordiv(i * 15 + j, 10), te.floormod(i * 15 + j, 10)] * 2.0,
                        name="scaled")
    out = te.compute((15, 4), lambda j, i: scaled[i, j], name="out")
    dag = ans.ComputeDAG([x, out])
    task = _task(dag)
    assert all(s["scaled"].compute_at != "inlined" for s in search.generate_sketches(task))
    check(dag, default_schedules(task)[0][1])


def test_a_reshape_not_aligned_to_rows_is_inlined_and_exact():
    """[6, 10] read as [4, 15] and transposed: the composed index does not fold to an affine one (15 is no
    multiple of 10); inlined all the same, and exact."""
    x = te.placeholder((6, 10), name="x")
    flat = te.compute((4, 15), lambda i, j: x[te.floordiv(i * 15 + j, 10), te.floormod(i * 15 + j, 10)],
                      name="reshape")
    out = te.compute((15, 4), lambda j, i: flat[i, j], name="out")
    dag = ans.ComputeDAG([x, out])
    task = _task(dag)
    sketches = search.generate_sketches(task)
    assert sketches and all(s["reshape"].compute_at == "inlined" for s in sketches)
    check(dag, default_schedules(task)[0][1])
    for state in search.sample_init_population(task, 4, seed=3)[0]:
        check(dag, state)
