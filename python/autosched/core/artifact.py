"""Deployable artifacts (the public names are in autosched.runtime): built modules written to one file and
loaded in a process that compiles nothing.

    mod = ans.build(task, state)
    mod.export_library("mm.so")
    mod = ans.runtime.load_module("mm.so")        # dlopen + the runtime: no LLVM, no JIT
    net.export_library("net.so"); net = ans.graph.load_module("net.so")     # a whole network

An artifact is one file:
  - llvm targets: a shared library of the kernels (LLVM writes their object code for the target's CPU, the
    system linker makes the library: `cc`, or $CC) followed by a zip archive. ELF loaders read the library
    from the head of the file and zip readers find the archive from its end, so `dlopen(path)` and
    `unzip -l path` both work on it.
  - opencl targets: the zip archive alone, holding each program's OpenCL C source, launch shapes, and the
    driver's binary where the driver gives one (loaded on the same device and driver without compiling,
    else built from the source).
The archive holds `autosched.json` (the metadata: format version, kind, target, CPU and features, each
kernel's symbol, arguments and sources, the size and SHA-256 of the shared library; for a network its inputs,
outputs, groups, memory plan and the records used), and arrays as .npy members (weights, pre-packed
constants; a bfloat16 array as its uint16 bits, named in the metadata's "bfloat16_arrays").

Loading refuses, naming what is wrong: a file that is not an artifact, another format version, another
architecture, a CPU that lacks features the code uses (the exporting target's, e.g. avx512f: export for a
CPU both have, such as `llvm -mcpu=x86-64-v3`), an opencl artifact without the OpenCL runtime, a shared
library whose bytes differ from the hash the metadata records, and a damaged archive member (named). An
artifact written before the hash was recorded loads with a warning that its library goes unchecked.

The library is loaded from a private copy of its bytes (a memory file, else a temporary file unlinked after
dlopen; cpp/runtime/library_module.cc), so a file re-exported under a path this process loaded before gives
its new code, and the artifact's directory may be read-only.
"""
import contextlib
import hashlib
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import warnings
import zipfile
import zlib

import numpy as np

from .. import _core
from .dtypes import numpy_dtype

__all__ = ["ArtifactError", "compile_counts", "Artifact", "KernelSet", "write_artifact", "export_module"]

FORMAT = "autosched-artifact"
VERSION = 1
_META = "autosched.json"


class ArtifactError(ValueError):
    """A file that cannot be loaded as an autosched artifact here; the message says why."""


# What reading a damaged archive member raises: a CRC mismatch or bad header (BadZipFile), a damaged deflate
# stream (zlib.error, EOFError), an unknown compression method (NotImplementedError), a bad .npy header
# (ValueError; the metadata's JSON too).
_DAMAGE = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, ValueError, OSError)


def library_hash(library):
    """The SHA-256 (hex) the metadata records of an artifact's shared library."""
    return hashlib.sha256(library).hexdigest()


def compile_counts():
    """Kernels this process compiled: {'llvm_jit': n, 'opencl_source': n, 'opencl_binary': n}. A process that
    only loads artifacts keeps llvm_jit and opencl_source at 0."""
    return dict(_core.compile_counts())


def _target(target):
    if isinstance(target, _core.Target):
        return target
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _core.Target(str(target))


def machine_of(triple):
    """The machine (as platform.machine() names it) of a target triple: 'aarch64-linux-gnu' -> 'aarch64'."""
    arch = triple.split("-")[0]
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(arch, arch)


def _compiler_machine(command):
    """The machine a C compiler makes code for (`cc -dumpmachine`), or None where it does not say."""
    try:
        proc = subprocess.run(command + ["-dumpmachine"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return machine_of(proc.stdout.strip()) if proc.returncode == 0 and proc.stdout.strip() else None


def linker_prefix(target, cross_compiler=None, option="cross_compiler="):
    """The command (a list, without its arguments) that links the target's object code into a shared library:
    `cross_compiler`, else $CC, else (for this machine's architecture only) cc, gcc or clang, else ld.lld or
    ld. Raises RuntimeError, naming the fix (`option` spells the way to give a cross compiler), where none
    fits: no cross compiler for another architecture, a compiler that is not installed or that makes code
    for another machine than the target's."""
    target = _target(target)
    machine = machine_of(target.triple)
    given = cross_compiler or os.environ.get("CC") or ""
    suggested = f"{machine}-linux-gnu-gcc"
    install = f"on Debian or Ubuntu: apt-get install gcc-{machine.replace('_', '-')}-linux-gnu"
    if not given.strip():
        if target.foreign:
            raise RuntimeError(
                f"target '{target.text}' makes code for {machine}, which this machine's linker cannot link: give "
                f"a C compiler for {machine} ({option}{suggested}, or CC={suggested}); {install}")
        for name in ("cc", "gcc", "clang"):
            if shutil.which(name):
                return [name]
        for name in ("ld.lld", "ld"):
            path = shutil.which(name)
            if path:
                return [path]
        raise RuntimeError("export_library needs a linker to make a shared library and found none on PATH (cc, "
                           "gcc, clang, ld.lld, ld): install binutils or a C compiler, or set CC")
    command = shlex.split(given)
    where = f"{option}{given}" if cross_compiler else f"CC={given}"
    if not shutil.which(command[0]):
        raise RuntimeError(f"{where}: '{command[0]}' is not installed (not on PATH)"
                           + (f"; {install}" if target.foreign else ""))
    makes = _compiler_machine(command)
    if makes is not None and makes != machine:
        raise RuntimeError(f"{where} makes code for {makes}, but target '{target.text}' is {machine}: give a C "
                           f"compiler for {machine} ({option}{suggested}, or CC={suggested}); {install}")
    return command


def _linker_command(prefix, obj, out):
    if os.path.basename(prefix[0]) in ("ld", "ld.lld"):
        return prefix + ["-shared", "-o", out, obj]
    return prefix + ["-shared", "-o", out, obj, "-lm"]


def link_shared_library(object_code, target=None, cross_compiler=None):
    """The bytes of a shared library linking `object_code` (bytes of an object file for `target`; None: this
    machine), with `cross_compiler` (see linker_prefix)."""
    prefix = linker_prefix(target if target is not None else _core.Target.host(), cross_compiler)
    with tempfile.TemporaryDirectory(prefix="autosched_link_") as tmp:
        obj, out = os.path.join(tmp, "kernels.o"), os.path.join(tmp, "kernels.so")
        with open(obj, "wb") as f:
            f.write(object_code)
        cmd = _linker_command(prefix, obj, out)
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"linking the kernels failed ({' '.join(cmd)}):\n{proc.stderr.strip()}")
        with open(out, "rb") as f:
            return f.read()


def _arg_info(core_module):
    return [[name, dtype, list(shape), bool(written)] for name, dtype, shape, written in
            _core.module_arg_info(core_module)]


def _saved_sources(core_module):
    """The sources a loaded module keeps: the loop nest and the code (not assembly, which needs LLVM)."""
    return {fmt: core_module.get_source(fmt) for fmt in core_module.source_formats if fmt in ("lowered", "ll", "cl")}


class KernelSet:
    """The kernels of an artifact: their metadata, and the parts that go to the file (a shared library for
    llvm; program binaries for opencl)."""

    def __init__(self, target, kernels, library=None, blobs=None):
        self.target, self.kernels, self.library, self.blobs = target, kernels, library, dict(blobs or {})

    @classmethod
    def from_modules(cls, core_modules, target, cross_compiler=None):
        """The kernels of built modules (core Modules) for `target` (a Target or its text); `cross_compiler`
        links the shared library of an llvm target (see linker_prefix)."""
        target = _target(target)
        for i, mod in enumerate(core_modules):
            # A device's program binary comes from its driver: a module that cannot run here has none.
            if not target.runs_in_host_process and mod.cannot_run:
                raise ValueError(f"module '{mod.name}' cannot be exported: {mod.cannot_run}")
        kernels = [{"symbol": f"autosched_kernel_{i}", "name": mod.name, "args": _arg_info(mod),
                    "sources": _saved_sources(mod)} for i, mod in enumerate(core_modules)]
        if target.runs_in_host_process:  # machine code: one shared library of every kernel
            obj = _core.emit_library_object(list(core_modules), [k["symbol"] for k in kernels], target)
            return cls(target, kernels, library=link_shared_library(obj, target, cross_compiler))
        blobs = {}
        for i, (mod, k) in enumerate(zip(core_modules, kernels)):
            spec, binary = _core.export_opencl(mod)
            k["opencl"] = json.loads(spec)
            k["binary"] = f"opencl/{i}.bin" if binary else None
            if binary:
                blobs[k["binary"]] = bytes(binary)
        return cls(target, kernels, blobs=blobs)

    def target_meta(self):
        meta = {"target": self.target.text, "kind": self.target.kind, "machine": platform.machine(),
                "os": sys.platform}
        if self.target.runs_in_host_process and self.target.foreign:
            # Cross-compiled: loaded on a machine of the triple's architecture; its features cannot be told
            # from this host's detection.
            meta.update(machine=machine_of(self.target.triple), cpu=self.target.cpu, features=[])
        elif self.target.runs_in_host_process:
            # The instruction sets the code may use: the target's features that host detection reports
            # (tuning flags such as prefer-256-bit are no requirement of the code).
            isa = set(_core.host_detectable_cpu_features())
            meta.update(cpu=self.target.cpu, features=sorted(f for f in self.target.features if f in isa))
        return meta

    def load(self, path, meta):
        """Core Modules of the kernels of an opened artifact."""
        if self.target.runs_in_host_process:
            # The bytes checked against the metadata's hash are the ones mapped: a private copy, never the
            # library dlopen may hold already under this path.
            library = _core.KernelLibrary.load(self.library, os.path.abspath(path))
            return [_core.load_library_module(library, k["symbol"], k["name"], _args(k), k["sources"])
                    for k in self.kernels]
        if not self.target.has_backend:
            raise ArtifactError(f"{path}: an OpenCL artifact, and this autosched was built without the OpenCL "
                                "runtime")
        return [_core.load_opencl_module(self.target, k["name"], _args(k), k["sources"], json.dumps(k["opencl"]),
                                         self.blobs[k["binary"]] if k.get("binary") else b"")
                for k in self.kernels]


def _args(kernel):
    return [(name, dtype, list(shape), written) for name, dtype, shape, written in kernel["args"]]


def check_host(meta, path):
    """Refuses an artifact whose code cannot run on this machine, naming why."""
    info = meta["target_info"]
    if info["kind"] != "llvm":
        return
    if info["machine"] != platform.machine() or info["os"] != sys.platform:
        raise ArtifactError(f"{path}: built for {info['machine']} ({info['os']}), this machine is "
                            f"{platform.machine()} ({sys.platform})")
    host = _core.Target.host()
    missing = sorted(set(info.get("features", [])) - set(host.features))
    if missing:
        raise ArtifactError(
            f"{path}: its code was built for CPU {info['cpu']} (target '{info['target']}') and uses "
            f"{len(missing)} feature(s) this CPU ({host.cpu}) lacks: {', '.join(missing)}. Running it would "
            "fault (illegal instruction); export it for a CPU both machines have (e.g. target "
            "'llvm -mcpu=x86-64-v3'), or build it on this machine")


def write_artifact(path, meta, kernel_set, arrays=(), compress_sources=True):
    """Writes the artifact: the shared library (llvm), then the zip archive with the metadata, the kernel
    set's blobs and `arrays` ((member name, ndarray) pairs). Written beside `path` and renamed over it, so a
    process that has the old file loaded keeps running it."""
    path = os.fspath(path)
    arrays = [(name, np.asarray(array)) for name, array in arrays]
    meta = dict(meta, format=FORMAT, version=VERSION, target_info=kernel_set.target_meta(),
                kernels=kernel_set.kernels, library_size=len(kernel_set.library or b""))
    # The .npy format has no bfloat16 (it would read back as raw bytes): such arrays go as their uint16 bits,
    # named here so that reading views them as bfloat16 again.
    bfloat16_arrays = [name for name, array in arrays if array.dtype.name == "bfloat16"]
    if bfloat16_arrays:
        meta["bfloat16_arrays"] = bfloat16_arrays
    if kernel_set.library:
        meta["library_sha256"] = library_hash(kernel_set.library)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".autosched_", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            if kernel_set.library:
                f.write(kernel_set.library)
        with zipfile.ZipFile(tmp, "a" if kernel_set.library else "w") as zf:
            zf.writestr(_META, json.dumps(meta),
                        compress_type=zipfile.ZIP_DEFLATED if compress_sources else zipfile.ZIP_STORED)
            for name, blob in kernel_set.blobs.items():
                zf.writestr(name, blob)
            for name, array in arrays:
                if array.dtype.name == "bfloat16":
                    array = array.view(np.uint16)
                with zf.open(name, "w", force_zip64=array.nbytes > (1 << 30)) as member:
                    np.lib.format.write_array(member, array, allow_pickle=False)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class Artifact:
    """An opened artifact: its metadata, kernel set and arrays."""

    def __init__(self, path, expect_kind):
        self.path = os.fspath(path)
        if not os.path.isfile(self.path):
            raise FileNotFoundError(f"no artifact at {self.path}")
        if not zipfile.is_zipfile(self.path):
            raise ArtifactError(f"{self.path} is not an autosched artifact (no archive in it): make one with "
                                "export_library")
        try:
            self.zip = zipfile.ZipFile(self.path)
        except _DAMAGE as e:
            raise ArtifactError(f"{self.path}: its archive's directory is damaged ({type(e).__name__}: {e}); "
                                "export the artifact again") from None
        try:
            self._open(expect_kind)
        except BaseException:
            self.zip.close()
            raise

    def _open(self, expect_kind):
        if _META not in self.zip.namelist():
            raise ArtifactError(f"{self.path} is not an autosched artifact (no {_META})")
        with self._reading(_META):
            meta = json.loads(self.read(_META))  # JSONDecodeError is a ValueError
        if meta.get("format") != FORMAT:
            raise ArtifactError(f"{self.path} is not an autosched artifact (format {meta.get('format')!r})")
        if meta.get("version") != VERSION:
            raise ArtifactError(f"{self.path} has artifact version {meta.get('version')}, this autosched reads "
                                f"version {VERSION}: export it again")
        if meta.get("kind") != expect_kind:
            hint = {"graph": "autosched.graph.load_module", "kernel": "autosched.runtime.load_module"}
            raise ArtifactError(f"{self.path} holds a {meta.get('kind')}; load it with "
                                f"{hint.get(meta.get('kind'), 'its loader')}")
        self.meta = meta
        check_host(meta, self.path)
        self.kernel_set = KernelSet(_target(meta["target_info"]["target"]), meta["kernels"],
                                    blobs={k["binary"]: self.read(k["binary"]) for k in meta["kernels"]
                                           if k.get("binary")})
        if meta.get("library_size"):
            self.kernel_set.library = self._library(meta)

    def _library(self, meta):
        """The shared library at the head of the file, checked against the metadata's hash."""
        with open(self.path, "rb") as f:
            library = f.read(meta["library_size"])
        recorded = meta.get("library_sha256")
        if recorded is None:
            warnings.warn(f"{self.path} was exported before artifacts recorded a hash of their shared library: "
                          "damage to its code goes undetected (a crash at the first call); export it again",
                          stacklevel=5)
        elif len(library) != meta["library_size"] or library_hash(library) != recorded:
            raise ArtifactError(f"{self.path}: its shared library (the file's first {meta['library_size']} bytes) "
                                "does not match the SHA-256 its metadata records: the file is damaged or was "
                                "altered after export; export it again")
        return library

    @contextlib.contextmanager
    def _reading(self, name):
        """Turns what reading the archive member `name` raises into an ArtifactError naming it."""
        try:
            yield
        except KeyError:
            raise ArtifactError(f"{self.path}: the archive has no member {name!r} that its metadata names; "
                                "export the artifact again") from None
        except _DAMAGE as e:
            raise ArtifactError(f"{self.path}: the archive member {name!r} is damaged ({type(e).__name__}: {e}); "
                                "export the artifact again") from None

    def read(self, name):
        """The bytes of the archive member `name`."""
        with self._reading(name):
            return self.zip.read(name)

    def modules(self):
        return self.kernel_set.load(self.path, self.meta)

    def array(self, name):
        with self._reading(name), self.zip.open(name) as member:
            array = np.lib.format.read_array(member, allow_pickle=False)
        if name in self.meta.get("bfloat16_arrays", ()):
            array = array.view(numpy_dtype("bfloat16"))
        return array

    def close(self):
        self.zip.close()


def export_module(module, path, cross_compiler=None):
    """Module.export_library: the one kernel of a built module."""
    target = module.target
    if target is None:
        raise ValueError("this module does not know its target; build it with autosched.build")
    kernel_set = getattr(module, "_kernel_set", None) or KernelSet.from_modules([module._mod], target,
                                                                             cross_compiler)
    write_artifact(path, {"kind": "kernel"}, kernel_set)


def load_bytes(data, loader):
    """loader(path) of an artifact given as bytes (for pickling)."""
    with tempfile.TemporaryDirectory(prefix="autosched_load_") as tmp:
        path = os.path.join(tmp, "artifact.so")
        with open(path, "wb") as f:
            f.write(data)
        return loader(path)


def to_bytes(exporter):
    """The bytes of the artifact exporter(path) writes."""
    with tempfile.TemporaryDirectory(prefix="autosched_save_") as tmp:
        path = os.path.join(tmp, "artifact.so")
        exporter(path)
        with open(path, "rb") as f:
            return f.read()
