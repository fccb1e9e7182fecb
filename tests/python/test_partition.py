"""Loop partitioning: schedules whose splits do not divide still compute the right result, and the
tiles that need no bound check become vector code (ramp stores) in the lowered loop nest."""
import autosched as ans
from autosched import te

from schedule_helpers import cache_write_matmul, check, matmul


def vector_stores(mod):
    """Lines of the lowered loop nest that store through a ramp index."""
    return [line for line in mod.lowered_ir().splitlines() if "] = " in line and "[ramp(" in line.split("] = ")[0]]


def tiled_matmul(n, m, k):
    dag, c = matmul(n, m, k)
    s = dag.get_init_state()
    _, io, _ = cache_write_matmul(s, c, i_factor=8)
    return dag, s, c, io


def test_matmul_tiles_that_do_not_divide():
    dag, s, _, _ = tiled_matmul(67, 41, 53)
    check(dag, s)
    assert vector_stores(ans.build(dag, s))


def test_matmul_with_parallel_outer_loop():
    dag, s, c, io = tiled_matmul(67, 41, 53)
    s.parallel(c, io)
    check(dag, s)
    assert vector_stores(ans.build(dag, s))


def test_elementwise_vectorized_split_of_37():
    x = te.placeholder((5, 37), name="X")
    y = te.compute((5, 37), lambda i, j: x[i, j] * 2.0 + 1.0, name="Y")
    dag = ans.ComputeDAG([x, y])
    s = dag.get_init_state()
    i, j = s[y].iters
    jo, ji = s.split(y, j, [16])
    s.vectorize(y, ji)
    s.parallel(y, i)
    check(dag, s)
    mod = ans.build(dag, s)
    assert vector_stores(mod), mod.lowered_ir()


def test_fused_parallel_loop_with_vectorized_tail():
    x = te.placeholder((6, 37), name="X")
    y = te.compute((6, 37), lambda i, j: x[i, j] + 3.0, name="Y")
    dag = ans.ComputeDAG([x, y])
    s = dag.get_init_state()
    i, j = s[y].iters
    io, ii = s.split(y, i, [4])
    jo, ji = s.split(y, j, [16])
    s.reorder(y, [io, jo, ii, ji])
    s.parallel(y, io)
    s.vectorize(y, ji)
    check(dag, s)
    assert vector_stores(ans.build(dag, s))
