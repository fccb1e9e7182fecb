"""The native sequence of kernel calls a built network runs (_core.KernelSequence, graph.deploy.KernelCalls)."""
import time

import numpy as np
import pytest

import autosched as ans
from autosched import _core, te
from autosched.graph import build as build_graph
from test_graph_build import cnn


def _scale_module(n, factor):
    a = te.placeholder((n,), name="a")
    b = te.compute((n,), lambda i: a[i] * factor, name="b")
    return ans.build(ans.ComputeDAG([a, b]))


def _chain(n=37):
    """x -> (x2) -> y -> (x3) -> z as a sequence; returns it, its arrays and the slots."""
    double, triple = _scale_module(n, 2.0), _scale_module(n, 3.0)
    x, y, z = np.arange(n, dtype=np.float32), np.zeros(n, np.float32), np.zeros(n, np.float32)
    seq = _core.KernelSequence()
    sx, sy, sz = (seq.add_slot(v) for v in (x, y, z))
    seq.add_call(double._mod, [sx, sy])
    seq.add_call(triple._mod, [sy, sz])
    return seq, (x, y, z), (sx, sy, sz)


def test_sequence_runs_its_calls_in_order_and_rebinds_slots():
    seq, (x, y, z), (sx, sy, sz) = _chain()
    assert (seq.num_slots, seq.num_calls) == (3, 2)
    seq.run()
    np.testing.assert_allclose(z, 6 * x)
    other = np.full(x.shape, -1.5, np.float32)
    seq.bind(sx, other)
    out = np.zeros_like(z)
    seq.bind(sz, out)
    seq.run()
    np.testing.assert_allclose(out, np.full(x.shape, -9.0, np.float32))
    np.testing.assert_allclose(z, 6 * x)  # the old output is no longer written


def test_sequence_checks_what_it_is_given():
    seq, (x, y, z), (sx, sy, sz) = _chain()
    with pytest.raises(ValueError, match="shape"):
        seq.bind(sx, np.zeros(5, np.float32))
    with pytest.raises(TypeError, match="float32"):
        seq.bind(sx, np.zeros(x.shape, np.float64))
    with pytest.raises(TypeError, match=f"slot {sy} must be a numpy.ndarray, got <class 'list'>"):
        seq.bind(sy, [1.0, 2.0])
    with pytest.raises(TypeError, match=f"slot {seq.num_slots} has unsupported dtype"):
        seq.add_slot(np.zeros(3, np.complex64))
    # An output overlapping its call's input is refused, and the sequence keeps its old array.
    with pytest.raises(ValueError, match="shares memory"):
        seq.bind(sz, y)
    seq.run()
    np.testing.assert_allclose(z, 6 * x)
    with pytest.raises(ValueError, match="slot 7 does not exist"):
        seq.add_call(_scale_module(37, 1.0)._mod, [sx, 7])
    with pytest.raises(ValueError, match="takes 2 arguments, got 1"):
        seq.add_call(_scale_module(37, 1.0)._mod, [sx])
    with pytest.raises(ValueError, match="shares memory"):
        seq.add_call(_scale_module(37, 1.0)._mod, [sx, sx])
    assert seq.num_calls == 2


def test_network_runs_as_one_sequence_and_stays_correct_across_calls():
    g = cnn()
    net = build_graph(g, "llvm", verbose=False)
    rng = np.random.default_rng(3)
    first, second = (rng.standard_normal(g.shape("data")).astype(np.float32) for _ in range(2))
    out1 = net(first)[0]
    assert net._calls._sequence.num_calls == len(net.groups) > 3
    out2 = net(second)[0]
    np.testing.assert_allclose(out1, g.evaluate(first)[0], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(out2, g.evaluate(second)[0], rtol=1e-4, atol=1e-4)
    # Each call gets its own output array; the first is left as it was.
    np.testing.assert_array_equal(net(first)[0], out1)
    assert not np.array_equal(out1, out2)
    # A wrong input is refused before any kernel runs, and the network still runs afterwards.
    with pytest.raises(ValueError, match="shape"):
        net(np.zeros((1, 3, 11, 12), np.float32))
    np.testing.assert_array_equal(net(second)[0], out2)


def test_timed_runs_give_each_calls_time_and_still_compute():
    seq, (x, y, z), _ = _chain(4096)
    with pytest.raises(ValueError, match="runs must be at least 1, got 0"):
        seq.run_timed(0)
    seq.run()
    start = time.perf_counter()
    seconds = seq.run_timed(5)
    wall = time.perf_counter() - start
    assert len(seconds) == 2 and all(s > 0 for s in seconds), seconds
    # Each call's time is part of its run's: the means over 5 runs sum to at most a fifth of the wall time.
    assert 5 * sum(seconds) <= wall, (seconds, wall)
    np.testing.assert_allclose(z, 6 * x)


def test_network_profile_times_each_kernel_inside_runs_of_the_network():
    g = cnn()
    net = build_graph(g, "llvm", verbose=False)
    data = np.random.default_rng(4).standard_normal(g.shape("data")).astype(np.float32)
    alone = net.profile(data, number=3, repeat=2)
    profile = net.network_profile(data, number=3, repeat=2)
    assert [info.name for info, _ in profile.rows] == [info.name for info, _ in alone] == [i.name for i in net.groups]
    assert all(t > 0 for _, t in profile.rows), profile
    # Each kernel runs inside a run: in the repeat whose run was fastest, the kernels' means sum to at most
    # that run's mean, and each kernel's best mean is at most its mean there.
    assert sum(t for _, t in profile.rows) <= profile.run_seconds, profile
    with pytest.raises(ValueError, match="number and repeat must be >= 1"):
        net.network_profile(data, number=0)
    np.testing.assert_allclose(net(data)[0], g.evaluate(data)[0], rtol=1e-4, atol=1e-4)
