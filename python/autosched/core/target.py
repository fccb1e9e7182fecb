"""The Pythonic layer of the core's Target: argument checks, TVM's ``host=`` and ``target.kind.name``.

What a target can do is its kind's capabilities, which the core's Target exposes: ``is_gpu``,
``runs_in_host_process``, ``runs_on_host_cpu``, ``timed_by_device``, ``fault_restarts_worker``, ``has_backend``
and ``device_hardware_params()``; code branches on those, not on the kind's name."""
import warnings
from typing import Any

from .. import _core
from .checks import check_target, fail


class TargetKind(str):
    """A target's kind, the name of its entry in the registry of target kinds ("llvm", "opencl", ...): a str,
    whose ``.name`` is the same text (TVM's target.kind.name)."""

    @property
    def name(self) -> str:
        return str(self)


_core_init = _core.Target.__init__
_core_kind = _core.Target.kind


def _init(self: _core.Target, text: Any, host: Any = None) -> None:
    """Target(text, host=None): text such as "llvm" (the host CPU), "llvm -mcpu=skylake-avx512", "opencl
    -device=mali". host: TVM's argument; autosched runs the host side of every target on the CPU of this
    process, so only None or "llvm" (that CPU) is accepted."""
    if isinstance(text, _core.Target):
        text = text.text
    if not isinstance(text, str):
        fail("Target", "text", "a target text such as 'llvm' or 'opencl -device=0'", text)
    if host is not None:
        host_target = check_target("Target", host, "host")
        if not host_target.runs_in_host_process or host_target.mcpu or host_target.mtriple:
            raise ValueError(f"Target: host must be None or 'llvm' (autosched runs the host side of a target on "
                             f"this process's CPU), got '{host_target.text}'")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _core_init(self, text)
    for w in caught:  # issued again at the caller's line, as the core issues them
        warnings.warn(w.message, w.category, stacklevel=2)


_init.__name__, _init.__qualname__ = "__init__", "Target.__init__"
_core.Target.__init__ = _init
_core.Target.kind = property(lambda self: TargetKind(_core_kind.fget(self)),
                             doc="The target's kind: 'llvm', 'opencl' or another registered one (a str; .name gives "
                                 "the same, as TVM)")
