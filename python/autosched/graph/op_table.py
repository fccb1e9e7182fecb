"""The op table: the names of registry.py (OPS, infer, reference, te_builder, OpError, OpDef) and
FLOAT_ONLY, the ops that refuse integer inputs. Each op is defined in graph/ops/ (docs/graph_ops.md)."""
from .errors import OpError
from .opdef import OpDef  # noqa: F401
from .ops.common import broadcast_shapes, window_out  # noqa: F401
from .registry import OPS, infer, reference, te_builder

__all__ = ["OpError", "OPS", "infer", "reference", "te_builder", "FLOAT_ONLY"]


def __getattr__(name):
    if name == "FLOAT_ONLY":  # read from the registry on each access, so ops registered later are in it
        return {op for op, op_def in OPS.items() if op_def.float_only}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
