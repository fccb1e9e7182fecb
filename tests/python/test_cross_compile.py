"""Cross-compilation: an llvm target of another architecture (-mtriple=aarch64-linux-gnu -mcpu=cortex-a76) is
built in this process to an object file of that architecture (checked by its ELF header), whose code cannot run
here: calling it, or measuring it with a LocalRunner, is a clear error."""
import os
import struct

import pytest

import autosched as ans
from autosched import te

from schedule_helpers import tile_matmul

pytestmark = [
    pytest.mark.skipif(not ans._core.has_llvm(), reason="built without the LLVM backend"),
    pytest.mark.skipif(os.uname().machine != "x86_64", reason="cross-compiles from x86_64"),
]

AARCH64 = "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a76"
EM_AARCH64, EM_RISCV, ET_REL = 183, 243, 1


def matmul_task(target):
    A = te.placeholder((64, 64), name="A")
    B = te.placeholder((64, 64), name="B")
    r = te.reduce_axis((0, 64), name="k")
    C = te.compute((64, 64), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return ans.SearchTask(compute_dag=ans.ComputeDAG([A, B, C]), target=target, desc="mm64"), C


def elf_header(path):
    """(class, data, e_type, e_machine) of an ELF file."""
    with open(path, "rb") as f:
        head = f.read(20)
    assert head[:4] == b"\x7fELF", head
    e_type, e_machine = struct.unpack("<HH", head[16:20])
    return head[4], head[5], e_type, e_machine


def test_an_aarch64_target_builds_an_aarch64_object_file(tmp_path):
    task, C = matmul_task(AARCH64)
    target = task.target
    assert target.foreign and target.triple.startswith("aarch64")
    assert "neon" in target.features
    assert "cross-compiled for aarch64" in target.describe()
    assert task.hardware_params.vector_unit_bytes == 16  # NEON
    state = task.compute_dag.get_init_state()
    tile_matmul(state, C)
    mod = ans.build(task, state)
    path = mod.export_object(str(tmp_path / "mm.o"))
    assert elf_header(path) == (2, 1, ET_REL, EM_AARCH64)  # 64-bit, little-endian, relocatable, AArch64
    asm = mod.get_source("asm")
    assert "fmla" in asm or "fmul" in asm  # NEON arithmetic, not x86's
    assert "vfmadd" not in asm and "%xmm" not in asm
    assert "cross-compiled for aarch64" in mod.cannot_run


def test_cross_compiled_code_is_not_run_or_measured_here():
    import numpy as np
    task, _ = matmul_task(AARCH64)
    mod = ans.build(task)
    a = np.ones((64, 64), "float32")
    c = np.zeros((64, 64), "float32")
    with pytest.raises(ValueError, match="cross-compiled for aarch64"):
        mod(a, a, c)
    with pytest.raises(ValueError, match="cannot run on this machine.*RayRunner"):
        ans.measure.measure(task, [task.compute_dag.get_init_state()])


def test_tuning_a_cross_compiled_task_with_a_local_runner_is_refused(tmp_path):
    """The tuning session's round measures in the core: it refuses a LocalRunner for a foreign target before
    any round (nothing measured, nothing written), as measure() does."""
    task, _ = matmul_task(AARCH64)
    log = str(tmp_path / "foreign.json")
    opts = ans.TuningOptions(num_measure_trials=4, verbose=0, measure_callbacks=[ans.RecordToFile(log)])
    with pytest.raises(ValueError, match="cannot run on this machine.*RayRunner"):
        task.tune(opts)
    with pytest.raises(ValueError, match="cannot run on this machine.*RayRunner"):
        ans.TaskScheduler([task]).tune(opts)
    assert not os.path.exists(log) or os.path.getsize(log) == 0


def test_another_backend_and_the_host_triple():
    task, _ = matmul_task("llvm -mtriple=riscv64-linux-gnu")
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        assert elf_header(ans.build(task).export_object(os.path.join(d, "k.o")))[3] == EM_RISCV
    # This host's own triple still builds a module that runs here, with no object file to export.
    host, _ = matmul_task("llvm -mtriple=x86_64-linux-gnu")
    assert not host.target.foreign
    with pytest.raises(ValueError, match="not cross-compiled"):
        ans.build(host).export_object("/nonexistent/never-written.o")


def test_a_foreign_cpu_must_be_one_of_that_architecture():
    with pytest.raises(ValueError, match="unknown -mcpu 'skylake' for aarch64"):
        ans.Target("llvm -mtriple=aarch64-linux-gnu -mcpu=skylake")


@pytest.mark.parametrize("triple", ["armv7-linux-gnueabihf", "i686-linux-gnu", "powerpc64le-linux-gnu"])
def test_an_architecture_autosched_does_not_compile_for_is_refused(triple):
    """Only the backends of x86-64, AArch64 and RISC-V are registered (and linked into the wheel)."""
    with pytest.raises(ValueError, match="which autosched does not compile for: .*aarch64.*riscv64"):
        ans.Target("llvm -mtriple=" + triple)
