"""Loading artifacts safely (autosched/core/artifact.py, cpp/runtime/library_module.cc): an artifact re-exported to a
path this process loaded before gives its new code (the library is loaded from a private copy, nothing written
beside the artifact); a shared library whose bytes differ from the hash the metadata records is refused before
it is mapped; a damaged archive member is named; an artifact without the hash loads with a warning."""
import json
import os
import re
import struct
import zipfile

import numpy as np
import pytest

import autosched as ans
from autosched import _core, te
from autosched.core import artifact
from autosched.deploy.runtime import ArtifactError

needs_llvm = pytest.mark.skipif(not ans._core.has_llvm(), reason="needs the LLVM backend")


def _elementwise(scale):
    a = te.placeholder((64,), name="a")
    b = te.compute((64,), lambda i: a[i] * scale, name="b")
    return ans.build(ans.ComputeDAG([a, b]), target="llvm")


def _unary_network(op):
    g = ans.graph.Graph(op)
    x = g.add_input("x", (4, 16))
    g.set_outputs([g.add_node(op, [x])])
    return ans.graph.build(g, "llvm", verbose=False)


def _run(mod, x):
    y = np.zeros_like(x)
    mod(x, y)
    return y


@needs_llvm
def test_a_kernel_re_exported_to_the_same_path_loads_its_new_code(tmp_path):
    path = tmp_path / "k.so"
    x = np.random.default_rng(0).random(64, np.float32)
    _elementwise(2.0).export_library(path)
    first = ans.runtime.load_module(path)
    _elementwise(3.0).export_library(path)
    second = ans.runtime.load_module(path)
    assert "3" in second.get_source("lowered")
    np.testing.assert_allclose(_run(second, x), x * 3.0, rtol=1e-6)
    np.testing.assert_allclose(_run(first, x), x * 2.0, rtol=1e-6)  # the first keeps its own code
    del first, second
    _elementwise(5.0).export_library(path)  # once no module of it lives, a library is unloaded
    np.testing.assert_allclose(_run(ans.runtime.load_module(path), x), x * 5.0, rtol=1e-6)


@needs_llvm
def test_a_network_re_exported_to_the_same_path_loads_its_new_code(tmp_path):
    path = tmp_path / "net.so"
    x = np.random.default_rng(1).standard_normal((4, 16)).astype(np.float32)
    _unary_network("relu").export_library(path)
    relu = ans.graph.load_module(path)
    _unary_network("exp").export_library(path)
    exp = ans.graph.load_module(path)
    np.testing.assert_allclose(exp(x)[0], np.exp(x), rtol=1e-5)
    np.testing.assert_allclose(relu(x)[0], np.maximum(x, 0), rtol=1e-6)


@needs_llvm
def test_loading_writes_nothing_beside_the_artifact_nor_in_the_temporary_directory(tmp_path, monkeypatch):
    shipped, scratch = tmp_path / "shipped", tmp_path / "scratch"
    shipped.mkdir()
    scratch.mkdir()
    path = shipped / "k.so"
    _elementwise(2.0).export_library(path)
    monkeypatch.setenv("TMPDIR", str(scratch))
    x = np.random.default_rng(2).random(64, np.float32)
    os.chmod(shipped, 0o555)  # read-only (not enforced for root, hence the listings below)
    try:
        mod = ans.runtime.load_module(path)
        np.testing.assert_allclose(_run(mod, x), x * 2.0, rtol=1e-6)
        image = open(path, "rb").read()
        # Both ways of making the private copy: a memory file, and a temporary file unlinked after dlopen.
        for copy in ("memfd", "file"):
            library = _core.KernelLibrary.load(image, str(path), copy)
            assert library.path == str(path)
        assert os.listdir(shipped) == ["k.so"] and os.listdir(scratch) == []
    finally:
        os.chmod(shipped, 0o755)


def _text_section(library):
    """(offset, size) of the .text section of an ELF64 little-endian shared library."""
    shoff, = struct.unpack_from("<Q", library, 0x28)
    entsize, count, names = struct.unpack_from("<HHH", library, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", library, shoff + i * entsize) for i in range(count)]
    strtab = headers[names][4]
    for name, _, _, _, offset, size in headers:
        if library[strtab + name:library.index(b"\0", strtab + name)] == b".text":
            return offset, size
    raise AssertionError("no .text section")


@needs_llvm
def test_an_artifact_whose_code_was_zeroed_is_refused_on_load(tmp_path):
    path = tmp_path / "k.so"
    _elementwise(2.0).export_library(path)
    data = bytearray(path.read_bytes())
    offset, size = _text_section(data)
    assert size > 0
    data[offset:offset + size] = bytes(size)
    path.write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match="shared library .* does not match the SHA-256"):
        ans.runtime.load_module(path)


def _corrupt_member(path, member, fraction):
    """Flips 4 bytes of the stored data of an archive member, `fraction` of the way into it."""
    info = zipfile.ZipFile(path).getinfo(member)
    data = bytearray(path.read_bytes())
    name_len, extra_len = struct.unpack_from("<HH", data, info.header_offset + 26)
    start = info.header_offset + 30 + name_len + extra_len
    at = start + int(info.compress_size * fraction)
    data[at:at + 4] = bytes(b ^ 0xFF for b in data[at:at + 4])
    path.write_bytes(bytes(data))


@needs_llvm
# A weight stored as it is (its CRC does not match: zipfile.BadZipFile), and the deflated metadata with its
# first block header broken (zlib.error).
@pytest.mark.parametrize("member, fraction, raw", [("constants/0.npy", 0.5, "BadZipFile: Bad CRC-32"),
                                                   ("autosched.json", 0.0, "error: Error -3")])
def test_a_damaged_archive_member_is_named(tmp_path, member, fraction, raw):
    g = ans.graph.Graph("dense")
    x = g.add_input("x", (2, 16))
    w = np.random.default_rng(3).random((4, 16), np.float32)
    g.set_outputs([g.add_node("dense", [x, g.add_constant("w", w)])])
    path = tmp_path / "net.so"
    ans.graph.build(g, "llvm", verbose=False).export_library(path)
    assert member in zipfile.ZipFile(path).namelist()
    _corrupt_member(path, member, fraction)
    with pytest.raises(ArtifactError, match=re.escape(f"{path}: the archive member '{member}' is damaged ({raw}")):
        ans.graph.load_module(path)


@needs_llvm
def test_an_artifact_without_the_library_hash_loads_with_a_warning(tmp_path):
    path, old = tmp_path / "k.so", tmp_path / "old.so"
    _elementwise(2.0).export_library(path)
    meta = json.loads(zipfile.ZipFile(path).read("autosched.json"))
    del meta["library_sha256"]  # as artifacts were written before the hash was recorded
    old.write_bytes(path.read_bytes()[:meta["library_size"]])
    with zipfile.ZipFile(old, "a") as zf:
        zf.writestr("autosched.json", json.dumps(meta))
    with pytest.warns(UserWarning, match="before artifacts recorded a hash of their shared library"):
        mod = ans.runtime.load_module(old)
    x = np.random.default_rng(4).random(64, np.float32)
    np.testing.assert_allclose(_run(mod, x), x * 2.0, rtol=1e-6)
    assert meta["library_size"] > 0 and artifact.VERSION == meta["version"]
