"""Blocked layouts inside a convolution kernel (pack-conv-layout): an NCHW convolution gets, beside its other
sketches, one that packs its data into channel blocks (NCHW[x]c) and its weights into input and output channel
blocks (OIHW[x]i[y]o), x = y = the vector lanes; the search samples and mutates it like any sketch, its steps
record and replay, and its states equal the reference on awkward shapes (channel counts no block divides,
strides, 1x1, batch 2). NHWC convolutions (channels already innermost) and depthwise ones are not packed."""
import json

import numpy as np
import pytest

import autosched as ans
from autosched import ops, search, te

from schedule_helpers import check

needs_llvm = pytest.mark.skipif(not ans._core.has_llvm(), reason="built without the LLVM backend")
HOST = ans.Target("llvm")
_PARAMS = ans.SearchParams()
# The block the rule packs by: the vector lanes times vector_lanes_factor, at most max_vectorize_size (16 floats
# with AVX2 and with AVX-512 under the defaults).
LANES = min(ans.SearchTask(compute_dag=ans.ComputeDAG([te.placeholder((1,), name="x")]),
                           target=HOST).hardware_params.vector_unit_bytes // 4 * _PARAMS.vector_lanes_factor,
            _PARAMS.max_vectorize_size)


def _conv_nchw(n, ci, h, w, co, k, stride):
    data, kernel = te.placeholder((n, ci, h, w), name="data"), te.placeholder((co, ci, k, k), name="kernel")
    return [data, kernel, ops.conv2d_nchw(data, kernel, stride=stride, padding=k // 2)]


# Channel counts at least two blocks wide (the rule's threshold), no block dividing them where it can.
CASES = {
    "3x3-channels-not-dividing": lambda: _conv_nchw(1, 2 * LANES + 5, 7, 9, 2 * LANES + 3, 3, 1),
    "3x3-stride2-batch2": lambda: _conv_nchw(2, 2 * LANES, 9, 8, 3 * LANES, 3, 2),
    "1x1": lambda: _conv_nchw(1, 2 * LANES + 1, 5, 5, 2 * LANES, 1, 1),
}


def _packs(state):
    return [step for step in json.loads(state.to_json()) if step[0] == "PK"]


def _packed_sketches(task):
    return [s for s in search.generate_sketches(task) if len(_packs(s)) == 3]


@pytest.mark.parametrize("case", list(CASES))
def test_nchw_convolutions_get_a_blocked_layout_sketch(case):
    dag = ans.ComputeDAG(CASES[case]())
    task = ans.SearchTask(compute_dag=dag, target=HOST)
    sketches = search.generate_sketches(task)
    packed = _packed_sketches(task)
    assert packed and len(packed) < len(sketches)
    # data by its channel axis (1), weights by input channels (1), then the copy by output channels (now 1)
    for sketch in packed:
        (data_pack, in_pack, out_pack) = _packs(sketch)
        assert [p[3] for p in (data_pack, in_pack, out_pack)] == [1, 1, 1]
        assert {p[4] for p in (data_pack, in_pack, out_pack)} == {LANES}
        text = str(sketch)
        # the padding and the half-packed weights are folded into the packs: no passes of their own
        assert "PaddedInput =" not in text and "kernel.pack =" not in text
        assert ("PaddedInput.pack =" in text or "data.pack =" in text) and "kernel.pack.pack =" in text


def test_the_blocked_layouts_are_nchw_xc_and_oihw_xi_yo():
    dag = ans.ComputeDAG(CASES["3x3-stride2-batch2"]())  # 2 x (2 lanes) x 9 x 8 data, (3 lanes) x (2 lanes) weights
    task = ans.SearchTask(compute_dag=dag, target=HOST)
    (sketch, *_) = _packed_sketches(task)
    weights = [it.extent for it in sketch["kernel.pack.pack"].iters]
    assert weights == [3, 2, 3, 3, LANES, LANES]  # O/y, I/x, KH, KW, x (input channels), y (output channels)
    data = [it.extent for it in sketch["PaddedInput.pack"].iters]
    assert data == [2, 2, 11, 10, LANES]  # C/x, N, H + pads, W + pads, x


@needs_llvm
@pytest.mark.parametrize("case", list(CASES))
def test_states_of_the_blocked_sketch_match_the_reference(case):
    dag = ans.ComputeDAG(CASES[case]())
    task = ans.SearchTask(compute_dag=dag, target=HOST)
    packed = _packed_sketches(task)
    for share in (1.0, 0.0):
        params = search.SearchParams(register_block_share=share)
        states, drops = search.sample_init_population(task, 3, seed=13, params=params, sketches=packed)
        assert states and set(drops) <= {"duplicate"}, drops
        for k, state in enumerate(states[:2]):
            check(dag, state, seed=k)
            again = ans.State.from_json(dag, state.to_json())  # records replay
            assert again.to_json() == state.to_json()
            mutated, failure, message = search.mutate(task, state, seed=k, params=params, rule="tile-size")
            if mutated is not None:
                check(dag, mutated, seed=k)
            else:
                assert failure == "tile-size: nothing", (failure, message)


def test_nhwc_and_depthwise_convolutions_are_not_repacked():
    data, kernel = te.placeholder((1, 8, 8, 40), name="data"), te.placeholder((3, 3, 40, 40), name="kernel")
    nhwc = ans.ComputeDAG([data, kernel, ops.conv2d_nhwc(data, kernel, stride=1, padding=1)])
    d2, k2 = te.placeholder((1, 40, 8, 8), name="data"), te.placeholder((40, 1, 3, 3), name="kernel")
    depthwise = ans.ComputeDAG([d2, k2, ops.depthwise_conv2d_nchw(d2, k2, stride=1, padding=1)])
    for dag in (nhwc, depthwise):
        assert not _packed_sketches(ans.SearchTask(compute_dag=dag, target=HOST))
