"""Workload keys are how tuning records find their task again: a key that
changes between versions silently orphans every record on disk. These golden
values pin the key of a few DAGs; if a change to the structural hash moves
them, that change must come with a records format version bump."""
import autosched as ans
from autosched import ops, te


def _matmul_dag():
    a = te.placeholder((128, 64), name="A")
    b = te.placeholder((64, 32), name="B")
    return ans.ComputeDAG([a, b, ops.matmul(a, b)])


def _conv_dag():
    x = te.placeholder((1, 14, 14, 16), name="x")
    w = te.placeholder((3, 3, 16, 32), name="w")
    return ans.ComputeDAG([x, w, ops.conv2d_nhwc(x, w, stride=1, padding=1)])


GOLDEN = {
    "matmul": (_matmul_dag, "648fc3d380c6e6a7"),
    "conv2d_nhwc": (_conv_dag, "2d62c94a9e0f4712"),
}


def test_golden_keys():
    for name, (make, key) in GOLDEN.items():
        assert make().workload_key() == key, f"workload key of {name} changed"


def test_key_is_the_same_in_another_process():
    import subprocess
    import sys

    code = (
        "import autosched as ans; from autosched import ops, te\n"
        "a = te.placeholder((128, 64), name='P'); b = te.placeholder((64, 32), name='Q')\n"
        "print(ans.ComputeDAG([a, b, ops.matmul(a, b)]).workload_key())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == GOLDEN["matmul"][1]
