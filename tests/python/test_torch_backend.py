"""PyTorch integration: torch.compile(model, backend="autosched") registered by `import autosched` without
importing torch; compiled models equal eager ones; a graph with an operator autosched cannot import runs
eagerly with a warning; a changed parameter or buffer sends the graph back to eager, including writes that
move no version counter (through `.data`, BatchNorm's running statistics in train mode); TorchModule(net)
takes and returns torch tensors."""
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import autosched as ans  # noqa: E402
from autosched.frontends.torch_compile import AutoschedFallbackWarning  # noqa: E402
from autosched.deploy.torch_module import TorchModule  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Children import the autosched this process imported: the tree's python/ in development, the installed
# package in CI (the tree's python/ holds no compiled extension there).
PACKAGE_PARENT = os.path.dirname(os.path.dirname(ans.__file__))


class Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        y = torch.nn.functional.max_pool2d(y, 2)
        return self.fc(torch.flatten(y, 1))


def test_import_registers_the_backend_without_importing_torch():
    code = textwrap.dedent("""
        import sys
        import autosched
        assert "torch" not in sys.modules, "import autosched imported torch"
        import torch._dynamo
        from torch._dynamo.backends.registry import list_backends
        assert "autosched" in list_backends(), list_backends()
        print("ok")
    """)
    env = dict(os.environ, PYTHONPATH=PACKAGE_PARENT)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240, env=env)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stdout + proc.stderr


def test_torch_compile_equals_eager():
    torch.manual_seed(0)
    model = Small().eval()
    x = torch.randn(2, 3, 8, 8)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="autosched")
    built = ans.runtime.compile_counts()["llvm_jit"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", AutoschedFallbackWarning)
        with torch.no_grad():
            got = compiled(x)
            again = compiled(x + 1)
            want, want_again = model(x), model(x + 1)
    assert ans.runtime.compile_counts()["llvm_jit"] > built  # autosched's kernels ran, not eager torch
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(again, want_again, rtol=1e-4, atol=1e-4)
    # A parameter changed after compiling (autosched froze it): the graph runs eagerly, with a warning.
    with torch.no_grad():
        model.fc.bias.add_(1.0)
        with pytest.warns(AutoschedFallbackWarning, match="changed since the graph was compiled"):
            changed = compiled(x)
        torch.testing.assert_close(changed, model(x), rtol=1e-4, atol=1e-4)


class ConvBN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


def _compiled_conv_bn(x):
    """An eval-mode ConvBN and its compiled form, called once (autosched folds the batch norm's statistics into
    the convolution)."""
    torch.manual_seed(0)
    model = ConvBN().eval()
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="autosched")
    with warnings.catch_warnings():
        warnings.simplefilter("error", AutoschedFallbackWarning)
        with torch.no_grad():
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    return model, compiled


def test_a_weight_changed_through_data_is_seen():
    x = torch.randn(2, 3, 8, 8)
    model, compiled = _compiled_conv_bn(x)
    version = model.conv.weight._version
    model.conv.weight.data.mul_(3)
    assert model.conv.weight._version == version  # nothing but the content tells of the change
    with torch.no_grad():
        with pytest.warns(AutoschedFallbackWarning, match="changed since the graph was compiled"):
            got = compiled(x)
        torch.testing.assert_close(got, model(x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("through", ["model", "compiled"])
def test_batch_norm_statistics_moved_by_a_train_mode_forward_are_seen(through):
    x = torch.randn(2, 3, 8, 8)
    model, compiled = _compiled_conv_bn(x)
    before = model.bn.running_mean.clone()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", AutoschedFallbackWarning)  # the train-mode graph runs eagerly
        runner = model if through == "model" else compiled
        runner.train()
        runner(x * 2 + 1)
        runner.eval()
    assert not torch.equal(model.bn.running_mean, before)
    with torch.no_grad():
        with pytest.warns(AutoschedFallbackWarning, match="changed since the graph was compiled"):
            got = compiled(x)
        torch.testing.assert_close(got, model(x), rtol=1e-4, atol=1e-4)


def test_an_operator_autosched_cannot_import_runs_eagerly_with_a_warning():
    class Odd(torch.nn.Module):
        def forward(self, x):
            return torch.flip(x, dims=[1]) * 2

    x = torch.randn(3, 5)
    torch._dynamo.reset()
    compiled = torch.compile(Odd(), backend="autosched")
    with pytest.warns(AutoschedFallbackWarning, match="runs eagerly.*cannot be compiled"):
        got = compiled(x)
    torch.testing.assert_close(got, torch.flip(x, dims=[1]) * 2)


def test_a_new_input_shape_runs_eagerly_with_a_warning_naming_dynamic_false():
    model = torch.nn.Linear(4, 3).eval()
    a, b = torch.randn(2, 4), torch.randn(5, 4)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="autosched")
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", AutoschedFallbackWarning)
        compiled(a)  # static: compiled by autosched
        with pytest.warns(AutoschedFallbackWarning, match=r"dynamic shape.*torch.compile\(model, backend='autosched', "
                                                          r"dynamic=False\)"):
            got = compiled(b)  # Dynamo recompiles with the batch dimension dynamic (a SymInt input)
        torch.testing.assert_close(got, model(b))
        torch._dynamo.reset()
        static = torch.compile(model, backend="autosched", dynamic=False)  # the fix the warning names
        static(a)
        torch.testing.assert_close(static(b), model(b))  # a new shape compiled apart, no warning


def test_unknown_options_and_a_missing_log_are_refused(tmp_path):
    torch._dynamo.reset()
    compiled = torch.compile(torch.nn.ReLU(), backend="autosched", options={"budget": "5m"})
    with pytest.raises(Exception, match="unknown option 'budget' \\(did you mean 'time_budget'\\?\\)"):
        compiled(torch.randn(3))
    torch._dynamo.reset()
    compiled = torch.compile(torch.nn.ReLU(), backend="autosched", options={"log": str(tmp_path / "none.json")})
    with pytest.raises(Exception, match="none.json' does not exist"):
        compiled(torch.randn(3))


def test_graph_module_as_a_torch_module():
    g = ans.graph.Graph("dense")
    x = g.add_input("x", (2, 16))
    w = np.random.default_rng(0).standard_normal((4, 16)).astype(np.float32)
    g.set_outputs([g.add_node("relu", [g.add_node("dense", [x, g.add_constant("w", w)])])])
    module = TorchModule(ans.graph.build(g, "llvm", verbose=False))
    assert isinstance(module, torch.nn.Module)
    t = torch.randn(2, 16)
    y = module(t)
    assert isinstance(y, torch.Tensor) and y.shape == (2, 4)
    torch.testing.assert_close(y, torch.relu(t @ torch.from_numpy(w).T), rtol=1e-5, atol=1e-5)
    with pytest.raises(TypeError, match="requires grad"):
        module(t.requires_grad_())
    with pytest.raises(TypeError, match="must be a torch.Tensor"):
        module(t.detach().numpy())
