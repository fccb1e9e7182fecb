"""Deployable artifacts: a built module written to one file (Module.export_library) and loaded here in a
process that compiles nothing (dlopen and the runtime for llvm; the driver's binary for opencl). Networks:
GraphModule.export_library and autosched.graph.load_module. The format: autosched/core/artifact.py, docs/deploy.md.

    mod.export_library("mm.so")
    mod = autosched.runtime.load_module("mm.so")
    autosched.runtime.compile_counts()      # {'llvm_jit': 0, ...} in a process that only loads

The CPU thread pool of this process: set_parallel_pieces_per_task (docs/schedules.md, "Threads and processes").
"""
from .. import _core
from ..core.artifact import ArtifactError, compile_counts
from ..core.build import load_module

__all__ = ["load_module", "ArtifactError", "compile_counts", "set_parallel_pieces_per_task"]


def set_parallel_pieces_per_task(pieces: int) -> int:
    """Cuts each thread's share of a parallel loop into `pieces` (default 8), which a thread that is done with
    its own share takes from a slower one; 1 gives a static split. Applies to this process's kernels (measurement
    workers keep the default). Returns the previous value; ValueError below 1."""
    if isinstance(pieces, bool) or not isinstance(pieces, int):
        raise TypeError(f"pieces must be an int, got {type(pieces).__name__}")
    return _core.set_parallel_pieces_per_task(pieces)
