"""Deployable artifacts: a built module written to one file (Module.export_library) and loaded here in a
process that compiles nothing (dlopen and the runtime for llvm; the driver's binary for opencl). Networks:
GraphModule.export_library and autosched.graph.load_module. The format: autosched/artifact.py, docs/deploy.md.

    mod.export_library("mm.so")
    mod = autosched.runtime.load_module("mm.so")
    autosched.runtime.compile_counts()      # {'llvm_jit': 0, ...} in a process that only loads
"""
from .artifact import ArtifactError, compile_counts
from .build_module import load_module

__all__ = ["load_module", "ArtifactError", "compile_counts"]
