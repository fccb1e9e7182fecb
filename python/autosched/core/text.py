"""Words and numbers as autosched prints them: durations, and speed comparisons phrased one way everywhere.

    format_time(0.00413)                          -> "4.13 ms"
    compare_speed(0.0058, 0.001, "onnxruntime")   -> "autosched is 5.8x slower than onnxruntime"
    compare_speed(0.001, 0.0013, "numpy")         -> "autosched is 1.3x faster than numpy"
"""
from typing import Optional

__all__ = ["format_time", "compare_speed", "parse_duration"]


def format_time(seconds: Optional[float]) -> str:
    """A duration with a readable unit: "812 ns", "3.2 us", "4.13 ms", "1.5 s"; "-" for None."""
    if seconds is None:
        return "-"
    for unit, scale in (("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3)):
        if seconds < scale * 1000:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds:.3g} s"


def compare_speed(ours: float, theirs: float, peer: str, name: str = "autosched", tie: float = 0.02) -> str:
    """How `name` (taking `ours` seconds) compares with `peer` (taking `theirs`), always as the larger time
    over the smaller one: "autosched is 5.8x slower than onnxruntime", "... 1.3x faster than ...", or "...
    as fast as ..." within `tie` (2%)."""
    if not (ours > 0 and theirs > 0):
        raise ValueError(f"compare_speed: times must be positive, got {ours!r} and {theirs!r}")
    ratio = max(ours, theirs) / min(ours, theirs)
    if ratio <= 1 + tie:
        return f"{name} is as fast as {peer} (within {100 * tie:.0f}%)"
    figure = f"{ratio:.2g}" if ratio < 10 else f"{ratio:.0f}"
    return f"{name} is {figure}x {'faster' if ours < theirs else 'slower'} than {peer}"


def parse_duration(text) -> float:
    """Seconds of "90s", "30m", "1h", "1.5h" or a plain number of seconds; ValueError otherwise."""
    if isinstance(text, (int, float)):
        seconds = float(text)
    else:
        s = str(text).strip().lower()
        units = {"s": 1, "m": 60, "h": 3600}
        try:
            seconds = float(s[:-1]) * units[s[-1]] if s and s[-1] in units else float(s)
        except ValueError:
            raise ValueError(f"time budget {text!r}: expected a duration such as 90s, 30m, 1h or a number of "
                             "seconds") from None
    if not seconds > 0:
        raise ValueError(f"time budget {text!r}: must be positive")
    return seconds
