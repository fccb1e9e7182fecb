"""Sketches of sliding-window reductions (depthwise convolution, pooling):
- inline-window-padding offers, beside the sketch that materializes PaddedInput, one where the padding is a
  guarded load inside the kernel; pooling's window-vectorize sketch moves the window loops outside the
  innermost (channel) axis, unrolls them and vectorizes that axis;
- states sampled from those sketches, and their mutations, compute what the reference evaluator computes on
  awkward shapes (primes, channels of 1, strides, windows wider than the input);
- convolutions that reduce over channels are not window stages: they keep their sketches."""
import json

import pytest

import autosched as ans
from autosched import ops, search, te

from schedule_helpers import check

needs_llvm = pytest.mark.skipif(not ans._core.has_llvm(), reason="built without the LLVM backend")
HOST = ans.Target("llvm")


def _depthwise_nhwc(h, w, c, k, stride):
    data, kernel = te.placeholder((1, h, w, c), name="data"), te.placeholder((k, k, c, 1), name="kernel")
    return [data, kernel, ops.depthwise_conv2d_nhwc(data, kernel, stride=stride, padding=k // 2)]


def _depthwise_nchw(c, h, w, k, stride):
    data, kernel = te.placeholder((1, c, h, w), name="data"), te.placeholder((c, 1, k, k), name="kernel")
    return [data, kernel, ops.depthwise_conv2d_nchw(data, kernel, stride=stride, padding=k // 2)]


def _pool(kind, layout, shape, size, stride, pad):
    data = te.placeholder(shape, name="data")
    pool = ops.max_pool2d if kind == "max" else ops.avg_pool2d
    return [data, pool(data, (size, size), (stride, stride), (pad, pad), layout=layout)]


WINDOW_CASES = {
    "depthwise_nhwc-prime-channels": lambda: _depthwise_nhwc(9, 7, 37, 3, 1),
    "depthwise_nhwc-stride2": lambda: _depthwise_nhwc(11, 10, 24, 3, 2),
    "depthwise_nhwc-5x5-one-channel": lambda: _depthwise_nhwc(6, 5, 1, 5, 1),
    "depthwise_nchw-stride2": lambda: _depthwise_nchw(11, 9, 10, 3, 2),
    "maxpool_nhwc-prime": lambda: _pool("max", "NHWC", (1, 13, 11, 37), 3, 2, 1),
    "maxpool_nhwc-one-channel": lambda: _pool("max", "NHWC", (2, 7, 7, 1), 3, 1, 1),
    "avgpool_nhwc-no-pad": lambda: _pool("avg", "NHWC", (1, 8, 8, 20), 2, 2, 0),
    "maxpool_nchw": lambda: _pool("max", "NCHW", (1, 5, 17, 13), 3, 2, 1),
    "avgpool_nchw-window-wider-than-stride": lambda: _pool("avg", "NCHW", (1, 3, 9, 9), 5, 1, 2),
}


def _computes(state, name):
    """Whether the printed loop nest has a loop body computing `name` (an inlined stage has none)."""
    return any(line.strip().startswith(name + " =") for line in str(state).splitlines())


def _steps(state):
    return json.loads(state.to_json())


def _inlined_sketches(sketches):
    return [s for s in sketches if any(step[0] == "CI" for step in _steps(s))]


@pytest.mark.parametrize("case", list(WINDOW_CASES))
def test_padded_window_ops_get_a_sketch_with_the_padding_inlined(case):
    dag = ans.ComputeDAG(WINDOW_CASES[case]())
    task = ans.SearchTask(compute_dag=dag, target=HOST)
    sketches = search.generate_sketches(task)
    padded = _computes(sketches[0], "PaddedInput")
    inlined = _inlined_sketches(sketches)
    if not padded:  # a pool without padding has nothing to inline
        assert not inlined
        return
    assert inlined and len(inlined) < len(sketches), [str(s) for s in sketches]
    for s in inlined:
        assert not _computes(s, "PaddedInput")


def _window_stage(state):
    """The stage with the window reduction (the pool; avg pool divides in a later stage)."""
    (name,) = [st.name for st in state.stages if any(it.kind == "reduce" for it in st.iters)]
    return name


@pytest.mark.parametrize("case", [c for c in WINDOW_CASES if "pool" in c])
def test_pooling_gets_a_window_vectorize_sketch(case):
    dag = ans.ComputeDAG(WINDOW_CASES[case]())
    task = ans.SearchTask(compute_dag=dag, target=HOST)
    sketches = search.generate_sketches(task)
    pool = _window_stage(sketches[0])
    vectorizable = []
    for s in sketches:
        iters = s[pool].iters
        if iters[-1].kind == "spatial":
            # window loops unrolled between the two parts of the innermost axis
            window = [it for it in iters if it.kind == "reduce"]
            assert window and all(it.annotation == "unroll" for it in window), str(s)
            vectorizable.append(s)
    if int(dag.tensors[-1].shape[-1]) < 2:  # one channel: nothing to vectorize across
        assert not vectorizable
        return
    assert vectorizable and len(vectorizable) < len(sketches), [str(s) for s in sketches]
    # sampled from those sketches: the innermost axis is vectorized wherever it runs twice or more
    states, drops = search.sample_init_population(task, 6, seed=5, sketches=vectorizable)
    assert states and set(drops) <= {"duplicate"}, drops
    for state in states:
        last = dag.infer_bound(state)[pool].iters[-1]
        assert last.annotation == "vectorize" or last.extent < 2, str(state)


def test_convolutions_over_channels_are_not_window_stages():
    data, kernel = te.placeholder((1, 8, 8, 16), name="data"), te.placeholder((3, 3, 16, 16), name="kernel")
    dag = ans.ComputeDAG([data, kernel, ops.conv2d_nhwc(data, kernel, stride=1, padding=1)])
    task = ans.SearchTask(compute_dag=dag, target=HOST)
    assert not _inlined_sketches(search.generate_sketches(task))


@needs_llvm
@pytest.mark.parametrize("case", list(WINDOW_CASES))
def test_states_of_window_sketches_match_the_reference(case):
    dag = ans.ComputeDAG(WINDOW_CASES[case]())
    task = ans.SearchTask(compute_dag=dag, target=HOST)
    sketches = search.generate_sketches(task)
    new = _inlined_sketches(sketches) or sketches
    for share in (1.0, 0.0):
        params = search.SearchParams(register_block_share=share)
        states, drops = search.sample_init_population(task, 3, seed=11, params=params, sketches=new)
        assert states and set(drops) <= {"duplicate"}, drops
        for k, state in enumerate(states):
            check(dag, state, seed=k)
            mutated, failure, message = search.mutate(task, state, seed=k, params=params, rule="tile-size")
            if mutated is not None:
                check(dag, mutated, seed=k)
            else:
                assert failure == "tile-size: nothing", (failure, message)


@needs_llvm
@pytest.mark.parametrize("case", ["depthwise_nhwc-prime-channels", "maxpool_nhwc-prime"])
def test_expert_schedule_of_window_ops_matches_the_reference(case):
    dag = ans.ComputeDAG(WINDOW_CASES[case]())
    task = ans.SearchTask(compute_dag=dag, target=HOST)
    state, reason, _ = search.expert_schedule_info(task)
    if "pool" in case:
        assert state is None and "multi-level tiling" in reason
        return
    assert state is not None, reason
    check(dag, state)


def _conv_nchwc(c_blocks, h, w, o_blocks, k, stride, block=4):
    data = te.placeholder((1, c_blocks, h, w, block), name="data")
    kernel = te.placeholder((o_blocks, c_blocks, k, k, block, block), name="kernel")
    conv = ops.conv2d_nchwc(data, kernel, stride=stride, padding=k // 2)
    return ans.ComputeDAG([data, kernel, ops.relu(conv)])


def _attached(state):
    """Names of the stages computed at a loop of another stage."""
    return [st.name for st in state.stages if st.compute_at == "at"]


@needs_llvm
@pytest.mark.parametrize("shape", [(2, 13, 11, 3, 3, 2), (1, 9, 9, 2, 3, 2), (3, 7, 5, 1, 5, 3)])
def test_strided_convolution_gets_a_sketch_with_its_padding_computed_per_tile(shape):
    """A strided convolution (more padded inputs than outputs) also gets sketches with the padding computed
    inside the output's tiles; their states equal the reference on awkward shapes (odd sizes, strides 2 and
    3, one output block). A stride-1 convolution keeps the padding's own pass only, a small image's too, whose
    padded input holds more than 1.5 times its outputs (7 x 7 padded to 9 x 9)."""
    dag = _conv_nchwc(*shape)
    task = ans.SearchTask(compute_dag=dag, target=HOST)
    sketches = search.SketchPolicy(task).generate_sketches()
    at_tile = [s for s in sketches if "PaddedInput" in _attached(s)]
    assert at_tile and len(at_tile) < len(sketches), [str(s) for s in sketches]
    states, drops = search.sample_init_population(task, 24, seed=5)
    sampled = [s for s in states if "PaddedInput" in _attached(s)]
    assert sampled, drops
    for state in sampled[:4]:
        check(dag, state)
    for unit_shape in ((2, 13, 11, 3, 3, 1), (2, 7, 7, 2, 3, 1), (1, 5, 3, 1, 3, 1)):
        unit = _conv_nchwc(*unit_shape)
        plain = search.SketchPolicy(ans.SearchTask(compute_dag=unit, target=HOST)).generate_sketches()
        assert not any("PaddedInput" in _attached(s) for s in plain), unit_shape
