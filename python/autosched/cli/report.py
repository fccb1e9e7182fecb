"""What the command line prints about a tune and a run: one line before and after `tune` (the session prints
the table and the summary between them), the latency line, the profile table and the comparison of `run`.
Durations are printed in one unit per column or sentence (core/text.py), task names with their shape whole.

    print(tune_opening(tasks, weights, "model.json"))   # "Tuning 6 tasks (8.04 MFLOP per run); records go to ..."
    print(latency_line(times, number, "llvm"))          # "latency: 191.3 us best, 195.0 us median of ..."
    print(profile_table(net, arrays, number, repeat))   # a row per group: alone, in the network, share
    print(compare_line(worst, ort_seconds, best))       # "onnxruntime: outputs match ...; autosched is 1.3x ..."
"""
from typing import Any, List, Sequence

import numpy as np

from ..core.text import compare_speed, format_duration_column, format_durations, plain_number, short_task_name

__all__ = ["tune_opening", "tune_closing", "latency_line", "profile_table", "compare_line", "NAME_WIDTH"]

# The width of the group and kernel columns of the profile table (a longer kernel name keeps its shape whole).
NAME_WIDTH = 40


def tune_opening(tasks: Sequence[Any], weights: Sequence[int], log: str) -> str:
    """The line `tune` prints before the session: how many tasks, their work, where the records go."""
    mflop = sum(w * t.compute_dag.flop_ct for t, w in zip(tasks, weights)) / 1e6
    work = f"{plain_number(mflop / 1e3, 3)} GFLOP" if mflop >= 1e3 else f"{plain_number(mflop, 3)} MFLOP"
    return f"Tuning {len(tasks)} tasks ({work} per run; `autosched tasks` lists them); records go to {log}"



def tune_closing(result: Any, tasks: Sequence[Any], log: str, seconds: float, verbose: int) -> List[str]:
    """The lines `tune` prints after the session: where the records are, the time since the command started;
    the estimate where the session printed no summary (verbose 0); the tasks left without a valid schedule."""
    lines = [f"Records in {log}; {seconds:.1f} s since the command started (the same command resumes from them)"]
    if not verbose and result.latency_after is not None:
        after, outside = format_durations(result.latency_after, result.outside_kernels_s)
        lines.append(f"Estimated network latency {after} ({outside} of it outside the tuned kernels)")
    failed = [tasks[i].desc for i in result.failed_tasks]
    if failed:
        lines.append(f"{len(failed)} task(s) without a valid schedule (they run with the default schedule): "
                     f"{'; '.join(failed)}")
    return lines


def latency_line(times: Sequence[float], number: int, target: str) -> str:
    """'latency: 191.3 us best, 195.0 us median of 3 repeats x 10 runs (llvm)'."""
    best, median = format_durations(min(times), float(np.median(times)))
    return f"latency: {best} best, {median} median of {len(times)} repeats x {number} runs ({target})"


def profile_table(net: Any, arrays: Sequence[Any], number: int, repeat: int) -> str:
    """Each group's kernel timed alone (as the tuner times it) and inside runs of the whole network, one unit
    for the two time columns."""
    alone = net.profile(*arrays, number=number, repeat=repeat)
    inside = net.network_profile(*arrays, number=number, repeat=repeat).rows
    total = sum(t for _, t in inside) or 1.0
    groups = [short_task_name(info.name, NAME_WIDTH) for info, _ in alone]
    kernels = [short_task_name(_kernel_desc(info), NAME_WIDTH) for info, _ in alone]
    groups.append("sum of groups")
    kernels.append("")
    unit, times = format_duration_column([t for _, t in alone] + [t for _, t in inside]
                                         + [sum(t for _, t in alone), total])
    n = len(alone)
    alone_texts, inside_texts = times[:n] + [times[2 * n]], times[n:2 * n] + [times[2 * n + 1]]
    gw, kw = max(5, max(map(len, groups))), max(6, max(map(len, kernels)))
    alone_head, inside_head = f"alone {unit}", f"in net {unit}"
    lines = [f"{'#':>3}  {'group':{gw}} {'kernel':{kw}} {'tuned':>5} {alone_head:>9} {inside_head:>9} {'share':>6}"]
    for i in range(n + 1):
        info = alone[i][0] if i < n else None
        share = 100 * (inside[i][1] if i < n else total) / total
        tuned = "" if info is None else "yes" if info.tuned else "no"
        lines.append(f"{i if i < n else '':>3}  {groups[i]:{gw}} {kernels[i]:{kw}} {tuned:>5} "
                     f"{alone_texts[i]:>9} {inside_texts[i]:>9} {share:5.1f}%")
    return "\n".join(lines)


def _kernel_desc(info: Any) -> str:
    return info.task.desc if info.task is not None else (info.record or {}).get("desc", "")


def compare_line(worst: float, theirs: float, ours: float, peer: str = "onnxruntime") -> str:
    """'onnxruntime: outputs match (largest difference below 0.01% of the output's magnitude); 181.0 us best
    against autosched's 191.3 us: autosched is as fast as onnxruntime (within 2%)'. worst: the largest
    difference over the output's magnitude; theirs, ours: seconds."""
    theirs_text, ours_text = format_durations(theirs, ours)
    difference = "below 0.01%" if worst < 1e-4 else f"{plain_number(100 * worst, 2)}%"
    return (f"{peer}: outputs match (largest difference {difference} of the output's magnitude); {theirs_text} "
            f"best against autosched's {ours_text}: {compare_speed(ours, theirs, peer)}")
