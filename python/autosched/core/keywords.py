"""Keyword arguments checked by name, and the time budget's two spellings.

A misspelled keyword is a TypeError naming the closest one (difflib): ``TuningOptions(num_measure_trails=10)``
says ``did you mean 'num_measure_trials'?``. The options classes of the core (HardwareParams, SearchParams,
LocalBuilder, ...) say the same from their field lists (bindings/bind_options.h); options_signature gives those
classes the signature an IDE and ``inspect.signature`` show.

The time budget is ``time_budget`` everywhere (TuningOptions, TaskScheduler.tune, SearchTask.tune, the
torch.compile backend's options, the command line's --time-budget): seconds, or a text such as "90s", "10m",
"1h" (core.text.parse_duration). ``time_budget_s`` is its alias (the core's field name); giving both is an error.
"""
import difflib
import functools
import inspect
import numbers
from typing import Any, Callable, Collection, Iterable, List, Optional, Sequence, TypeVar, Union, cast

from .text import parse_duration

__all__ = ["HARDWARE_PARAMS_POSITIONAL", "TimeBudget", "did_you_mean", "check_keywords", "checked_keywords", "time_budget_seconds",
           "options_signature"]

# The fields of HardwareParams that may also be given by position, in order (bindings/bind_task.cc).
HARDWARE_PARAMS_POSITIONAL = ("num_cores", "vector_unit_bytes", "cache_line_bytes", "max_shared_memory_per_block",
                              "max_local_memory_per_block", "max_threads_per_block", "max_vthread_extent",
                              "warp_size")

# What a time budget may be given as: seconds, a duration text ("10m"), or None for no limit.
TimeBudget = Union[int, float, str, None]

F = TypeVar("F", bound=Callable[..., Any])


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """" (did you mean 'x'?)" with the choice closest to `name`, or "" when none is close."""
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def check_keywords(owner: str, given: Iterable[str], allowed: Collection[str], what: str = "keyword") -> None:
    """TypeError naming the first keyword (or other `what`) of `given` that is not `allowed`, and the closest
    allowed one."""
    for name in given:
        if name not in allowed:
            raise TypeError(f"{owner} got an unknown {what} '{name}'{did_you_mean(name, allowed)}")


def checked_keywords(owner: str) -> Callable[[F], F]:
    """Decorates a function whose keywords are checked by name before it runs (check_keywords); the
    signature it shows (inspect.signature, an IDE's completion) is the function's own."""

    def decorate(function: F) -> F:
        parameters = inspect.signature(function).parameters.values()
        allowed = frozenset(p.name for p in parameters
                            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self")

        @functools.wraps(function)
        def checked(*args: Any, **kwargs: Any) -> Any:
            check_keywords(owner, kwargs, allowed)
            return function(*args, **kwargs)

        return cast(F, checked)  # functools.wraps keeps the signature

    return decorate


def time_budget_seconds(owner: str, time_budget: TimeBudget = None,
                        time_budget_s: TimeBudget = None) -> Optional[float]:
    """The time budget in seconds from either spelling (None: no limit): a positive number of seconds, or a text
    such as "90s", "10m", "1h". TypeError when both are given or the value is neither; ValueError when it is
    not positive or the text is not a duration."""
    if time_budget is not None and time_budget_s is not None:
        raise TypeError(f"{owner}: give time_budget or its alias time_budget_s, not both")
    name, value = ("time_budget", time_budget) if time_budget is not None else ("time_budget_s", time_budget_s)
    if value is None:
        return None
    if isinstance(value, str):
        try:
            return parse_duration(value)
        except ValueError as e:
            raise ValueError(f"{owner}: {name}: {e}") from None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{owner}: {name} must be seconds or a duration such as '10m', got {value!r}")
    if not value > 0:
        raise ValueError(f"{owner}: {name} must be positive, got {value!r}")
    return float(value)


def options_signature(cls: Any, positional: Sequence[str] = (), extra: Sequence[inspect.Parameter] = ()
                      ) -> inspect.Signature:
    """The signature of a core options class (one with `field_names`) built from its field list: the fields
    named in `positional` by position or keyword, in that order, then `extra`, then the other fields by keyword
    only; each defaults to None (the class's default) and is annotated with the type of its default value,
    Optional."""
    defaults = cls().to_dict()

    def field(name: str, kind: Any) -> inspect.Parameter:
        value = defaults[name]
        kind_of_value: Any = type(value) if value is not None else Any
        if isinstance(value, list) and value:
            kind_of_value = List[type(value[0])]  # type: ignore[misc]
        return inspect.Parameter(name, kind, default=None, annotation=Optional[kind_of_value])

    rest = [name for name in cls.field_names if name not in positional]
    parameters = ([field(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in positional] + list(extra)
                  + [field(name, inspect.Parameter.KEYWORD_ONLY) for name in rest])
    return inspect.Signature(parameters)
