"""Argument checks of the public entries: a wrong argument raises a short TypeError or ValueError that names
the function, the argument and what it expected, never the core's overload list or the value of an array."""
import os
import re
from typing import Any, Callable, NoReturn, Optional, Tuple, Type, Union

from .. import _core

MAX_MESSAGE = 400


def describe(value: Any) -> str:
    """A short description of a value's kind: 'int', 'str', 'ndarray of shape (300, 300)', 'dict of 2'."""
    name = type(value).__name__
    shape = getattr(value, "shape", None)
    if shape is not None and not isinstance(value, (str, bytes)):
        try:
            return f"{name} of shape {tuple(shape)}"
        except TypeError:
            return name
    if isinstance(value, (str, bytes)):
        text = repr(value)
        return f"{name} {text if len(text) <= 40 else text[:37] + '...'}"
    if isinstance(value, (list, tuple, dict, set)):
        return f"{name} of {len(value)}"
    if isinstance(value, (int, float, bool)) or value is None:
        return repr(value)
    return name


def fail(where: str, arg: str, expected: str, value: Any, exc: Type[Exception] = TypeError) -> NoReturn:
    raise exc(f"{where}: {arg} must be {expected}, got {describe(value)}")


def check_type(where: str, arg: str, value: Any, types: Union[type, Tuple[type, ...]], expected: str) -> Any:
    if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        fail(where, arg, expected, value)
    if not isinstance(value, types):
        fail(where, arg, expected, value)
    return value


def check_target(where: str, target: Any, arg: str = "target") -> _core.Target:
    """A Target from a Target or its text."""
    if isinstance(target, _core.Target):
        return target
    if isinstance(target, str):
        return _core.Target(target)
    fail(where, arg, "a Target or a target text such as 'llvm' or 'opencl'", target)


def check_path(where: str, path: Any, arg: str = "path") -> str:
    if not isinstance(path, (str, os.PathLike)):
        fail(where, arg, "a file path (str or os.PathLike)", path)
    return os.fspath(path)


def check_hardware_params(where: str, params: Any) -> Optional[_core.HardwareParams]:
    if params is not None and not isinstance(params, _core.HardwareParams):
        fail(where, "hardware_params", "None or an autosched.HardwareParams", params)
    return params


def shorten_core_error(where: str, err: Exception) -> Exception:
    """The core's 'incompatible arguments' TypeError in a few lines: the signatures it takes, the kinds of the
    arguments given, never their values."""
    text = str(err)
    if "incompatible" not in text:
        return err
    signatures = re.findall(r"^\s+\d+\. (.*)$", text, re.M)
    signatures = [re.sub(r"autosched\._core\.|typing\.|collections\.abc\.", "", s) for s in signatures]
    message = f"{where}: unexpected arguments; it takes " + " or ".join(signatures)
    if len(message) > MAX_MESSAGE:
        message = message[:MAX_MESSAGE - 3] + "..."
    return TypeError(message)


def call_core(where: str, fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """fn(*args, **kwargs), with the core's overload mismatch turned into a short TypeError."""
    try:
        return fn(*args, **kwargs)
    except TypeError as err:
        short = shorten_core_error(where, err)
        if short is err:
            raise
        raise short from None
