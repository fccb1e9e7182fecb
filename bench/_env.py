"""Environment the benchmarks set before numpy loads OpenBLAS.

OpenBLAS misreads AVX-512 CPUs under some hypervisors and then picks slow kernels, so the benchmarks name the
core type (SkylakeX) -- but only where the CPU has AVX-512: on a CPU without it, the SkylakeX kernels stop numpy
at its first matmul with SIGILL. scripts/run_demo.sh does the same in shell.

    import _env
    _env.set_openblas_coretype()   # before `import numpy`
    print(_env.cpu_text(), _env.load_text())   # the CPU and its load, which every benchmark prints
    print(f"ratio autosched / numpy: 1.23; {_env.load_note()}")   # beside a ratio: the load, a warning if busy
"""
import os
import time


def _cpu_model_and_flags(cpuinfo="/proc/cpuinfo"):
    """(model name, set of flags) of the first CPU in `cpuinfo`; ("unknown CPU", empty set) where unreadable."""
    name, flags = "unknown CPU", set()
    try:
        with open(cpuinfo) as f:
            for line in f:
                if line.startswith("model name") and name == "unknown CPU":
                    name = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and not flags:
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return name, flags


def cpu_has_avx512f(cpuinfo="/proc/cpuinfo"):
    """True when the CPU flags in `cpuinfo` list avx512f; False when they do not or the file is unreadable."""
    return "avx512f" in _cpu_model_and_flags(cpuinfo)[1]


def cpu_text(cpuinfo="/proc/cpuinfo"):
    """The CPU's model name, hardware threads and vector extensions (AVX2, AVX-512 and the dot-product ones)."""
    name, flags = _cpu_model_and_flags(cpuinfo)
    vector = " ".join(sorted(f for f in flags if f.startswith(("avx2", "avx512", "avx_vnni", "amx"))))
    return f"{name}, {os.cpu_count()} hardware threads, {vector or 'no AVX2'}"


def load_text():
    """The 1-, 5- and 15-minute load averages, as a benchmark quotes them."""
    return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


# A ratio measured while the last minute's load average exceeded this share of the cores is flagged: other
# processes took turns on the cores the timed code ran on.
BUSY_SHARE = 0.7


def load_note(load=None, cores=None):
    """The last minute's load average for a line that prints a ratio: "load average 0.30 over the last minute,
    2 cores"; when it exceeds BUSY_SHARE x cores, followed by a warning line that the ratio is unreliable.
    load, cores: the figures (default: os.getloadavg()[0], os.cpu_count())."""
    load = os.getloadavg()[0] if load is None else load
    cores = (os.cpu_count() or 1) if cores is None else cores
    text = f"load average {load:.2f} over the last minute, {cores} cores"
    if load > BUSY_SHARE * cores:
        text += (f"\nwarning: the machine is busy (load average {load:.2f} > {BUSY_SHARE} x {cores} cores): the "
                 "times and ratios above may be off; run again on an idle machine")
    return text


def set_openblas_coretype(cpuinfo="/proc/cpuinfo"):
    """Sets OPENBLAS_CORETYPE=SkylakeX where the CPU has AVX-512 and the variable is not set yet; returns the
    value in effect (None: OpenBLAS detects the CPU itself)."""
    if "OPENBLAS_CORETYPE" not in os.environ and cpu_has_avx512f(cpuinfo):
        os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"
    return os.environ.get("OPENBLAS_CORETYPE")


def best_mean(fn, repeat=5, min_seconds=0.1):
    """The best of `repeat` means, each over as many calls as fill min_seconds (after a warm-up call): for calls
    too short to time one by one."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0, calls = time.perf_counter(), 0
        while time.perf_counter() - t0 < min_seconds:
            fn()
            calls += 1
        best = min(best, (time.perf_counter() - t0) / calls)
    return best


def best_of(fn, min_seconds, min_runs=3):
    """The fastest of at least min_runs calls of fn(), calling it for at least min_seconds (after a warm-up call)."""
    fn()
    times, start = [], time.perf_counter()
    while len(times) < min_runs or time.perf_counter() - start < min_seconds:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def torch_cuda():
    """PyTorch with a CUDA device and TF32 off (the GPU benchmarks' peer), or None."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch


def print_profile(name, net, feed, top):
    """The `top` tasks taking the most of a run, each with its groups' time together, their count, the time of
    one (each kernel finished before the next starts) and the schedule it runs (tuned, or the name of its
    default in search.default_schedules: expert, plain, ...), and the share of a run the kernels leave to
    launching and copying."""
    from autosched import _core
    from autosched.search.policy import default_schedules

    profile = net.network_profile(feed, number=3, repeat=1)
    by_task, schedule = {}, {}
    for info, seconds in profile.rows:
        desc = info.task.desc if info.task else info.name
        total, count = by_task.get(desc, (0.0, 0))
        by_task[desc] = (total + seconds, count + 1)
        if desc not in schedule and info.task is not None:  # which schedule the group runs
            key = _core.state_key(info.state)
            names = [name for name, state in default_schedules(info.task) if _core.state_key(state) == key]
            schedule[desc] = "tuned" if info.tuned else (names[0] if names else "?")
    kernels = sum(seconds for _, seconds in profile.rows)
    print(f"  {name}: {len(profile.rows)} groups, {kernels * 1e3:.3f} ms together, a run "
          f"{profile.run_seconds * 1e3:.3f} ms with each group waited for; the tasks taking the most:")
    for desc, (total, count) in sorted(by_task.items(), key=lambda kv: -kv[1][0])[:top]:
        print(f"    {total * 1e3:8.3f} ms  {100 * total / kernels:5.1f}%  {count:3d} x {total / count * 1e3:7.3f} ms  "
              f"{schedule.get(desc, '-'):10} {desc}")
