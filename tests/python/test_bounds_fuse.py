"""Bound inference after fuse: a stage computed at a fused tile loop (or a loop inside it) gets the tile
its reader touches, not the whole tensor; built with the LLVM backend and checked against ans.evaluate,
with tiles that divide the shapes and tiles that do not."""
import pytest

import autosched as ans
from autosched import te

from schedule_helpers import check, matmul_bias_relu


def fused_tiles(s, name, ti, tj, parallel=True):
    """Tiles stage `name` by (ti, tj), fuses the two outer tile loops and (by default) runs them in
    parallel. Returns (fused, i.1, j.1)."""
    i, j = [it.name for it in s[name].iters if it.kind == "spatial"]
    io, ii = s.split(name, i, [ti])
    jo, ji = s.split(name, j, [tj])
    s.reorder(name, [io, jo, ii, ji])
    fused = s.fuse(name, [io, jo])
    if parallel:
        s.parallel(name, fused)
    return fused, ii, ji


def extents(s, name):
    return [it.extent for it in s.dag.infer_bound(s)[name].iters]


def cache_write_at_fused(s, ti, tj, at_inner=False):
    local = s.cache_write("C", "local")
    s.compute_inline("E")
    fused, ii, ji = fused_tiles(s, "C", ti, tj)
    s.compute_at(local, "C", ii if at_inner else fused)
    li, lj, lk = s[local].iters
    s.reorder(local, [lk, li, lj])
    s.vectorize(local, lj)
    return local


SHAPES = [(64, 64, 32, 8, 16), (21, 35, 13, 4, 8)]  # tiles that divide, tiles that do not


@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize("n,m,k,ti,tj", SHAPES)
def test_cache_write_at_fused_parallel_loop_is_one_tile(n, m, k, ti, tj, dtype):
    dag = matmul_bias_relu(n, m, k, dtype)[0]
    s = dag.get_init_state()
    local = cache_write_at_fused(s, ti, tj)
    assert extents(s, "C.local") == [k, ti, tj]
    check(dag, s)


@pytest.mark.parametrize("n,m,k,ti,tj", SHAPES)
def test_cache_write_inside_fused_loop_is_one_row(n, m, k, ti, tj):
    dag = matmul_bias_relu(n, m, k)[0]
    s = dag.get_init_state()
    cache_write_at_fused(s, ti, tj, at_inner=True)
    assert extents(s, "C.local") == [k, 1, tj]
    check(dag, s)


@pytest.mark.parametrize("n,m,k", [(24, 40, 6), (19, 23, 5)])
def test_elementwise_chain_at_fused_loop(n, m, k):
    dag = matmul_bias_relu(n, m, k)[0]
    s = dag.get_init_state()
    fused, ii, ji = fused_tiles(s, "D", 4, 8)
    s.vectorize("D", ji)
    s.compute_at("E", "D", fused)
    s.compute_at("C", "E", s["E"].iters[0])
    assert extents(s, "E") == [4, 8]
    assert extents(s, "C") == [1, 8, k]
    check(dag, s)


def test_split_of_fused_loop():
    """The fused loop split by the inner tile count: its outer part still selects one row of tiles."""
    dag = matmul_bias_relu(32, 40, 7)[0]
    s = dag.get_init_state()
    local = s.cache_write("C", "local")
    fused, ii, ji = fused_tiles(s, "C", 4, 8, parallel=False)  # 8 x 5 tiles
    fo, fi = s.split("C", fused, [5])
    s.compute_at(local, "C", fo)
    s.parallel("C", fo)
    assert extents(s, "C.local") == [4, 40, 7]
    check(dag, s)
    # A split that does not line up with the tiles mixes the loops: the whole tensor, still correct.
    s = dag.get_init_state()
    local = s.cache_write("C", "local")
    fused, ii, ji = fused_tiles(s, "C", 4, 8, parallel=False)
    fo, fi = s.split("C", fused, [3])
    s.compute_at(local, "C", fo)
    s.parallel("C", fo)
    assert extents(s, "C.local") == [32, 40, 7]
    check(dag, s)
