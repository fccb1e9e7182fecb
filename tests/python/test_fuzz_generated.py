"""Differential fuzzer over generated DAGs: random tensor expressions (dag_generator.py) under random schedules.

Each case generates a DAG from its seed (reduce axes starting above 0, sum / prod / max / min, float16 /
float32 / int8 / int32 mixed through casts, integer division by values that may be 0 or -1, chains of
hundreds of terms, broadcasting, several stages), applies a random sequence of schedule steps (the step
makers of test_fuzz_library.py, with split factors from 1 to far beyond the extent), builds it and runs it
on inputs holding NaN, +-inf and the extreme integers. The result must equal what the reference evaluator
computes: integers exactly, floats within the dtype's tolerance with NaN exactly where the reference has
NaN. Integer division by zero gives 0 in both (docs/ir.md).

A DAG refused at creation with ValueError / TypeError is counted, as is a build refused with a ValueError
that names a stage or a tensor; anything else (another exception, a wrong result, a crash, a hang) is a
failure. The cases run in child processes, so a segfault, SIGFPE or hang is reported with the case's seed
and its reproduction (the DAG's source and dag.print_python_steps) instead of killing pytest.

CI runs AUTOSCHED_GEN_FUZZ_CASES cases (150) from AUTOSCHED_GEN_FUZZ_SEED (0); case N is seed N, so a case
reruns alone. A long run printing a summary (cases by outcome, refusals by reason, failures by kind with one
reproduction each), with AUTOSCHED_GEN_FUZZ_JOBS child processes at a time, AUTOSCHED_GEN_FUZZ_TIMEOUT
seconds before a case counts as a hang, and every outcome written as JSON to AUTOSCHED_GEN_FUZZ_RESULTS:
    AUTOSCHED_GEN_FUZZ_CASES=10000 AUTOSCHED_GEN_FUZZ_JOBS=2 python3 tests/python/test_fuzz_generated.py
One case in this process, printing its reproduction and outcome:
    python3 tests/python/test_fuzz_generated.py --case 1234
"""
import collections
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

import autosched as ans

import dag_generator
import test_fuzz_library as library
from schedule_helpers import compute_stages

GEN_FUZZ_CASES = int(os.environ.get("AUTOSCHED_GEN_FUZZ_CASES", "150"))
GEN_FUZZ_SEED = int(os.environ.get("AUTOSCHED_GEN_FUZZ_SEED", "0"))
GEN_FUZZ_JOBS = int(os.environ.get("AUTOSCHED_GEN_FUZZ_JOBS", "1"))
CASE_TIMEOUT = float(os.environ.get("AUTOSCHED_GEN_FUZZ_TIMEOUT", "60"))  # seconds before a case is a hang
CASES_PER_CHILD = 500
# Built states whose lowered loops run more than this many iterations are compiled but not run.
MAX_ITERATIONS = 3_000_000
# "abort:ID" or "hang:ID": the child aborts or hangs at case ID (the harness's own tests).
SELF_TEST = os.environ.get("AUTOSCHED_GEN_FUZZ_SELF_TEST", "")

HUGE_FACTORS = (2**31 - 1, 2**31, 2**32 + 1, 10**9, 2**62)


# ---- the schedule ----

def _factor(rng, extent):
    """A split length: mostly small, sometimes around the extent, now and then huge or invalid."""
    r = rng.random()
    if r < 0.7 or not extent:
        return rng.choice([1, 2, 3, 4, 5, 7, 8, 16])
    if r < 0.9:
        return rng.choice([extent, extent + 1, max(1, extent - 1), 2 * extent + 1, 64])
    if r < 0.97:
        return rng.choice(HUGE_FACTORS)
    return rng.choice([0, -1])


def _wide_split(s, rng, name):
    iters = s[name].iters
    it = rng.randrange(len(iters))
    lengths = [_factor(rng, iters[it].extent) for _ in range(rng.choice([1, 1, 2]))]
    return lambda: s.split(name, it, lengths, inner_to_outer=rng.random() < 0.85)


STEP_MAKERS = [(w, _wide_split if m is library._random_split else m) for w, m in library.STEP_MAKERS]


def random_step(s, rng):
    """A random step on a random compute stage of s, as a thunk; None when the draw does not apply."""
    name = rng.choice(compute_stages(s))
    if not s[name].iters:
        return None
    maker = rng.choices([m for _, m in STEP_MAKERS], [w for w, _ in STEP_MAKERS])[0]
    return maker(s, rng, name)


STEP_METHODS = {"split", "fuse", "reorder", "parallel", "vectorize", "unroll", "pragma", "compute_at",
                "compute_inline", "compute_root", "cache_write", "rfactor"}


class _Announcing:
    """The state as the step makers see it, announcing each step (as Python) before it runs: a step that
    kills the process is then known."""

    def __init__(self, state, announce):
        self._state, self._announce = state, announce

    def __getitem__(self, name):
        return self._state[name]

    def __getattr__(self, name):
        attr = getattr(self._state, name)
        if name not in STEP_METHODS:
            return attr

        def step(*args, **kwargs):
            call = ", ".join([repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()])
            self._announce(self._state, f"s.{name}({call})")
            return attr(*args, **kwargs)
        return step


def schedule(dag, rng, announce=lambda state, step: None):
    """A state after a random number of random steps; rejected steps must leave it as it was."""
    s = dag.get_init_state()
    seen = _Announcing(s, announce)
    for _ in range(rng.randint(0, 14)):
        step = random_step(seen, rng)
        if step is None:
            continue
        before = s.to_json()
        try:
            step()
        except ValueError as err:
            assert "step " in str(err) or "stage" in str(err), f"unclear message of a rejected step: {err}"
            assert s.to_json() == before, f"a rejected step changed the state: {err}"
    replayed = ans.State.from_json(dag, s.to_json())
    assert str(replayed) == str(s), "the state does not replay from its JSON"
    return s


# ---- one case ----

def reproduction(case, dag=None, state=None, pending=None):
    """Python that rebuilds the case: the DAG's source, the steps of the state and the step being tried."""
    lines = [f"# generated case {case.seed} ({', '.join(case.features)})",
             f"# rerun: python3 tests/python/test_fuzz_generated.py --case {case.seed}",
             "import autosched as ans", "from autosched import te", case.code, "dag = ans.ComputeDAG(tensors)"]
    if state is not None:
        lines += ["s = dag.get_init_state()", dag.print_python_steps(state).rstrip()]
    if pending is not None:
        lines.append(f"{pending}  # the step being applied")
    lines.append(f"# inputs = dag_generator.make_inputs(dag, {case.seed}); compare with ans.evaluate(dag, inputs)")
    return "\n".join(lines)


def _prefix(err, words=6):
    """The start of a message with names and numbers blanked: the reason a case counts under."""
    text = re.sub(r"'[^']*'", "'_'", str(err).splitlines()[0] if str(err) else "")
    return re.sub(r"-?\d+", "N", " ".join(text.split()[:words]))


def lowered_iterations(text):
    """Iterations of all loops of a lowered function (a loop runs once per iteration of its parents); an
    extent that is not a number counts as its largest number."""
    total, stack = 0, []  # stack: (indent, iterations of one pass through the loop's body)
    for line in text.splitlines():
        m = re.match(r"^( *)(?:\w+ )?for \((.*)\) \{$", line)
        if not m:
            continue
        indent = len(m.group(1))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        extent_text = m.group(2).split(", ", 2)[-1]
        numbers = [int(n) for n in re.findall(r"-?\d+", extent_text)]
        extent = max(numbers + [1])
        count = (stack[-1][1] if stack else 1) * max(extent, 0)
        total += count
        stack.append((indent, count))
    return total


def _run_built(dag, state, inputs, expected):
    """Builds and runs the state; returns the status of a case that did not fail."""
    try:
        mod = ans.build(dag, state)
    except ValueError as err:
        names = [st.name for st in state.stages] + [t.name for t in dag.tensors]
        assert any(n in str(err) for n in names), f"build refused with a message naming nothing: {err}"
        return "build refused", _prefix(err)
    if lowered_iterations(mod.lowered_ir()) > MAX_ITERATIONS:
        return "built, not run (too many iterations)", ""
    arrays, outputs, it = [], [], iter(inputs)
    for t in dag.tensors:
        if t.op_kind == "placeholder":
            arrays.append(next(it))
        else:
            outputs.append(dag_generator.np.zeros(tuple(t.shape), dtype=t.dtype))
            arrays.append(outputs[-1])
    mod(*arrays)
    for t, got, want in zip([t for t in dag.tensors if t.op_kind != "placeholder"], outputs, expected):
        dag_generator.compare(got, want, t.dtype, f"output '{t.name}' differs from the reference")
    return "matched the reference", ""


def run_case(case_id, announce=lambda repro: None):
    """One case in this process: {"status", "reason", "features"} and, for failures, "repro"."""
    case = dag_generator.generate(case_id)
    outcome = {"features": case.features}
    try:
        dag = ans.ComputeDAG(case.tensors())
    except (ValueError, TypeError) as err:
        return dict(outcome, status="refused at creation", reason=f"{type(err).__name__}: {_prefix(err)}")
    if case.invalid:
        return dict(outcome, status="failure", reason=f"a DAG with {case.invalid} was accepted",
                    repro=reproduction(case))
    state, pending = None, [reproduction(case, dag)]

    def announce_step(st, step):
        pending[0] = reproduction(case, dag, st, pending=step)
        announce(pending[0])

    try:
        state = schedule(dag, random.Random(case_id), announce_step)
        repro = reproduction(case, dag, state)
        announce(repro)
        inputs = dag_generator.make_inputs(dag, case_id)
        expected = ans.evaluate(dag, inputs)
        status, reason = _run_built(dag, state, inputs, expected)
        return dict(outcome, status=status, reason=reason)
    except Exception as err:  # noqa: BLE001 (every other exception of a valid DAG is a failure)
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        detail = str(err) if isinstance(err, AssertionError) else first
        repro = reproduction(case, dag, state) if state is not None else pending[0]
        return dict(outcome, status="failure", reason=f"{type(err).__name__}: {first}", detail=detail[:4000],
                    repro=repro)


# ---- child processes ----

def _child_main(first, end):
    """Runs cases [first, end), printing BEGIN / REPRO / DONE lines the parent reads."""
    for case_id in range(first, end):
        print(f"BEGIN {case_id}", flush=True)
        if SELF_TEST == f"abort:{case_id}":
            os.abort()
        if SELF_TEST == f"hang:{case_id}":
            time.sleep(3600)
        outcome = run_case(case_id, lambda repro: print(f"REPRO {case_id} {json.dumps(repro)}", flush=True))
        print(f"DONE {case_id} {json.dumps(outcome)}", flush=True)


def _read_new_lines(path, results, state):
    """Reads the lines the child wrote since the last call (whole lines only)."""
    with open(path) as f:
        f.seek(state["offset"])
        text = f.read()
    complete = text[:text.rfind("\n") + 1]
    state["offset"] += len(complete.encode())
    for line in complete.splitlines():
        kind, _, rest = line.partition(" ")
        case_id, _, payload = rest.partition(" ")
        if kind == "BEGIN":
            state["current"], state["since"], state["repro"] = int(case_id), time.monotonic(), None
        elif kind == "REPRO":
            state["repro"] = json.loads(payload)
        elif kind == "DONE":
            results[int(case_id)] = json.loads(payload)
            state["current"] = None


def _died(case_id, why, repro, detail=""):
    case = dag_generator.generate(case_id)
    return {"features": case.features, "status": "failure", "reason": why, "detail": detail,
            "repro": repro or reproduction(case) + "\n# (died before its schedule was printed)"}


def _run_child(first, end, results, env, timeout):
    """One child over [first, end); a case that crashes or hangs ends the child and is recorded."""
    with tempfile.NamedTemporaryFile("w+", suffix=".out") as out, \
            tempfile.NamedTemporaryFile("w+", suffix=".err") as err:
        cmd = [sys.executable, os.path.abspath(__file__), "--child", str(first), str(end)]
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env,
                                cwd=os.path.dirname(os.path.abspath(__file__)))
        state = {"current": None, "since": time.monotonic(), "repro": None, "offset": 0}
        code = None
        while code is None:
            try:
                code = proc.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                _read_new_lines(out.name, results, state)
                if time.monotonic() - state["since"] > timeout:
                    proc.kill()
                    proc.wait()
                    code = "hang"
        _read_new_lines(out.name, results, state)
        err.seek(0)
        stderr_tail = err.read()[-1500:]
    current = state["current"]
    if current is None:
        return
    if code == "hang":
        why = f"hang: no result after {timeout:.0f} s"
    elif code < 0:
        why = f"crash: killed by {signal.Signals(-code).name}"
    else:
        why = f"crash: the child exited with status {code}"
    results[current] = _died(current, why, state["repro"], stderr_tail)


def run_cases(first, count, env=None, timeout=CASE_TIMEOUT):
    """Outcomes of cases [first, first + count) by case id, run in child processes."""
    env = dict(os.environ if env is None else env)
    end, results = first + count, {}
    lock = threading.Lock()

    def worker(lo, hi):
        mine = {}
        while lo < hi:
            _run_child(lo, min(hi, lo + CASES_PER_CHILD), mine, env, timeout)
            done = [c for c in mine if lo <= c < hi]
            lo = max(done) + 1 if done else lo + 1  # nothing came back: skip the case rather than loop
        with lock:
            results.update(mine)

    jobs = max(1, min(GEN_FUZZ_JOBS, count))
    bounds = [first + count * j // jobs for j in range(jobs + 1)]
    threads = [threading.Thread(target=worker, args=(bounds[j], bounds[j + 1])) for j in range(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    missing = [c for c in range(first, end) if c not in results]
    for c in missing:
        results[c] = _died(c, "lost: the child never reported it", None)
    return results


# ---- the summary ----

def signature(outcome):
    """What groups failures: the reason with names and numbers blanked."""
    return _prefix(outcome["reason"], words=12)


def summary(results, first):
    by_status = collections.Counter(o["status"] for o in results.values())
    lines = [f"generated-DAG fuzz: {len(results)} cases from seed {first}"]
    for status, n in sorted(by_status.items()):
        lines.append(f"  {status}: {n}")
        if status in ("refused at creation", "build refused"):
            reasons = collections.Counter(o["reason"] for o in results.values() if o["status"] == status)
            lines += [f"      {m:5d}  {r}" for r, m in reasons.most_common()]
    failures = {c: o for c, o in sorted(results.items()) if o["status"] == "failure"}
    groups = collections.defaultdict(list)
    for c, o in failures.items():
        groups[signature(o)].append(c)
    if groups:
        lines.append("  failures by kind (count, cases):")
        for sig, cases in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            lines.append(f"      {len(cases):5d}  {sig}   cases {cases[:8]}")
    return "\n".join(lines), failures, groups


def _failure_report(failures, groups, shown=4):
    parts = []
    for sig, cases in sorted(groups.items(), key=lambda kv: -len(kv[1]))[:shown]:
        o = failures[cases[0]]
        repro = o["repro"] if len(o["repro"]) < 8000 else o["repro"][:3000] + "\n...\n" + o["repro"][-5000:]
        parts.append(f"==== case {cases[0]}: {o['reason']}\n{o.get('detail', '')[:1500]}\n{repro}")
    return "\n\n".join(parts)


def test_generated_dags_match_reference():
    results = run_cases(GEN_FUZZ_SEED, GEN_FUZZ_CASES)
    text, failures, groups = summary(results, GEN_FUZZ_SEED)
    print(text)
    assert not failures, f"{text}\n\n{_failure_report(failures, groups)}"


def test_generator_covers_the_dimensions():
    features = collections.Counter()
    for seed in range(400):
        features.update(dag_generator.generate(seed).features)
    wanted = ["reduce_min_nonzero", "sum_float16", "sum_float32", "sum_int32", "sum_int8", "prod_float32",
              "prod_int32", "max_float32", "min_float16", "max_int8", "where", "cast", "float_to_int",
              "int_div_const", "int_div_guarded", "int_div_any", "special_const", "nan_test", "guarded_load",
              "chain_300", "deep_120", "read_output"] + [f"invalid_{k}" for k in ("nested_reduce", "mixed_dtypes")]
    assert [w for w in wanted if not features[w]] == [], features
    assert dag_generator.generate(7).code == dag_generator.generate(7).code


def test_a_crashing_or_hanging_case_is_reported_with_its_reproduction():
    for kind, reason in (("abort", "crash: killed by SIGABRT"), ("hang", "hang: no result after 3 s")):
        results = run_cases(0, 3, env=dict(os.environ, AUTOSCHED_GEN_FUZZ_SELF_TEST=f"{kind}:1"), timeout=3)
        assert sorted(results) == [0, 1, 2]
        assert results[1]["status"] == "failure" and results[1]["reason"] == reason, results[1]
        assert "dag = ans.ComputeDAG(tensors)" in results[1]["repro"]
        assert all(results[c]["reason"] != reason for c in (0, 2))


def _main(argv):
    if argv[:1] == ["--child"]:
        _child_main(int(argv[1]), int(argv[2]))
    elif argv[:1] == ["--case"]:
        announced = [reproduction(dag_generator.generate(int(argv[1])))]
        outcome = run_case(int(argv[1]), announced.append)
        print(outcome.pop("repro", None) or announced[-1])
        print(json.dumps(outcome, indent=1))
    else:
        start = time.monotonic()
        results = run_cases(GEN_FUZZ_SEED, GEN_FUZZ_CASES)
        text, failures, groups = summary(results, GEN_FUZZ_SEED)
        print(text)
        print(f"  ({time.monotonic() - start:.0f} s)")
        if os.environ.get("AUTOSCHED_GEN_FUZZ_RESULTS"):  # every outcome, for a closer look
            with open(os.environ["AUTOSCHED_GEN_FUZZ_RESULTS"], "w") as f:
                json.dump(results, f)
        if failures:
            print("\n" + _failure_report(failures, groups, shown=len(groups)))
        sys.exit(1 if failures else 0)


if __name__ == "__main__":
    _main(sys.argv[1:])
