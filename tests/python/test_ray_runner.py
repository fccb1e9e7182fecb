"""RayRunner on a two-node Ray cluster on loopback: tuning gives records in LocalRunner's format and a correct
best schedule; the task scheduler measures two tasks at once into one log; an actor killed mid-measurement
loses no written record and the run finishes (its chunk goes to the other actor, or becomes a typed error once
retries are spent); a target of another architecture without an actor of it is a clear error; without the
`ray` package RayRunner names it.

The cluster runs in a child process (tests/python/ray_cluster_child.py) under a time limit; every process it
started (found by the cluster's own temporary directory, and their descendants) is ended afterwards, even when
the child failed or hung."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap

import pytest

import autosched as ans

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(os.path.dirname(ans.__file__))


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([PYTHON_DIR, HERE] + [p for p in [env.get("PYTHONPATH")] if p])
    env["RAY_AUTH_MODE"] = "disabled"  # a cluster on loopback for one test
    env.pop("RAY_ADDRESS", None)
    return env


def _processes():
    """{pid: (parent pid, command line)} of every process."""
    procs = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        procs[int(entry)] = (int(stat[stat.rindex(")") + 2:].split()[1]), cmdline)
    return procs


def _end_cluster(temp_dir):
    """SIGKILLs the processes of the cluster that uses temp_dir (named in their command lines) and their
    descendants (Ray's agents and workers rename themselves)."""
    procs = _processes()
    doomed = {pid for pid, (_, cmd) in procs.items() if temp_dir in cmd and pid != os.getpid()}
    grown = True
    while grown:
        more = {pid for pid, (parent, _) in procs.items() if parent in doomed} - doomed
        doomed |= more
        grown = bool(more)
    for pid in doomed:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


@pytest.fixture(scope="module")
def cluster_run():
    pytest.importorskip("ray", reason="ray is not installed (scripts/install_deps.sh installs it)")
    temp_dir = tempfile.mkdtemp(prefix="asray", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    out = tempfile.mkdtemp(prefix="asray-out")
    cmd = [sys.executable, os.path.join(HERE, "ray_cluster_child.py"), temp_dir, out,
           "tune", "kill", "retries_spent", "foreign_arch", "parallel"]
    try:
        proc = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=180,
                              start_new_session=True)
        lines = [l for l in proc.stdout.splitlines() if l.startswith("FOUND ")]
        assert proc.returncode == 0 and lines, (proc.returncode, proc.stdout[-3000:], proc.stderr[-5000:])
        yield json.loads(lines[-1][len("FOUND "):])
    finally:
        _end_cluster(temp_dir)
        shutil.rmtree(temp_dir, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)


def test_two_nodes_tune_to_local_runner_records_and_a_correct_best(cluster_run):
    found = cluster_run
    assert found["actor_nodes"] == 2  # one actor per node
    assert found["ray_trials"] == 16 and found["ray_records"] == 16
    assert found["ray_errors"] == {}
    assert found["same_format"] and found["same_tasks"]
    assert found["best_checked"] and found["best_is_best"]


def test_a_killed_actor_loses_no_written_record_and_the_run_finishes(cluster_run):
    found = cluster_run
    assert found["kill_trials"] == 24 and found["kill_records"] == 24
    assert found["kill_prefixes_kept"]
    # The actor died mid-chunk; the chunk went to the other actor, so nothing failed.
    assert len(found["kill_failures"]) == 1 and "lost" in found["kill_failures"][0]
    assert found["kill_errors"] == {}
    assert found["kill_victim_gone"]


def test_retries_spent_become_typed_errors_and_the_batch_goes_on(cluster_run):
    found = cluster_run
    assert found["spent_errors"] == ["none", "none", "runtime", "runtime"]
    assert all("measuring on Ray failed once" in m and "lost" in m for m in found["spent_messages"])


def test_no_actor_of_the_target_architecture_is_a_clear_error(cluster_run):
    error = cluster_run["foreign_error"]
    assert error is not None and error.startswith("ValueError")
    assert "aarch64" in error and "no Ray actor runs on aarch64" in error and "x86_64 x2" in error


def test_task_scheduler_measures_two_tasks_at_once_into_one_log(cluster_run):
    found = cluster_run
    assert found["parallel_trials"] == 40 and found["parallel_records"] == 40
    assert found["parallel_stop"].startswith("reached num_measure_trials")
    assert all(n > 0 for n in found["parallel_task_trials"]) and found["parallel_keys_in_log"] == 2
    assert found["parallel_overlaps"] > 0  # the two tasks' batches were on the actors at the same time


def test_parallel_tasks_need_ray_runners():
    task = ans.SearchTask(compute_dag=ans.ComputeDAG(_sumsq()), target="llvm")
    with pytest.raises(ValueError, match="parallel_tasks must be an int >= 1"):
        ans.TaskScheduler([task], parallel_tasks=0)
    with pytest.raises(ValueError, match="parallel_tasks > 1 needs RayRunner"):
        ans.TaskScheduler([task], parallel_tasks=2).tune(ans.TuningOptions(num_measure_trials=1, verbose=0))


def _sumsq():
    from autosched import te
    X = te.placeholder((8, 4), name="X")
    r = te.reduce_axis((0, 4), name="r")
    return [X, te.compute((8,), lambda i: te.sum(X[i, r] * X[i, r], axis=r), name="Y")]


def test_without_ray_installed_ray_runner_names_the_package():
    script = textwrap.dedent("""
        import sys
        sys.modules["ray"] = None   # import ray now raises ImportError, as when it is not installed
        import autosched as ans
        try:
            ans.RayRunner()
        except ImportError as err:
            print("ERROR", err)
    """)
    proc = subprocess.run([sys.executable, "-c", script], env=_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "ERROR RayRunner needs the Python package 'ray'" in proc.stdout
    assert "pip install ray" in proc.stdout


def test_bad_options_are_named():
    pytest.importorskip("ray", reason="ray is not installed (scripts/install_deps.sh installs it)")
    with pytest.raises(ValueError, match="resources"):
        ans.RayRunner(resources={"mali": 0})
    with pytest.raises(ValueError, match="num_actors"):
        ans.RayRunner(num_actors=0)
    with pytest.raises(ValueError, match="max_retries"):
        ans.RayRunner(max_retries=-1)
    with pytest.raises(ValueError, match="timeout"):
        ans.RayRunner(timeout=0)  # LocalRunner's options are checked as LocalRunner checks them
    # Usable where a LocalRunner is.
    assert isinstance(ans.TuningOptions(runner=ans.RayRunner()).runner, ans.RayRunner)


def test_target_architecture():
    from autosched.measure.ray_runner import target_arch
    assert target_arch("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a76") == "aarch64"
    assert target_arch("llvm -mtriple=arm64-apple-darwin") == "aarch64"
    assert target_arch("opencl -device=mali") is None
