"""Parallel loops cut each thread's share into pieces that a free thread takes over
(autosched.runtime.set_parallel_pieces_per_task): any number of pieces gives the reference's results, on
awkward extents too, and also while another process keeps a core busy."""
import multiprocessing
import os

import numpy as np
import pytest

import autosched as ans
from autosched import runtime

from schedule_helpers import check, matmul, tile_matmul


@pytest.fixture
def restore_pieces():
    previous = runtime.set_parallel_pieces_per_task(8)
    yield
    runtime.set_parallel_pieces_per_task(previous)


def parallel_matmul(n, m, k):
    """A matmul whose rows run in parallel: ceil(n / 8) iterations of the parallel loop."""
    dag, C = matmul(n, m, k)
    s = dag.get_init_state()
    tile_matmul(s, C)
    return dag, s


@pytest.mark.parametrize("pieces", [1, 2, 3, 8, 64])
@pytest.mark.parametrize("shape", [(1, 5, 3), (7, 13, 5), (97, 61, 89), (64, 16, 8)])
def test_any_number_of_pieces_gives_the_reference(restore_pieces, pieces, shape):
    runtime.set_parallel_pieces_per_task(pieces)
    dag, s = parallel_matmul(*shape)
    check(dag, s, seed=pieces)


def _spin(core, stop):
    os.sched_setaffinity(0, {core})
    while not stop.is_set():
        pass


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_results_hold_while_another_process_keeps_a_core_busy(restore_pieces):
    dag, s = parallel_matmul(97, 61, 89)
    mod = check(dag, s)
    rng = np.random.default_rng(1)
    a = (rng.random((97, 89)) - 0.5).astype("float32")
    b = (rng.random((89, 61)) - 0.5).astype("float32")
    want = np.zeros((97, 61), "float32")
    mod(a, b, want)
    stop = multiprocessing.Event()
    hog = multiprocessing.Process(target=_spin, args=(sorted(os.sched_getaffinity(0))[-1], stop), daemon=True)
    hog.start()
    try:
        for _ in range(200):
            got = np.full((97, 61), np.nan, "float32")
            mod(a, b, got)
            np.testing.assert_array_equal(got, want)
    finally:
        stop.set()
        hog.join()


def test_bad_piece_counts_are_refused(restore_pieces):
    with pytest.raises(ValueError, match="at least 1"):
        runtime.set_parallel_pieces_per_task(0)
    with pytest.raises(TypeError, match="int"):
        runtime.set_parallel_pieces_per_task(2.5)
    with pytest.raises(TypeError, match="int"):
        runtime.set_parallel_pieces_per_task(True)
    assert runtime.set_parallel_pieces_per_task(3) == 8
    assert runtime.set_parallel_pieces_per_task(8) == 3
    assert ans.runtime is runtime
