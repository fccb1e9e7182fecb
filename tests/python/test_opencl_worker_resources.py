"""OpenCL measurement that never runs the driver out of resources, on PoCL in CI: one worker measures hundreds of
candidates (2,000 with AUTOSCHED_TEST_OPENCL_WORKER_CANDIDATES=2000) with no error, no restart and flat host memory;
a device resource error replaces the worker instead of failing the candidates after it; the work-group maximum the
driver reports for a kernel is learned by the search; a round's measurements stop at the time budget;
``-device=gpu`` / ``-device=cpu`` pick a device by its type. Each case runs in a child process with a time limit."""
import os
import subprocess
import sys
import textwrap

import pytest

import autosched as ans
from autosched import te

pytestmark = pytest.mark.skipif(not ans.opencl.available(),
                                reason="no OpenCL platform on this machine (install pocl-opencl-icd)")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Children import the autosched this process imported: the tree's python/ in development, the installed
# package in CI (the tree's python/ holds no compiled extension there).
PACKAGE_PARENT = os.path.dirname(os.path.dirname(ans.__file__))
TARGET = os.environ.get("AUTOSCHED_TEST_OPENCL_MEASURE_TARGET", "opencl -device=pocl")
CANDIDATES = int(os.environ.get("AUTOSCHED_TEST_OPENCL_WORKER_CANDIDATES", "300"))


def _run(code, timeout, env=None, prelude="", with_stderr=False):
    """Runs prelude + `code` in a fresh Python (this tree's autosched) and returns its stdout (and its stderr, with
    `with_stderr`); fails with its output."""
    full_env = dict(os.environ, PYTHONPATH=PACKAGE_PARENT + os.pathsep + os.path.join(ROOT, "tests",
                                                                                                    "python"))
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env=full_env)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return (proc.stdout, proc.stderr) if with_stderr else proc.stdout


PRELUDE = f"""
import os, time
import autosched as ans
from autosched import te
from autosched import measure as am
from autosched import te

TARGET = {TARGET!r}

def worker_pids():
    me = os.getpid()
    pids = []
    for t in os.listdir(f"/proc/{{me}}/task"):
        try:
            pids += [int(p) for p in open(f"/proc/{{me}}/task/{{t}}/children").read().split()]
        except OSError:
            pass
    return pids

def rss_kib(pid):
    for line in open(f"/proc/{{pid}}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])

def tiny_task(n=256):
    x = te.placeholder((n,), name="x")
    y = te.compute((n,), lambda i: x[i] * 2.0 + 1.0, name="y")
    dag = ans.ComputeDAG([x, y])
    return ans.SearchTask(compute_dag=dag, target=ans.Target(TARGET)), y

def bound_states(task, y, factors):
    states = []
    for f in factors:
        s = task.compute_dag.get_init_state()
        outer, inner = s.split(y, s[y].iters[0], [f])
        s.bind(y, outer, "blockIdx.x")
        s.bind(y, inner, "threadIdx.x")
        states.append(s)
    return states
"""


def test_one_worker_measures_many_candidates_without_resource_errors_and_flat_memory():
    # Every candidate builds its own program, kernels and buffers in the worker and releases them after its run;
    # the worker keeps one context and queue. A tiny kernel, one run per candidate: the machinery is measured.
    out = _run(f"""
        task, y = tiny_task()
        states = bound_states(task, y, (1, 2, 4, 8, 16, 32, 64, 128))
        builder = am.LocalBuilder(n_parallel=1, timeout=60)
        runner = am.LocalRunner(number=1, repeat=1, min_repeat_ms=0, timeout=60)
        total, batch, start_rss, rss = {CANDIDATES}, 100, None, None
        t0 = time.monotonic()
        done = 0
        while done < total:
            n = min(batch, total - done)
            results = am.measure(task, [states[(done + k) % len(states)] for k in range(n)], builder, runner)
            bad = [(r.error, r.error_msg) for r in results if r.error != "none"]
            assert not bad, bad[:3]
            done += n
            (pid,) = worker_pids()
            rss = rss_kib(pid)
            if done <= 2 * batch:  # the first two batches warm the worker's context, compiler and allocator
                start_rss = max(start_rss or 0, rss)
        assert runner._measurer.processes_started == 1, runner._measurer.processes_started
        print("candidates", done, "rss_kib", start_rss, rss, "seconds", round(time.monotonic() - t0, 1))
    """, timeout=600, prelude=PRELUDE)
    words = out.split()
    start_rss, end_rss = int(words[3]), int(words[4])
    # Flat: a program, its kernels and buffers kept per candidate would add far more over hundreds of them.
    assert end_rss - start_rss < 16 * 1024, out


def test_a_resource_error_replaces_the_worker_and_the_candidates_after_it_measure():
    # The injected fault makes the worker's device run out of host memory at that build and every later one (as a
    # driver does); the worker is replaced, the candidate is tried once more in a fresh worker, then fails alone.
    out = _run("""
        task, y = tiny_task()
        states = bound_states(task, y, (1, 2, 4, 8, 16, 32, 64, 128, 3, 5, 6, 7))
        builder = am.LocalBuilder(n_parallel=1, timeout=60)
        runner = am.LocalRunner(number=1, repeat=1, min_repeat_ms=0, timeout=60,
                                inject_faults={"resource_error": 0.2}, fault_seed=3)
        results = am.measure(task, states, builder, runner)
        errors = [r.error for r in results]
        print("errors", ",".join(errors))
        print("started", runner._measurer.processes_started)
        for r in results:
            if r.error != "none":
                print("msg", r.error_msg)
    """, timeout=300, prelude=PRELUDE)
    lines = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    errors = lines["errors"].split(",")
    faulty = [e for e in errors if e != "none"]
    assert 1 <= len(faulty) <= 4, errors
    assert set(faulty) == {"compile"}, errors
    assert "CL_OUT_OF_HOST_MEMORY" in lines["msg"], out
    # one worker to start with, then two per faulty candidate (its first try and its retry each end a worker)
    assert int(lines["started"]) == 1 + 2 * len(faulty), out


LEARNED_LIMIT_RUN = """
    import json
    from autosched import ops
    data = te.placeholder((1, 8, 10, 10), name="data")
    kernel = te.placeholder((16, 8, 3, 3), name="kernel")
    dag = ans.ComputeDAG([data, kernel, ops.conv2d_nchw(data, kernel, stride=1, padding=1)])
    hw = ans.HardwareParams(target=TARGET, max_threads_per_block=1024)
    task = ans.SearchTask(compute_dag=dag, target=ans.Target(TARGET), hardware_params=hw)
    log = os.path.join(os.environ["OUT_DIR"], "log.json")
    rounds = []
    def count(policy, inputs, results):
        rounds.append(len(inputs))
    runner = am.LocalRunner(number=1, repeat=1, min_repeat_ms=0, timeout=60)
    result = task.tune(ans.TuningOptions(num_measure_trials=int(os.environ["TRIALS"]), num_measures_per_round=16,
                                         runner=runner, measure_callbacks=[ans.RecordToFile(log), count], verbose=0))

    def work_items(state):  # the largest work group of the state's kernels
        bounded = dag.infer_bound(state)
        sizes = [1]
        for st in bounded.stages:
            threads = [it.extent for it in st.iters if it.annotation == "threadIdx.x"]
            sizes.append(threads[0] if threads else 1)
        return max(sizes)

    rows = []
    for line in open(log):
        rec = json.loads(line)
        state = ans.State.from_json(dag, json.dumps(rec["state"]))
        rows.append({"items": work_items(state), "limit": rec["task"]["hardware_params"]["max_threads_per_block"],
                     "learned": rec["result"].get("kernel_max_threads", 0),
                     "refused": "exceeds the device's limits" in rec["result"]["error_msg"]})
    inp, res = ans.load_best_record(log, task.workload_key, task.target)
    replayed = ans.State.from_json(dag, inp.state.to_json())
    print(json.dumps({"rows": rows, "rounds": rounds, "resumed": result.resumed_trials, "trials": result.trials,
                      "best_key": inp.task.workload_key == task.workload_key, "best": res.mean_cost}))
"""


def test_the_kernel_work_group_maximum_reported_after_build_is_learned_by_the_search(tmp_path):
    # PoCL runs every kernel with the device's maximum: the variable caps what the driver reports, as a kernel's
    # register use does on a GPU. The task allows 1024 work items per group; the kernels run at most 64. A padded
    # convolution: the padding's kernel is bound by thread-bind's rule for plain stages, the convolution's by its
    # tiles. The first search round's candidates above 64 are refused; from the round after on, no candidate
    # (sampled, mutated or carried over from the round before) has more than 64 work items, none is refused, and
    # every record carries the limit in force when it was measured: 1024 up to the round that taught it, 64
    # after. The records stay the task's (its workload key: the best loads and replays); a session resuming the
    # log takes all of them, learns the limit again from them, and proposes nothing above it.
    import json
    env = {"AUTOSCHED_TEST_OPENCL_KERNEL_WORK_GROUP_LIMIT": "64", "OUT_DIR": str(tmp_path)}
    first = json.loads(_run(LEARNED_LIMIT_RUN, timeout=600, prelude=PRELUDE, env=dict(env, TRIALS="48")))
    rows, rounds = first["rows"], first["rounds"]
    assert sum(rounds) == len(rows) == first["trials"], first
    refused = [i for i, r in enumerate(rows) if r["refused"]]
    assert refused, f"no candidate above the kernel's maximum was proposed at all: {first}"
    ends = [sum(rounds[:k + 1]) for k in range(len(rounds))]
    taught = next(end for end in ends if end > refused[0])  # the first record of the round after the refusal
    assert all(r["learned"] in (0, 64) for r in rows), rows
    assert [r["limit"] for r in rows[:taught]] == [1024] * taught, rows
    after = rows[taught:]
    assert after, f"nothing measured after the limit was learned: {first}"
    assert all(r["limit"] == 64 and r["items"] <= 64 and not r["refused"] for r in after), after
    assert first["best_key"] and first["best"] > 0, first
    # Resumed: every record is the task's, the limit is learned from them before the first new round.
    second = json.loads(_run(LEARNED_LIMIT_RUN, timeout=600, prelude=PRELUDE, env=dict(env, TRIALS="64")))
    assert second["resumed"] == len(rows), second
    new = second["rows"][len(rows):]
    assert new and all(r["limit"] == 64 and r["items"] <= 64 and not r["refused"] for r in new), new


def _is_pocl():
    return any("Portable Computing Language" in d["platform"] for d in ans.opencl.devices())


@pytest.mark.skipif(not _is_pocl(), reason="PoCL's POCL_EXTRA_BUILD_FLAGS makes its compiler reject the kernel")
def test_the_device_compilers_messages_go_into_the_candidates_error_not_the_terminal():
    # A macro that PoCL adds to every build breaks the kernel's name: its compiler rejects the program and prints
    # "1 error generated." on the worker's stderr (NVIDIA's prints on stdout). The message belongs to the
    # candidate's error, not to the terminal of the tuning session.
    out, err = _run("""
        task, y = tiny_task()
        states = bound_states(task, y, (32, 64))
        builder = am.LocalBuilder(n_parallel=1, timeout=60)
        runner = am.LocalRunner(number=1, repeat=1, min_repeat_ms=0, timeout=60)
        for r in am.measure(task, states, builder, runner):
            print("RESULT", r.error, repr(r.error_msg))
    """, timeout=300, prelude=PRELUDE, with_stderr=True,
        env={"POCL_EXTRA_BUILD_FLAGS": "-Ddefault_function_kernel0=1"})
    results = [line for line in out.splitlines() if line.startswith("RESULT ")]
    assert len(results) == 2, out
    for line in results:
        assert line.startswith("RESULT compile ") and "printed by the device's compiler" in line, line
        assert "1 error generated." in line, line
    others = "\n".join(line for line in out.splitlines() if not line.startswith("RESULT ")) + err
    assert "error generated" not in others, others


def test_a_rounds_measurements_stop_at_the_time_budget(tmp_path):
    # Each candidate sleeps 0.5 s before its run (cooldown_s): a round of 32 would take 16 s; the budget of 3 s
    # ends it within a candidate or two of the budget, and the states left are neither recorded nor counted.
    out = _run("""
        task, y = tiny_task()
        log = os.path.join(os.environ["OUT_DIR"], "budget.json")
        runner = am.LocalRunner(number=1, repeat=1, min_repeat_ms=0, timeout=60, cooldown_s=0.5)
        t0 = time.monotonic()
        result = task.tune(ans.TuningOptions(num_measure_trials=64, num_measures_per_round=32, time_budget_s=3,
                                             runner=runner, measure_callbacks=[ans.RecordToFile(log)], verbose=0))
        took = time.monotonic() - t0
        lines = sum(1 for _ in open(log))
        print("took", round(took, 2), "trials", result.trials, "records", lines, "stop", result.stop_reason)
    """, timeout=300, prelude=PRELUDE, env={"OUT_DIR": str(tmp_path)})
    words = out.split()
    took, trials, records = float(words[1]), int(words[3]), int(words[5])
    assert "time budget" in out, out
    assert trials == records and 1 <= trials < 20, out
    # within a candidate (cooldown 0.5 s + its build and run) and the session's setup of the budget's end
    assert took < 3 + 5, out


def test_device_gpu_and_cpu_pick_a_device_by_its_type():
    out = _run("""
        import autosched as ans
        for target in ("opencl -device=cpu", "opencl -device=gpu"):
            try:
                hw = ans.opencl.hardware_params(target)
                print(target, "->", hw.max_threads_per_block)
            except ValueError as e:
                print(target, "error:", e)
    """, timeout=120)
    lines = {line.split(" ", 2)[1]: line for line in out.splitlines()}
    devices = ans.opencl.devices()
    for kind, key in (("cpu", "is_cpu"), ("gpu", "is_gpu")):
        line = lines[f"-device={kind}"]
        first = next((d for d in devices if d[key]), None)
        if first is not None:
            assert line.endswith(f"-> {first['max_work_group_size']}"), out
        else:
            # e.g. PoCL alone: no GPU here; the error says so and names every device found
            assert f"no OpenCL device here is a {kind.upper()}" in line, out
            for d in devices:
                assert f"[{d['index']}] {d['name']}" in line, out


def test_the_peak_of_an_opencl_target_follows_the_device_it_selects():
    from autosched import tune as tuner
    x = te.placeholder((64, 64), name="x")
    y = te.compute((64, 64), lambda i, j: x[i, j] * 2.0, name="y")
    dag = ans.ComputeDAG([x, y])
    # A GPU family without a clock, and no such device here: no estimate, and the reason names the way to give one.
    unclocked = ans.SearchTask(compute_dag=dag, target="opencl -device=mali",
                               hardware_params=ans.HardwareParams(num_cores=4, clock_mhz=0))
    value, why = tuner.peak_gflops(unclocked, describe=True)
    assert value is None and "clock_mhz" in why and "peak_gflops" in why
    clocked = ans.SearchTask(compute_dag=dag, target="opencl -device=mali",
                             hardware_params=ans.HardwareParams(num_cores=4, clock_mhz=1000))
    assert tuner.peak_gflops(clocked) == pytest.approx(4 * 64 * 2 * 1.0)
    # -device=cpu, and a target that selects a CPU device of this machine, take the CPU formula.
    devices = ans.opencl.devices()
    if any(d["is_cpu"] for d in devices):
        value, how = tuner.peak_gflops(ans.SearchTask(compute_dag=dag, target="opencl -device=cpu"), describe=True)
        assert value and "cores x" in how, how
        first_cpu = next(d for d in devices if d["is_cpu"])
        by_index = ans.SearchTask(compute_dag=dag, target=f"opencl -device={first_cpu['index']}")
        assert "cores x" in tuner.peak_gflops(by_index, describe=True)[1]
