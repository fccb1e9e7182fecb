"""What a tuning session prints: one progress bar, the task table at the end, a summary, and log records.

    reporter = Progress(total_trials=200, time_budget_s=600, verbose=1, desc="3 tasks")
    reporter.update(trials=16, best_cost=1.2e-3, network_latency=4.1e-3)   # the bar
    reporter.table(lines, latency=4.1e-3, state=(...))                       # printed when it changed enough
    reporter.table(lines, latency=4.1e-3, force=True)                        # the table at the end
    reporter.info("Stopped: ..."); reporter.debug("round 3: ...")
    reporter.close()

Lines go through the ``logging`` logger "autosched" (``logging.getLogger("autosched")``), so a pipeline routes
them like any other log. `verbose` maps to levels: 0 warnings only, 1 INFO (the progress lines, the table at
the end, the summary in plain words), 2 DEBUG (a line per round, the task table whenever it changed materially,
the detailed summary rows, the search's statistics). When neither that logger nor the root logger has a
handler, the session prints INFO and above to stdout itself (through the bar, so the two do not tear each other).

The bar is tqdm's: in a terminal ``tqdm``, in a notebook ``tqdm.auto`` (a widget where ipywidgets is
installed). Where output is not interactive (a file, a pipe, CI, a notebook without widgets) there is no bar;
a plain progress line is printed at every tenth of the budget (trials or time), so a session prints a bounded
number of lines whatever its length.
"""
import logging
import math
import shutil
import sys
import time
from typing import Any, Callable, List, Optional, Sequence, TextIO, Tuple

from ..core.text import format_time

__all__ = ["Progress", "logger", "level_of_verbose", "LINE_STEPS", "TABLE_CHANGE"]

logger = logging.getLogger("autosched")

# Where output is not interactive, a progress line at every 1/LINE_STEPS of the budget (verbose 1: every
# 2/LINE_STEPS, to keep a tune's output short).
LINE_STEPS = 10
# The task table is printed again when the estimated latency dropped by this share since it was last printed
# (or a task got its first valid schedule, or stopped).
TABLE_CHANGE = 0.10


def level_of_verbose(verbose: int) -> int:
    """The logging level of TuningOptions.verbose: 0 WARNING, 1 INFO, 2 and more DEBUG."""
    return logging.WARNING if verbose <= 0 else logging.INFO if verbose == 1 else logging.DEBUG


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    get = getattr(shell, "get_ipython", None)
    ip = get() if callable(get) else None
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def _has_widgets() -> bool:
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return False
    return True


def _tqdm_class(notebook: bool) -> Optional[Callable[..., Any]]:
    try:
        if notebook:
            from tqdm.auto import tqdm
        else:
            from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


def _logging_configured() -> bool:
    """Whether the "autosched" logger or the root logger has a handler of the program's (pytest's capture
    handlers aside, so tests see what a user sees)."""
    handlers = logger.handlers + logging.getLogger().handlers
    return any(not type(h).__module__.startswith("_pytest") for h in handlers)


class _Handler(logging.Handler):
    """Writes records to the session's stream, through the bar when there is one."""

    def __init__(self, progress: "Progress") -> None:
        super().__init__()
        self.progress = progress

    def emit(self, record: logging.LogRecord) -> None:
        self.progress._write(self.format(record))


class Progress:
    """The output of one tuning session (see the module docstring).

    total_trials: the trial budget; time_budget_s: the time budget (None: none). verbose: 0, 1 or 2.
    interactive: draw a live bar (None: when `file` is a terminal, or in a notebook with ipywidgets).
    file: where the bar and the lines go (None: sys.stdout at each write).
    """

    def __init__(self, total_trials: int, time_budget_s: Optional[float] = None, verbose: int = 1,
                 desc: str = "tuning", interactive: Optional[bool] = None, file: Optional[TextIO] = None,
                 start: Optional[float] = None) -> None:
        self.total = max(0, int(total_trials))
        self.time_budget_s = time_budget_s
        self.verbose = verbose
        self.level = level_of_verbose(verbose)
        self.desc = desc
        self.file = file
        self.start = time.monotonic() if start is None else start
        notebook = _in_notebook()
        if interactive is None:
            stream = file or sys.stdout
            interactive = (notebook and _has_widgets()) or (not notebook and bool(getattr(stream, "isatty",
                                                                                          lambda: False)()))
        self.interactive = interactive and verbose > 0
        self.bar: Any = None
        if self.interactive:
            tqdm = _tqdm_class(notebook)
            if tqdm is not None:
                # A terminal that reports no size (a bare pseudo-terminal) gets 100 columns and 20 rows.
                wide = notebook or shutil.get_terminal_size((0, 0)).columns >= 40
                self.bar = tqdm(total=self.total, desc=desc, unit="trial", file=file or sys.stdout,
                                dynamic_ncols=wide, ncols=None if wide else 100, nrows=None if wide else 20,
                                leave=True, mininterval=0.5)
            else:
                self.interactive = False
        self.trials = 0
        self.best_cost: Optional[float] = None
        self.network_latency: Optional[float] = None
        self.note = ""
        self.lines_step = 0  # the last tenth of the budget a plain line was printed for
        self.table_latency: Optional[float] = None
        self.table_state: Any = None
        self.handler: Optional[_Handler] = None
        if not _logging_configured():  # no logging set up: print INFO and above ourselves
            self.handler = _Handler(self)
            self.handler.setFormatter(logging.Formatter("%(message)s"))
            logger.addHandler(self.handler)
            if logger.level == logging.NOTSET or logger.level > logging.DEBUG:
                self._old_level: Optional[int] = logger.level
                logger.setLevel(logging.DEBUG)
            else:
                self._old_level = None

    # ---- output ----
    def _write(self, text: str) -> None:
        stream = self.file or sys.stdout
        if self.bar is not None:
            self.bar.write(text, file=stream)
        else:
            stream.write(text + "\n")
            stream.flush()

    def log(self, level: int, message: str) -> None:
        """A message at `level` when verbose lets it through."""
        if level >= self.level:
            logger.log(level, message)

    def info(self, message: str) -> None:
        self.log(logging.INFO, message)

    def debug(self, message: str) -> None:
        self.log(logging.DEBUG, message)

    def warning(self, message: str) -> None:
        self.log(logging.WARNING, message)

    # ---- the bar ----
    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def status(self, with_time: bool = True) -> str:
        """'best 1.2 ms | network ~4.1 ms | 54/600 s' (without the time where the line says it already)."""
        parts = []
        if self.best_cost is not None:
            parts.append(f"best {format_time(self.best_cost)}")
        if self.network_latency is not None:
            parts.append(f"network ~{format_time(self.network_latency)}")
        if not parts:
            parts.append(self.note or "no valid schedule yet")
        if self.time_budget_s and with_time:
            parts.append(f"{self.elapsed():.0f}/{self.time_budget_s:.0f} s")
        return " | ".join(parts)

    def update(self, trials: int, best_cost: Optional[float] = None, network_latency: Optional[float] = None,
               note: str = "") -> None:
        """The session has measured `trials` in all; its best cost (one task) or estimated network latency;
        `note` stands in for them while neither is known (e.g. '3/8 tasks with a schedule')."""
        self.note = note
        self.trials = trials
        self.best_cost = best_cost
        self.network_latency = network_latency
        if self.bar is not None:
            self.bar.n = min(trials, self.total) if self.total else trials
            self.bar.set_postfix_str(self.status(), refresh=False)
            self.bar.refresh()
            return
        if self.level > logging.INFO:
            return
        step = self._step()
        if step > self.lines_step:
            self.lines_step = step
            self.info(self.line())

    def _share(self) -> float:
        """The share of the budget used: of the trials, or of the time where that is further along."""
        shares = [self.trials / self.total if self.total else 0.0]
        if self.time_budget_s:
            shares.append(self.elapsed() / self.time_budget_s)
        return min(1.0, max(shares))

    def _step(self) -> int:
        steps = LINE_STEPS if self.verbose >= 2 else LINE_STEPS // 2
        return min(steps, int(math.floor(self._share() * steps + 1e-9)))

    def line(self) -> str:
        """The plain progress line: '[ 40%] 80/200 trials, 51/600 s | best 1.2 ms | network ~4.1 ms' (the
        share of the budget used, trials or time, whichever is further along)."""
        clock = f"{self.elapsed():.0f}/{self.time_budget_s:.0f} s" if self.time_budget_s else f"{self.elapsed():.0f} s"
        return (f"[{100 * self._share():3.0f}%] {self.trials}/{self.total} trials, {clock} | "
                f"{self.status(with_time=False)}")

    # ---- the table ----
    def table(self, lines: Sequence[str], latency: Optional[float], state: Any = None, force: bool = False) -> bool:
        """Prints `lines` (a task table) when forced, the first time, when `state` (e.g. which tasks have a
        schedule and which are done) changed, or when `latency` dropped by TABLE_CHANGE since the last
        printed table. Returns whether it printed."""
        changed = (force or self.table_state is None or state != self.table_state
                   or (latency is not None and (self.table_latency is None
                                                or latency < (1 - TABLE_CHANGE) * self.table_latency)))
        if not changed:
            return False
        self.table_state, self.table_latency = state, latency
        self.info("\n".join(lines))
        return True

    def finish_bar(self) -> None:
        """Ends the bar (left on screen at its last state); later lines print below it."""
        if self.bar is not None:
            self.bar.set_postfix_str(self.status(), refresh=False)
            self.bar.close()
            self.bar = None

    def close(self) -> None:
        self.finish_bar()
        if self.handler is not None:
            logger.removeHandler(self.handler)
            if self._old_level is not None:
                logger.setLevel(self._old_level)
            self.handler = None

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
