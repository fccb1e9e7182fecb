"""The output of a tuning session (autosched.progress): a bounded number of lines where output is not
interactive, a live tqdm bar in a terminal, the task table only when it changed materially, and everything
through the "autosched" logger so that verbose levels and handlers route it."""
import logging
import os
import pty
import subprocess
import sys
import textwrap

import pytest

import autosched as ans
from autosched.tune import progress

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# Children import the autosched this process imported: the tree's python/ in development, the installed
# package in CI (the tree's python/ holds no compiled extension there).
PACKAGE_PARENT = os.path.dirname(os.path.dirname(ans.__file__))

SCHEDULER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {here!r})
    import autosched as ans
    from schedule_helpers import matmul_bias_relu
    tasks = [ans.SearchTask(compute_dag=matmul_bias_relu(n, n, n)[0], target="llvm", desc=f"mm{{n}}")
             for n in (8, 16)]
    opts = ans.TuningOptions(num_measure_trials={trials}, num_measures_per_round=2, verbose={verbose})
    ans.TaskScheduler(tasks, cost_model="random").tune(opts)
    print("END")
""")


def _script(trials, verbose=1):
    return SCHEDULER.format(here=HERE, trials=trials, verbose=verbose)


def _env():
    return dict(os.environ, PYTHONPATH=PACKAGE_PARENT + os.pathsep + os.environ.get("PYTHONPATH", ""))


def test_a_long_run_writes_a_bounded_number_of_lines_when_not_interactive():
    proc = subprocess.run([sys.executable, "-c", _script(48)], capture_output=True, text=True, timeout=600,
                          env=_env())
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1] == "END"
    progress_lines = [line for line in lines if line.startswith("[") and "% ]" not in line and "trials," in line]
    assert 1 <= len(progress_lines) <= progress.LINE_STEPS, proc.stdout
    tables = [line for line in lines if line.startswith("|  ID |")]
    assert len(tables) == 1, proc.stdout  # the table once, at the end
    assert any(line.startswith("Tuned 2 tasks with 48 measurements") for line in lines), proc.stdout
    assert "\r" not in proc.stdout
    assert len(lines) <= 4 + progress.LINE_STEPS + 6, proc.stdout


def test_verbose_zero_prints_nothing():
    proc = subprocess.run([sys.executable, "-c", _script(8, verbose=0)], capture_output=True, text=True,
                          timeout=600, env=_env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "END\n" and proc.stderr == ""


def test_a_terminal_gets_a_live_bar():
    """Run under a pseudo-terminal: tqdm redraws one line (carriage returns) with trials and the estimate."""
    code = _script(12)
    out = b""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the tuning script on the terminal
        os.execve(sys.executable, [sys.executable, "-c", code], _env())
    try:
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    finally:
        _, status = os.waitpid(pid, 0)
    text = out.decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 0, text
    assert "\r" in text and "2 tasks:" in text and "trial" in text and "network ~" in text, text
    assert "[100%]" not in text  # the plain lines are for output that is not a terminal


def test_logging_routes_the_output():
    """A handler on the "autosched" logger receives the records; the session then prints nothing itself."""
    code = _script(8).replace("import autosched as ans", textwrap.dedent("""
        import logging
        records = []
        class Keep(logging.Handler):
            def emit(self, record):
                records.append((record.levelno, record.getMessage()))
        logging.getLogger("autosched").addHandler(Keep())
        logging.getLogger("autosched").setLevel(logging.DEBUG)
        import autosched as ans""")).replace('print("END")', textwrap.dedent("""
        assert any(level == logging.INFO and m.startswith("Tuned 2 tasks") for level, m in records)
        assert not any(level == logging.DEBUG for level, m in records)  # verbose=1: INFO and above
        print("END")"""))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=_env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "END\n", proc.stdout


def test_verbose_maps_to_levels():
    assert progress.level_of_verbose(0) == logging.WARNING
    assert progress.level_of_verbose(1) == logging.INFO
    assert progress.level_of_verbose(2) == progress.level_of_verbose(3) == logging.DEBUG


def test_the_table_prints_when_it_changes_materially(capsys):
    with progress.Progress(100, verbose=1, interactive=False) as p:
        assert p.table(["t1"], 10.0, state=(1,))
        assert not p.table(["t2"], 9.5, state=(1,))        # 5% better: not material
        assert p.table(["t3"], 8.9, state=(1,))            # 11% better than the last printed
        assert p.table(["t4"], 8.9, state=(2,))            # a task got a schedule or stopped
        assert not p.table(["t5"], 8.9, state=(2,))
        assert p.table(["t6"], 8.9, state=(2,), force=True)
    assert capsys.readouterr().out.split() == ["t1", "t3", "t4", "t6"]


def test_plain_lines_at_every_fifth_of_the_budget_and_every_tenth_at_verbose_2(capsys):
    with progress.Progress(200, verbose=1, interactive=False) as p:
        for trials in range(0, 201, 2):
            p.update(trials, best_cost=1e-3)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == progress.LINE_STEPS // 2
    assert lines[0].startswith("[ 20%] 40/200 trials") and lines[-1].startswith("[100%] 200/200 trials")
    with progress.Progress(200, verbose=2, interactive=False) as p:
        for trials in range(0, 201, 2):
            p.update(trials, best_cost=1e-3)
    lines = [line for line in capsys.readouterr().out.splitlines() if "trials" in line]
    assert len(lines) == progress.LINE_STEPS
    assert lines[0].startswith("[ 10%] 20/200 trials") and lines[-1].startswith("[100%] 200/200 trials")
    assert "best 1 ms" in lines[-1]
