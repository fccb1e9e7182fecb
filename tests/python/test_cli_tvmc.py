"""The command line as TVM's tvmc users spell it: tune --output, --tuning-records, --input-shapes
"data:[1,3,16,16]" (each the same as ours), run --print-time / --print-top / --fill-mode and its output
summary; errors with the subcommand's usage and "did you mean"; tune's default log; and cross-compiling a
network for AArch64 and RISC-V 64 (`compile --cross-compiler`, or $CC), checked by the library's ELF header and
by running the cross-compiled kernels under qemu-user, with a small C driver standing in for the runtime."""
import json
import os
import platform
import re
import shutil
import struct
import subprocess
import sys
import zipfile

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import autosched as ans  # noqa: E402
from autosched.cli import main  # noqa: E402,F401 (the package's command line is the one run below)
from autosched.cli.shapes import parse_input_shapes, shape_dict  # noqa: E402
from autosched.cli.files import CommandError  # noqa: E402

PACKAGE_PARENT = os.path.dirname(os.path.dirname(ans.__file__))
HERE = os.path.dirname(os.path.abspath(__file__))
CROSS = {"aarch64": 183, "riscv64": 243}  # machine -> ELF e_machine


def _classifier(path, batch="N"):
    """data[N, 3, 16, 16] -> conv 3x3 (8 channels) + relu -> global average pool -> dense 8x10 -> softmax."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype("float32"), "W"),
             numpy_helper.from_array(rng.standard_normal(8).astype("float32"), "B"),
             numpy_helper.from_array(rng.standard_normal((8, 10)).astype("float32"), "W2"),
             numpy_helper.from_array(rng.standard_normal(10).astype("float32"), "B2")]
    nodes = [helper.make_node("Conv", ["data", "W", "B"], ["conv"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["conv"], ["act"], name="relu"),
             helper.make_node("GlobalAveragePool", ["act"], ["pool"], name="pool"),
             helper.make_node("Flatten", ["pool"], ["flat"], name="flatten"),
             helper.make_node("Gemm", ["flat", "W2", "B2"], ["fc"], name="fc"),
             helper.make_node("Softmax", ["fc"], ["prob"], axis=1, name="softmax")]
    graph = helper.make_graph(nodes, "classifier",
                              [helper.make_tensor_value_info("data", TensorProto.FLOAT, [batch, 3, 16, 16])],
                              [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [batch, 10])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _cli(*args, cwd=None, env=None):
    env = dict(os.environ if env is None else env, PYTHONPATH=PACKAGE_PARENT)
    proc = subprocess.run([sys.executable, "-m", "autosched", *args], capture_output=True, text=True,
                          timeout=600, env=env, cwd=cwd)
    return proc.returncode, proc.stdout, proc.stderr


def _onnxruntime(model, x):
    import onnxruntime
    return onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"]).run(["prob"], {"data": x})[0]


# ---- 1. tvmc's spellings ----

def test_input_shapes_parse_as_tvmc_writes_them():
    assert parse_input_shapes("data:[1,3,32,32] mask:[1,128]") == [("data", (1, 3, 32, 32)), ("mask", (1, 128))]
    assert parse_input_shapes(" input:0:[1, 8]  ") == [("input:0", (1, 8))]  # names may hold colons
    assert shape_dict(["N=2"], ["data:[2,3,16,16]"]) == {"N": (2,), "data": (2, 3, 16, 16)}
    for bad in ["data=1,3", "data:[1,3", "data:[]", "data:[1,x]", "data:[1,-1]", "data:[1,?]", "data:[1] junk", ""]:
        with pytest.raises(CommandError, match=re.escape('expected "NAME:[D1,D2,...] NAME:[D1,...]"')):
            parse_input_shapes(bad)
    with pytest.raises(CommandError, match=r"'data' is given two shapes: --shape data=1,3 and --input-shapes "
                                           r"data:\[2,3\]"):
        shape_dict(["data=1,3"], ["data:[2,3]"])


def test_tvmc_spellings_tune_compile_and_run(tmp_path):
    model = _classifier(str(tmp_path / "cls.onnx"))
    # --input-shapes lists the same tasks as --shape.
    code, ours, err = _cli("tasks", model, "--shape", "data=2,3,16,16")
    assert code == 0, err
    code, theirs, err = _cli("tasks", model, "--input-shapes", "data:[2,3,16,16]")
    assert code == 0 and theirs == ours and "tasks" in ours, err
    # tune --output (tvmc) is tune --log.
    log = str(tmp_path / "records.json")
    code, out, err = _cli("tune", model, "--input-shapes", "data:[2,3,16,16]", "--output", log, "--trials", "8",
                          "--verbose", "0", "--network-timing-s", "0")
    assert code == 0 and f"Records in {log}" in out, out + err
    assert sum(1 for line in open(log) if line.strip()) >= 8
    # --tuning-records (tvmc) is --log for compile and run: the records apply.
    code, out, err = _cli("compile", model, "--input-shapes", "data:[2,3,16,16]", "--tuning-records", log, "-o",
                          str(tmp_path / "cls.so"))
    assert code == 0 and "no --log" not in out and "did not apply" not in out, out + err
    tuned = int(re.search(r"(\d+) tuned", out)[1])
    assert tuned >= 1, out
    code, out, err = _cli("run", model, "--input-shapes", "data:[2,3,16,16]", "--tuning-records", log,
                          "--number", "1", "--repeat", "1")
    assert code == 0 and "outputs match the reference evaluation" in out and "did not apply" not in out, out + err


@pytest.mark.parametrize("command", ["tasks", "tune", "compile", "run"])
def test_a_malformed_input_shapes_is_one_line_showing_the_form(tmp_path, command):
    model = _classifier(str(tmp_path / "cls.onnx"))
    extra = ["-o", str(tmp_path / "x.so")] if command == "compile" else []
    code, out, err = _cli(command, model, "--input-shapes", "data=1,3,16,16", *extra, cwd=tmp_path)
    assert code == 2, out + err
    assert err.strip().splitlines() == [
        f"autosched {command}: error: --input-shapes 'data=1,3,16,16': expected \"NAME:[D1,D2,...] NAME:[D1,...]\" "
        "(space-separated, e.g. \"data:[1,3,224,224] mask:[1,128]\"), with positive integers"], err
    assert not os.path.exists(tmp_path / "cls.json")  # tune stopped before writing a log


def test_run_prints_time_top_classes_and_fills_inputs(tmp_path):
    model = _classifier(str(tmp_path / "cls.onnx"), batch=2)
    code, out, err = _cli("run", model, "--fill-mode", "ones", "--print-time", "--print-top", "3",
                          "--number", "2", "--repeat", "4")
    assert code == 0, out + err
    want = _onnxruntime(model, np.ones((2, 3, 16, 16), "float32"))
    # The summary of the output: name, dtype, shape and its first values (--fill-mode ones: ones in).
    m = re.search(r"output prob: float32 \(2, 10\) \[([^\]]*), \.\.\.\]", out)
    assert m, out
    np.testing.assert_allclose([float(v) for v in m[1].split(", ")], want.ravel()[:5], rtol=1e-3)
    # --print-top 3: the three highest scores of the first item, highest first.
    top = re.findall(r"class +(\d+) +score (\S+)", out)
    assert "top 3 of item 0 of prob (2, 10):" in out and len(top) == 3, out
    assert [int(c) for c, _ in top] == list(np.argsort(-want[0])[:3]), (top, want[0])
    np.testing.assert_allclose([float(s) for _, s in top], np.sort(want[0])[::-1][:3], rtol=1e-3)
    # --print-time: mean, median, max, min, std of the 4 repeats, in ms.
    lines = out.splitlines()
    i = lines.index("Execution time summary:")
    assert lines[i + 1].split() == ["mean", "(ms)", "median", "(ms)", "max", "(ms)", "min", "(ms)", "std", "(ms)"]
    mean, median, high, low, std = map(float, lines[i + 2].split())
    assert 0 < low <= median <= high and low <= mean <= high and std >= 0, lines[i + 2]
    # --fill-mode zeros, with --outputs: the file holds the outputs of zeros, and no values are printed.
    code, out, err = _cli("run", model, "--fill-mode", "zeros", "--outputs", str(tmp_path / "y.npz"),
                          "--number", "1", "--repeat", "1")
    assert code == 0 and "output prob: float32 (2, 10)\n" in out, out + err
    with np.load(tmp_path / "y.npz") as got:
        np.testing.assert_allclose(got["prob"], _onnxruntime(model, np.zeros((2, 3, 16, 16), "float32")),
                                   rtol=1e-4, atol=1e-6)
    code, out, err = _cli("run", model, "--print-top", "0")
    assert code == 2 and "argument --print-top: expected a positive integer, got '0'" in err, err


# ---- 2. errors show the subcommand's usage, with "did you mean" ----

def _one_error_line(err, command):
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1 and errors[0].startswith(f"autosched{' ' + command if command else ''}: error: "), err
    return errors[0]


def test_a_misspelled_option_shows_the_subcommands_usage_and_the_closest_option(tmp_path):
    model = _classifier(str(tmp_path / "cls.onnx"))
    code, out, err = _cli("tune", model, "--trails", "5")
    assert code == 2 and err.startswith("usage: autosched tune "), err
    assert "usage: autosched [-h]" not in err and "--time-budget" in err, err  # tune's options, not the top's
    assert _one_error_line(err, "tune").endswith("unrecognized arguments: --trails 5; did you mean --trials?"), err
    code, out, err = _cli("run", model, "--print-tmie")
    assert code == 2 and err.startswith("usage: autosched run "), err
    assert _one_error_line(err, "run").endswith("did you mean --print-time?"), err
    code, out, err = _cli("compile", model, "-o", "x.so", "--cross-compiler=gcc", "--tuning-recrods=x.json")
    assert code == 2 and _one_error_line(err, "compile").endswith("did you mean --tuning-records?"), err
    # A malformed value: the subcommand's usage too.
    code, out, err = _cli("tune", model, "--trials", "many")
    assert code == 2 and err.startswith("usage: autosched tune "), err
    assert "argument --trials: invalid int value: 'many'" in _one_error_line(err, "tune"), err
    # A misspelled subcommand or choice.
    code, out, err = _cli("tnue", model)
    assert code == 2 and _one_error_line(err, "").endswith("did you mean tune?"), err
    code, out, err = _cli("tune", model, "--cost-model", "xbg")
    assert code == 2 and _one_error_line(err, "tune").endswith("did you mean xgb?"), err
    # Nothing close: no suggestion.
    code, out, err = _cli("tune", model, "--zzzz")
    assert code == 2 and "did you mean" not in err and "unrecognized arguments: --zzzz" in err, err


# ---- 3. tune's default log ----

def test_tune_without_a_log_writes_one_named_after_the_model_here(tmp_path):
    model = _classifier(str(tmp_path / "models_cls.onnx"))
    work = tmp_path / "work"
    work.mkdir()
    code, out, err = _cli("tune", model, "--shape", "N=1", "--trials", "4", "--verbose", "0",
                          "--network-timing-s", "0", cwd=work)
    assert code == 0, out + err
    assert "no --log given: records go to models_cls.json in the current directory" in out, out
    assert os.listdir(work) == ["models_cls.json"] and os.path.getsize(work / "models_cls.json") > 0
    # compile and run keep the untuned network as their default.
    code, out, err = _cli("compile", model, "--shape", "N=1", "-o", "cls.so", cwd=work)
    assert code == 0 and "(no --log: default schedules)" in out, out + err


# ---- 4. cross-compiling a network ----

def _require(tool, package):
    """The path of `tool`: scripts/install_deps.sh installs its Debian package, so the test does not skip."""
    path = shutil.which(tool)
    assert path, f"{tool} is not installed: apt-get install {package} (scripts/install_deps.sh)"
    return path


def _e_machine(path):
    with open(path, "rb") as f:
        head = f.read(20)
    assert head[:4] == b"\x7fELF", head
    return struct.unpack("<H", head[18:20])[0]


def _run_under_qemu(artifact_path, machine, inputs, tmp_path):
    """The outputs of a cross-compiled network artifact, its kernels run one group at a time under qemu-user
    by tests/python/cross_kernel_driver.c (the groups' arguments as KernelCalls passes them: inputs, output,
    pre-packed arrays). The Python runtime does not run under qemu-user here, so the driver stands in for it."""
    compiler = _require(f"{machine}-linux-gnu-gcc", f"gcc-{machine}-linux-gnu")
    qemu = _require(f"qemu-{machine}", "qemu-user")
    driver = str(tmp_path / f"driver_{machine}")
    subprocess.run([compiler, "-O1", "-o", driver, os.path.join(HERE, "cross_kernel_driver.c"), "-ldl"],
                   check=True)
    with zipfile.ZipFile(artifact_path) as z:
        meta = json.loads(z.read("autosched.json"))
        graph = meta["graph"]

        def member(name):
            with z.open(name) as f:
                return np.lib.format.read_array(f)
        env = dict(zip(graph["inputs"], inputs))
        env.update({v: member(name) for v, name in graph["constants"].items()})
        for i, group in enumerate(graph["groups"]):
            shape, dtype = graph["values"][group["output"]]
            arrays = ([env[v] for v in group["inputs"]] + [np.zeros(shape, dtype)]
                      + [member(name) for name in group["prepacked_arrays"]])
            files = [str(tmp_path / f"group{i}_arg{j}.bin") for j in range(len(arrays))]
            for name, array in zip(files, arrays):
                np.ascontiguousarray(array).tofile(name)
            symbol = meta["kernels"][group["kernel"]]["symbol"]
            proc = subprocess.run([qemu, "-L", f"/usr/{machine}-linux-gnu", driver, artifact_path, symbol, *files],
                                  capture_output=True, text=True, timeout=300)
            assert proc.returncode == 0, (group["name"], proc.stderr)
            env[group["output"]] = np.fromfile(files[len(group["inputs"])], dtype).reshape(shape)
    return [env[v] for v in graph["outputs"]]


@pytest.mark.parametrize("machine", sorted(CROSS))
def test_compile_cross_compiles_a_network_that_runs_on_the_target(tmp_path, machine):
    compiler = _require(f"{machine}-linux-gnu-gcc", f"gcc-{machine}-linux-gnu")
    model = _classifier(str(tmp_path / "cls.onnx"), batch=1)
    target = f"llvm -mtriple={machine}-linux-gnu"
    out_path = str(tmp_path / f"cls_{machine}.so")
    env = {k: v for k, v in os.environ.items() if k != "CC"}
    # aarch64 through --cross-compiler, riscv64 through $CC.
    option = ["--cross-compiler", compiler] if machine == "aarch64" else []
    if machine == "riscv64":
        env["CC"] = f"{machine}-linux-gnu-gcc"
    code, out, err = _cli("compile", model, "--target", target, *option, "-o", out_path, env=env)
    assert code == 0, out + err
    assert f"run it on a{'n' if machine[0] == 'a' else ''} {machine} machine with: autosched run" in out, out
    assert _e_machine(out_path) == CROSS[machine]
    with pytest.raises(ans.runtime.ArtifactError, match=f"built for {machine} \\(linux\\), this machine is"):
        ans.graph.load_module(out_path)
    x = np.random.default_rng(2).standard_normal((1, 3, 16, 16)).astype("float32")
    (got,) = _run_under_qemu(out_path, machine, [x], tmp_path)
    np.testing.assert_allclose(got, _onnxruntime(model, x), rtol=1e-4, atol=1e-6)


def test_cross_compiling_without_a_cross_compiler_fails_before_linking(tmp_path):
    model = _classifier(str(tmp_path / "cls.onnx"), batch=1)
    env = {k: v for k, v in os.environ.items() if k != "CC"}
    target = "llvm -mtriple=aarch64-linux-gnu"
    code, out, err = _cli("compile", model, "--target", target, "-o", "cls.so", cwd=tmp_path, env=env)
    assert code == 2 and "compiled" not in out and not os.path.exists(tmp_path / "cls.so"), out + err
    assert err.strip().splitlines() == [
        f"autosched compile: error: target '{target}' makes code for aarch64, which this machine's linker cannot "
        "link: give a C compiler for aarch64 (--cross-compiler aarch64-linux-gnu-gcc, or "
        "CC=aarch64-linux-gnu-gcc); on Debian or Ubuntu: apt-get install gcc-aarch64-linux-gnu"], err
    # A compiler for this machine is refused by what it makes (`cc -dumpmachine`), not by ld's relocations.
    code, out, err = _cli("compile", model, "--target", target, "--cross-compiler", "gcc", "-o", "cls.so",
                          cwd=tmp_path, env=env)
    assert code == 2 and f"--cross-compiler gcc makes code for {platform.machine()}" in err, err
    assert "Relocations" not in err, err
    code, out, err = _cli("compile", model, "--target", target, "-o", "cls.so", cwd=tmp_path,
                          env=dict(env, CC="no-such-gcc"))
    assert code == 2 and "CC=no-such-gcc: 'no-such-gcc' is not installed" in err, err
    # tune and run of a foreign target say where it runs.
    code, out, err = _cli("run", model, "--target", target)
    assert code == 2 and "makes code for aarch64, which this machine cannot run" in err, err


def test_export_library_takes_a_cross_compiler(tmp_path, monkeypatch):
    """The Python API: GraphModule.export_library(path, cross_compiler=...), and Module.export_library."""
    compiler = _require("aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu")
    monkeypatch.delenv("CC", raising=False)
    graph = ans.frontends.from_onnx(_classifier(str(tmp_path / "cls.onnx"), batch=1))
    net = ans.graph.build(graph, "llvm -mtriple=aarch64-linux-gnu", verbose=False)
    with pytest.raises(RuntimeError, match=r"cross_compiler=aarch64-linux-gnu-gcc, or CC=aarch64-linux-gnu-gcc"):
        net.export_library(str(tmp_path / "no.so"))
    assert not os.path.exists(tmp_path / "no.so")
    net.export_library(str(tmp_path / "net.so"), cross_compiler=compiler)
    assert _e_machine(tmp_path / "net.so") == CROSS["aarch64"]
    task = ans.graph.extract_tasks(graph, "llvm -mtriple=riscv64-linux-gnu")[0][0]
    monkeypatch.setenv("CC", "riscv64-linux-gnu-gcc")
    ans.build(task).export_library(str(tmp_path / "kernel.so"))
    assert _e_machine(tmp_path / "kernel.so") == CROSS["riscv64"]
