"""RayRunner: measure candidates on the devices of a Ray cluster, one Ray actor per device.

    import ray
    ray.init(address="auto")                        # or nothing: RayRunner calls ray.init() (RAY_ADDRESS, or a
                                                    # local instance)
    runner = ans.RayRunner(resources={"mali": 1})   # an actor per {"mali": 1} the cluster offers
    task.tune(ans.TuningOptions(num_measure_trials=1000, runner=runner,
                                measure_callbacks=[ans.RecordToFile("net.json")]))

Roadmap. A RayRunner is a LocalRunner (it takes the same measurement options: timeout, number, repeat, ...,
inject_faults) whose measurements happen elsewhere, so it goes wherever a LocalRunner does
(``TuningOptions(runner=...)``, the task scheduler's per-task runners, ``measure``):

- Devices: each actor (``_DeviceActor``) reserves ``resources`` of one device (default: one actor per alive
  node, reserving one CPU there) and holds the same C++ supervisor LocalRunner uses (``_core.LocalMeasurer``):
  worker processes on its node build the candidates in parallel, then verify, check plausibility and time them
  one at a time, with typed errors and restarts of crashed or hung workers. An actor runs one call at a time,
  so timings on one device never overlap.
- Driver: the search, the cost model and the record log stay in the process that tunes. ``measure`` (the
  ``_RayMeasurer`` this runner hands to it) splits a batch into chunks, one per eligible actor (or of
  ``batch_size``), sends the task as JSON and the states as their steps, and gives each actor that finishes
  the next chunk. Results come back as MeasureResult JSON, in the order of the states.
- Faults: an actor that dies (its process killed, its node gone) or passes its deadline (the chunk's
  worst-case build and run time plus ``deadline_slack_s``) is dropped; its chunk goes to another actor, at
  most ``max_retries`` times, then its candidates are ``runtime`` errors naming the failures. Lost actors are
  replaced, where the cluster has room, at the start of the next batch. Nothing is written by the actors, so
  no record already written can be lost.
- Architectures: an llvm target with ``-mtriple=aarch64-...`` is measured only by actors whose machine is of
  that architecture (``platform.machine()``); without any, measuring raises ValueError naming the
  architectures the actors have. Other targets go to every actor.

Ray's address and authentication come from Ray's own configuration (``ray.init(address=...)`` or RAY_ADDRESS
before the first measurement); RayRunner never names an address.
"""
import collections
import math
import os
import platform
import threading
import time
import warnings

from .. import _core
from .local import LocalRunner, worker_path

__all__ = ["RayRunner"]

# The architecture names that mean the same machine (LLVM triples and platform.machine() differ).
_ARCH_ALIASES = {"arm64": "aarch64", "amd64": "x86_64", "x86-64": "x86_64", "x64": "x86_64"}


def _import_ray():
    try:
        import ray
    except ImportError as err:
        raise ImportError("RayRunner needs the Python package 'ray', which is not installed: "
                          "pip install 'autosched[ray]' (or pip install ray)") from err
    return ray


def _arch(name):
    name = name.lower()
    return _ARCH_ALIASES.get(name, name)


def target_arch(target):
    """The CPU architecture an llvm target's code runs on (its -mtriple's, else this machine's); None for targets
    whose code is compiled on the device (opencl)."""
    text = target if isinstance(target, str) else target.text
    if not _core.Target(text).runs_in_host_process:
        return None
    words = text.split("#")[0].split()
    for word in words[1:]:
        if word.startswith("-mtriple="):
            return _arch(word[len("-mtriple="):].split("-")[0])
    return _arch(platform.machine())


class _DeviceActor:
    """Measures candidates on the device this actor holds (wrapped by ray.remote in RayRunner)."""

    def __init__(self, options):
        builder = _core.LocalBuilder(**options["builder"])
        runner = _core.RunnerOptions(**options["runner"])
        self._measurer = _core.LocalMeasurer(builder, runner, worker_path())
        self._task_json = None
        self._task = None

    def info(self):
        import ray
        return {"machine": _arch(platform.machine()), "pid": os.getpid(), "host": platform.node(),
                "node_id": ray.get_runtime_context().get_node_id()}

    def measure(self, task_json, steps):
        """MeasureResult JSON per state of `steps` (their steps JSON), measured on this device."""
        if task_json != self._task_json:
            self._task = _core.SearchTask._core_from_json(task_json)
            self._task_json = task_json
        states, results = [], [None] * len(steps)
        for i, text in enumerate(steps):
            try:
                states.append((i, _core.LoopState.from_json(self._task.compute_dag, text)))
            except ValueError as err:
                results[i] = _core.MeasureResult(error="instantiation", error_msg=str(err)).to_json()
        measured = self._measurer.measure(self._task, [s for _, s in states]) if states else []
        for (i, _), res in zip(states, measured):
            results[i] = res.to_json()
        return results


class _Actor:
    """The driver's view of one actor: its handle, what it runs on, whether it is busy or lost."""

    def __init__(self, handle, info):
        self.handle = handle
        self.info = info
        self.busy = False
        self.alive = True

    def __repr__(self):
        return f"actor pid {self.info['pid']} on {self.info['host']} ({self.info['machine']})"


class RayRunner(LocalRunner):
    """Verifies and times candidates on Ray actors, one per device (see the module docstring).

    resources: the Ray resources of one device, which each actor reserves (e.g. {"mali": 1}, {"CPU": 4});
        None: one actor per alive node, reserving one CPU there.
    num_actors: at most this many actors (None: as many devices as the cluster offers).
    batch_size: candidates per call to an actor (None: a batch split evenly over the eligible actors).
    max_retries: how many times a chunk whose actor died goes to another actor before its candidates are
        recorded as ``runtime`` errors.
    actor_start_timeout_s: seconds to wait for actors to be placed and started.
    deadline_slack_s: added to a chunk's worst case (candidates x (build timeout + run timeout)) before its
        actor is taken for hung and killed.
    Every other keyword is LocalRunner's (timeout, number, repeat, min_repeat_ms, ..., inject_faults) and
    applies on each device.
    """

    measures_here = False
    RESTART_AFTER_S = 300  # after a start that left devices without an actor, wait this long to try again

    def __init__(self, resources=None, num_actors=None, batch_size=None, max_retries=2,
                 actor_start_timeout_s=60, deadline_slack_s=30, **local_options):
        self._ray = _import_ray()
        super().__init__(**local_options)
        if resources is not None:
            if not isinstance(resources, dict) or not resources:
                raise ValueError(f"RayRunner: resources must be a non-empty dict of Ray resources, got {resources!r}")
            for name, amount in resources.items():
                if not isinstance(name, str) or isinstance(amount, bool) or not isinstance(amount, (int, float)) \
                        or not amount > 0:
                    raise ValueError(f"RayRunner: resources[{name!r}] must be a positive number, got {amount!r}")
        self.resources = dict(resources) if resources is not None else None
        for name, value, low in (("num_actors", num_actors, 1), ("batch_size", batch_size, 1),
                                 ("max_retries", max_retries, 0)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < low):
                raise ValueError(f"RayRunner: {name} must be an int >= {low}, got {value!r}")
        if max_retries is None:
            raise ValueError("RayRunner: max_retries must be an int >= 0, got None")
        for name, value in (("actor_start_timeout_s", actor_start_timeout_s), ("deadline_slack_s", deadline_slack_s)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"RayRunner: {name} must be a positive number, got {value!r}")
        self.num_actors = num_actors
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.actor_start_timeout_s = float(actor_start_timeout_s)
        self.deadline_slack_s = float(deadline_slack_s)
        self._actors = []
        self._actor_options = None
        self._lock = threading.Lock()        # the actor list and the actors' busy / alive flags
        self._start_lock = threading.Lock()  # one thread starts actors at a time
        self._next_start = 0.0               # monotonic time before which no actor is started again
        self.failures = []                 # (actor, chunk size, why) of every actor lost while measuring

    # ---- LocalRunner's interface to measure() ----
    def _measurer_for(self, builder):
        options = {"builder": builder.to_dict(), "runner": _core.RunnerOptions(**self.to_dict()).to_dict()}
        self._measurer = _RayMeasurer(self, options)
        return self._measurer

    def close(self):
        """Ends the actors (and with them their worker processes)."""
        with self._lock:
            actors, self._actors = self._actors, []
        for actor in actors:
            try:
                self._ray.kill(actor.handle, no_restart=True)
            except Exception:  # noqa: BLE001 -- an actor already gone is what close wants
                pass
        self._measurer = None

    def __del__(self):
        try:
            if self._actors and self._ray.is_initialized():
                self.close()
        except Exception:  # noqa: BLE001 -- interpreter shutdown
            pass

    def __repr__(self):
        return (f"RayRunner(resources={self.resources}, num_actors={self.num_actors}, batch_size={self.batch_size},"
                f" max_retries={self.max_retries}, actors={len(self.actors)})")

    # ---- actors ----
    @property
    def actors(self):
        """The live actors: objects with .handle (the Ray actor) and .info (machine, pid, host, node_id)."""
        return [a for a in self._actors if a.alive]

    def _connect(self):
        if not self._ray.is_initialized():
            # No address here: ray.init() takes it from RAY_ADDRESS or a cluster started on this machine, and
            # otherwise starts a local instance.
            self._ray.init(include_dashboard=False, logging_level="warning")

    def _wanted(self):
        """How many devices the cluster offers (each actor's resources fit a node), capped at num_actors."""
        nodes = [n for n in self._ray.nodes() if n.get("Alive")]
        if self.resources is None:
            count = len(nodes)
        else:
            count = 0
            for node in nodes:
                have = node.get("Resources", {})
                count += min(int(have.get(k, 0) // v) for k, v in self.resources.items())
        return count if self.num_actors is None else min(count, self.num_actors)

    def _actor_class(self):
        ray = self._ray
        return ray.remote(_DeviceActor)

    def _start_options(self, node_id=None):
        opts = {"max_restarts": 0, "max_concurrency": 1}
        resources = dict(self.resources or {"CPU": 1})
        opts["num_cpus"] = resources.pop("CPU", 0)
        if "GPU" in resources:
            opts["num_gpus"] = resources.pop("GPU")
        if resources:
            opts["resources"] = resources
        if node_id is not None:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
            opts["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id, soft=False)
        else:
            opts["scheduling_strategy"] = "SPREAD"
        return opts

    def _ensure_actors(self, options):
        """Starts actors up to the devices the cluster offers (all anew when the options changed). Other
        threads' batches go on meanwhile; after a start that left devices without an actor, the next try
        waits RESTART_AFTER_S."""
        ray = self._ray
        with self._start_lock:
            with self._lock:
                if options != self._actor_options:
                    for actor in self._actors:
                        ray.kill(actor.handle, no_restart=True)
                    self._actors = []
                    self._actor_options = options
                    self._next_start = 0.0
                self._actors = [a for a in self._actors if a.alive]
                have = list(self._actors)
            if have and time.monotonic() < self._next_start:
                return
            self._connect()
            missing = self._wanted() - len(have)
            if missing <= 0:
                return
            cls = self._actor_class()
            if self.resources is None:
                used = {a.info["node_id"] for a in have}
                nodes = [n["NodeID"] for n in ray.nodes() if n.get("Alive") and n["NodeID"] not in used]
                handles = [cls.options(**self._start_options(node)).remote(options) for node in nodes[:missing]]
            else:
                handles = [cls.options(**self._start_options()).remote(options) for _ in range(missing)]
            pending = {h.info.remote(): h for h in handles}
            deadline = time.monotonic() + self.actor_start_timeout_s
            problems, started = [], []
            while pending and time.monotonic() < deadline:
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=max(0.0, deadline - time.monotonic()))
                for ref in ready:
                    handle = pending.pop(ref)
                    try:
                        started.append(_Actor(handle, ray.get(ref)))
                    except ray.exceptions.RayError as err:
                        problems.append(_first_line(err))
            for handle in pending.values():
                ray.kill(handle, no_restart=True)
            if pending:
                problems.append(f"{len(pending)} actors were not placed within {self.actor_start_timeout_s:g} s")
            with self._lock:
                self._actors += started
                if problems:
                    self._next_start = time.monotonic() + self.RESTART_AFTER_S
                if problems and not self._actors:
                    raise RuntimeError(f"RayRunner: no actor could start with resources "
                                       f"{self.resources or {'CPU': 1}}: {'; '.join(problems)}")
            if problems:
                warnings.warn(f"RayRunner: {len(problems)} problems starting actors (next try in "
                              f"{self.RESTART_AFTER_S:g} s): {'; '.join(problems)}", RuntimeWarning, stacklevel=4)

    def _take_idle(self, eligible):
        with self._lock:
            for actor in eligible:
                if actor.alive and not actor.busy:
                    actor.busy = True
                    return actor
        return None

    def _release(self, actor, lost=False):
        with self._lock:
            actor.busy = False
            if lost:
                actor.alive = False

    def _eligible(self, task):
        arch = target_arch(task.target)
        actors = self.actors
        eligible = [a for a in actors if arch is None or a.info["machine"] == arch]
        if not eligible:
            have = collections.Counter(a.info["machine"] for a in actors)
            listed = ", ".join(f"{m} x{n}" for m, n in sorted(have.items())) or "none"
            raise ValueError(f"RayRunner: target '{task.target.text}' runs on {arch}, but no Ray actor runs on "
                             f"{arch} (actors: {listed}); start a Ray node of that architecture with the "
                             "runner's resources")
        return eligible

    # ---- measuring ----
    def _measure(self, task, core_states, options):
        ray = self._ray
        self._ensure_actors(options)
        eligible = self._eligible(task)
        task_json = _core.SearchTask.to_json(task)
        steps = [s.to_json() for s in core_states]
        n = len(steps)
        results = [None] * n
        if n == 0:
            return []
        size = self.batch_size or math.ceil(n / len(eligible))
        todo = collections.deque((list(range(i, min(i + size, n))), []) for i in range(0, n, size))
        runner = options["runner"]
        per_candidate = options["builder"]["timeout"] + runner["timeout"] + runner["cooldown_s"]
        inflight = {}  # object ref -> (actor, chunk, failures so far, deadline)
        try:
            self._dispatch(task, task_json, steps, results, todo, inflight, eligible, per_candidate)
        finally:
            # Interrupted (Ctrl-C): the actors finish their chunk on their own; calls queue behind it, one at
            # a time, so no timing overlaps.
            for actor, *_ in inflight.values():
                self._release(actor)
        return results

    def _dispatch(self, task, task_json, steps, results, todo, inflight, eligible, per_candidate):
        ray = self._ray
        while todo or inflight:
            while todo:
                actor = self._take_idle(eligible)
                if actor is None:
                    break
                chunk, failures = todo.popleft()
                ref = actor.handle.measure.remote(task_json, [steps[i] for i in chunk])
                inflight[ref] = (actor, chunk, failures, time.monotonic() + len(chunk) * per_candidate
                                 + self.deadline_slack_s)
            if not inflight:
                if not any(a.alive for a in eligible):
                    # Every eligible actor is lost: the rest of the batch fails, typed, and the session goes on.
                    for chunk, failures in todo:
                        self._fail(results, chunk, failures + ["no actor left to measure on"])
                    todo.clear()
                    break
                time.sleep(0.02)  # the actors are busy with another task's batch (task-level parallelism)
                continue
            ready, _ = ray.wait(list(inflight), num_returns=1, timeout=0.2)
            for ref in ready:
                actor, chunk, failures, _ = inflight.pop(ref)
                try:
                    texts = ray.get(ref)
                except ray.exceptions.RayTaskError as err:
                    self._release(actor)
                    raise RuntimeError(f"RayRunner: measuring on {actor} failed: {err}") from err
                except ray.exceptions.RayError as err:
                    self._lost(actor, chunk, failures, f"{actor} was lost ({_first_line(err)})", todo, results)
                    continue
                self._release(actor)
                for i, text in zip(chunk, texts):
                    results[i] = _core.MeasureResult.from_json(text)
            now = time.monotonic()
            for ref in [r for r, v in inflight.items() if v[3] < now]:
                actor, chunk, failures, _ = inflight.pop(ref)
                ray.kill(actor.handle, no_restart=True)
                self._lost(actor, chunk, failures, f"{actor} passed its deadline and was killed", todo, results)

    def _lost(self, actor, chunk, failures, why, todo, results):
        self._release(actor, lost=True)
        self.failures.append((repr(actor), len(chunk), why))
        failures = failures + [why]
        if len(failures) > self.max_retries:
            self._fail(results, chunk, failures)
        else:
            todo.append((chunk, failures))

    @staticmethod
    def _fail(results, chunk, failures):
        times = "once" if len(failures) == 1 else f"{len(failures)} times"
        message = f"measuring on Ray failed {times}: " + "; ".join(failures)
        for i in chunk:
            results[i] = _core.MeasureResult(error="runtime", error_msg=message, timestamp=time.time())


class _RayMeasurer(_core.Measurer):
    """The runner with the options of one builder, as measure() and a tuning round (the core's Measurer
    interface, cpp/measure/measurer.h) call it: a round is the same core call as with a LocalRunner."""

    def __init__(self, runner, options):
        super().__init__()
        self._runner = runner
        self._options = options

    def measure(self, task, states, deadline_s=None):
        return self._runner._measure(task, states, self._options)


def _first_line(err):
    lines = str(err).strip().splitlines()
    return lines[0][:300] if lines else type(err).__name__
