"""The workload registry: a name for each function that builds a task's tensors.

    @ans.register_workload
    def matmul(n, m, k, dtype): ...            # registered as "matmul"

    @ans.register_workload("my_matmul")
    def matmul(...): ...

A task records (name, args, module) next to its DAG, so another process re-creates it from the function once
the module that defines it is imported (the module is imported on demand when it can be). Without the
function, the DAG embedded in the task's JSON is used.
"""
import importlib
import numbers
from typing import Any, Callable, Dict, Union

from . import te

_REGISTRY: Dict[str, Callable[..., Any]] = {}  # name -> function


def register_workload(func_or_name: Union[str, Callable[..., Any]]) -> Any:
    """Registers a function under its own name, or under the given name (used as a decorator factory).

    Registering a name again replaces the earlier function (re-running a notebook cell is normal)."""
    if isinstance(func_or_name, str):
        name = func_or_name

        def register(func):
            _register(name, func)
            return func
        return register
    if not callable(func_or_name):
        raise TypeError(f"register_workload takes a function or a name, got {type(func_or_name).__name__}")
    _register(func_or_name.__name__, func_or_name)
    return func_or_name


def _register(name, func):
    if not callable(func):
        raise TypeError(f"workload '{name}' must be a function, got {type(func).__name__}")
    _REGISTRY[name] = func
    func.__autosched_workload_name__ = name


def workload_name(func):
    """The registered name of func, registering it under its own name if needed."""
    name = getattr(func, "__autosched_workload_name__", None)
    if name is not None and _REGISTRY.get(name) is func:
        return name
    register_workload(func)
    return func.__name__


def lookup_workload(name, module=None):
    """The function registered as name; imports `module` first when given and the name is unknown."""
    if name not in _REGISTRY and module and module != "__main__":
        try:
            importlib.import_module(module)
        except ImportError:
            pass
    if name not in _REGISTRY:
        hint = f" (defined in module '{module}', which could not be imported)" if module else ""
        raise ValueError(f"no workload registered as '{name}'{hint}; import the module that defines it")
    return _REGISTRY[name]


def build_workload(name, args, module=None):
    """Calls the workload function with args; checks that it returned a list of te.Tensor."""
    tensors = lookup_workload(name, module)(*args)
    if isinstance(tensors, te.Tensor):
        tensors = [tensors]
    if not isinstance(tensors, (list, tuple)) or not all(isinstance(t, te.Tensor) for t in tensors):
        raise TypeError(f"workload '{name}' must return a list of te.Tensor (inputs and outputs), got "
                        f"{type(tensors).__name__}")
    return list(tensors)


def args_to_json(args, name="workload"):
    """Arguments as JSON values; tuples become lists (args_from_json turns them back into tuples)."""
    def encode(value):
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, numbers.Integral):
            return int(value)
        if isinstance(value, numbers.Real):
            return float(value)
        if isinstance(value, (list, tuple)):
            return [encode(v) for v in value]
        raise TypeError(f"argument {value!r} of workload '{name}' cannot be recorded: use numbers, strings, "
                        f"None and tuples of them")
    return [encode(a) for a in args]


def args_from_json(values):
    def decode(value):
        return tuple(decode(v) for v in value) if isinstance(value, list) else value
    return tuple(decode(v) for v in values)
