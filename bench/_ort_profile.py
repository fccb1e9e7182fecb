"""onnxruntime's profile of an ONNX model by node, given to the tasks of a network autosched built from the same
graph, and the per-task table of both (bench_networks.py, bench_models.py).

    import _ort_profile
    ort = _ort_profile.onnxruntime_profile(model_bytes, {"input": x}, threads=2)   # None without onnxruntime
    print(_ort_profile.by_type_line(ort))
    for line in _ort_profile.in_network_lines(net, [x], result, ort):   # result: the TaskScheduler's, or None
        print(line)

onnxruntime rewrites the graph before it runs it, so its node names are not all the model's: it fuses nodes under
the name of one of them (Conv+Relu), under a name with a suffix (".../MatMul/MatMulAddFusion", an NCHWc Conv
named after its output value: "..._output_0_nchwc") or under a new name ("SkipLayerNormalization_token_3"), and
inserts nodes of its own (ReorderInput/ReorderOutput, the Reshapes around a Gemm). A profiled node is given to a
node of the model by its name (node_tasks), else through the graph onnxruntime ran (saved by the profiling
session): the model's value it computes, else the node that reads what it computes.
"""
import bisect
import collections
import json
import os
import tempfile
from typing import Dict, List, NamedTuple, Tuple


class OrtProfile(NamedTuple):
    """onnxruntime's profile of a model: node_ms, its node name -> ms per run (the best of `repeat` means of
    `number` runs); op_types, node name -> operator type; model_nodes, (name, inputs, outputs) of each node of the
    model it was given; session_nodes, node name -> (inputs, outputs) in the graph it ran after its rewrites (empty
    where unknown); run_ms, a whole profiled run (the best of the means), the profiler's time per node included."""
    node_ms: Dict[str, float]
    op_types: Dict[str, str]
    model_nodes: List[Tuple[str, List[str], List[str]]]
    session_nodes: Dict[str, Tuple[List[str], List[str]]]
    number: int
    repeat: int
    run_ms: float


def onnxruntime_profile(model_bytes, feed, threads, number=10, repeat=3, inter_op_threads=None):
    """Runs the ONNX model (`model_bytes`) on `feed` (input name -> array) `repeat` x `number` times after one
    warm-up run with onnxruntime's profiler on (intra-op `threads`, and `inter_op_threads` where given), as
    GraphModule.network_profile times ours. Returns an OrtProfile, or None without onnxruntime."""
    try:
        import onnx
        import onnxruntime as ort
    except ImportError:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        if inter_op_threads is not None:
            opts.inter_op_num_threads = inter_op_threads
        opts.enable_profiling = True
        opts.profile_file_prefix = os.path.join(tmp, "ort")
        # the graph it runs, its weights apart; the warning that a graph with NCHWc nodes fits this CPU only is
        # beside the point
        opts.optimized_model_filepath = os.path.join(tmp, "session.onnx")
        opts.add_session_config_entry("session.optimized_model_external_initializers_file_name", "weights.bin")
        opts.log_severity_level = 3
        sess = ort.InferenceSession(model_bytes, opts, providers=["CPUExecutionProvider"])
        for _ in range(repeat * number + 1):
            sess.run(None, feed)
        with open(sess.end_profiling()) as f:
            events = json.load(f)
        try:
            ran = onnx.load(opts.optimized_model_filepath, load_external_data=False).graph.node
            session_nodes = {n.name: (list(n.input), list(n.output)) for n in ran}
        except Exception:  # noqa: BLE001 -- without it, profiled nodes are matched by their names alone
            session_nodes = {}
    model = onnx.load_from_string(model_bytes)
    model_nodes = [(n.name, list(n.input), list(n.output)) for n in model.graph.node]
    model_runs = sorted((ev["ts"], ev["dur"]) for ev in events
                        if ev.get("cat") == "Session" and ev.get("name") == "model_run")
    starts = [start for start, _ in model_runs]
    run_means = [sum(dur for _, dur in model_runs[1 + i * number:1 + (i + 1) * number]) / 1e3 / number
                 for i in range(repeat)]
    means, op_types = collections.defaultdict(lambda: [0.0] * repeat), {}
    for ev in events:
        if ev.get("cat") == "Node" and ev.get("name", "").endswith("_kernel_time"):
            run = bisect.bisect_right(starts, ev["ts"]) - 1  # 0: the warm-up run
            if run < 1:
                continue
            name = ev["name"][:-len("_kernel_time")]
            means[name][min((run - 1) // number, repeat - 1)] += ev["dur"] / 1e3 / number  # us -> ms
            op_types[name] = ev.get("args", {}).get("op_name", "?")
    node_ms = {name: min(ms) for name, ms in means.items()}
    return OrtProfile(node_ms, op_types, model_nodes, session_nodes, number, repeat, min(run_means))


def _by_type(node_ms, op_types):
    """(ms per operator type, nodes per operator type) of onnxruntime's nodes `node_ms` (name -> ms)."""
    by_type, count = collections.Counter(), collections.Counter()
    for name, ms in node_ms.items():
        by_type[op_types.get(name, "?")] += ms
        count[op_types.get(name, "?")] += 1
    return by_type, count


def by_type_line(ort):
    """onnxruntime's time per operator type (ms per run), largest first, as one line."""
    by_type, count = _by_type(ort.node_ms, ort.op_types)
    total = sum(by_type.values()) or 1.0
    return (f"  onnxruntime's profile by operator type ({total:.3f} ms per run in its kernels): "
            + ", ".join(f"{op} x{count[op]} {ms:.3f} ms ({ms / total:.0%})" for op, ms in by_type.most_common()))


def _prefixes(name, separators):
    """`name` and its starts before each of `separators`, longest first."""
    return [name] + [name[:i] for i in range(len(name) - 1, 0, -1) if name[i] in separators]


def node_tasks(node_ms, tasks_nodes, model_nodes=None, session_nodes=None):
    """onnxruntime's node times (name -> ms) per task. tasks_nodes: task key -> the names of the nodes of its groups
    (GroupInfo.nodes); model_nodes: (name, inputs, outputs) of each node of the model onnxruntime ran (default: one
    node per name of tasks_nodes, computing the value of that name); session_nodes: node name -> (inputs, outputs)
    in the graph onnxruntime ran after its rewrites.

    A node of the model belongs to the task holding our node of its name or of one of its outputs' names, else our
    node of a name derived from that one by a '/' or '.' (an importer's second node of one ONNX node: "/fc/Gemm/add";
    a layout copy: "x.nchw"), else to the task of the model's node reading what it computes (the MatMul of an
    exported dense layer, before its bias Add). onnxruntime's node is the model's node of its name or of its name's
    start before a '_' or '/' (a suffix onnxruntime adds: "relu1_nchwc", ".../MatMul/MatMulAddFusion"), or computing
    the value of that name ("..._output_0_nchwc"), the longest name winning; else, in session_nodes, the producer of
    a value of the model it computes, else the node reading what it computes (a Reshape or ReorderInput before a
    Gemm or Conv). Returns (ms per task key, {name: ms} of onnxruntime's nodes no task holds)."""
    if model_nodes is None:
        model_nodes = [(name, [], [name]) for names in tasks_nodes.values() for name in names]
    by_name = {}
    for index, (name, _, outputs) in enumerate(model_nodes):
        for key in outputs + ([name] if name else []):  # an unnamed node: our importer names it by its output
            by_name.setdefault(key, index)
    exact, derived = {}, {}  # model node -> the task holding our node of its name / of a name derived from it
    for key, names in tasks_nodes.items():
        for name in names:
            found = next((p for p in _prefixes(name, "/.") if p in by_name), None)
            if found is not None:
                (exact if found == name else derived).setdefault(by_name[found], key)
    producer = {out: index for index, (_, _, outputs) in enumerate(model_nodes) for out in outputs}
    model_readers = _readers((inputs, index) for index, (_, inputs, _) in enumerate(model_nodes))
    session_nodes = session_nodes or {}
    session_readers = _readers((inputs, node) for node, (inputs, _) in session_nodes.items())

    def model_task(index, seen):
        """The task of the model's node `index`, or None."""
        key = exact.get(index, derived.get(index))
        if key is not None or index in seen:
            return key
        seen.add(index)
        return next((k for v in model_nodes[index][2] for r in model_readers[v]
                     if (k := model_task(r, seen)) is not None), None)

    def model_node(node, seen):
        """The index of the model's node that onnxruntime's `node` computes, or None."""
        named = next((by_name[p] for p in _prefixes(node, "_/") if p in by_name), None)
        if named is not None or node not in session_nodes or node in seen:
            return named
        seen.add(node)
        outputs = session_nodes[node][1]
        made = next((producer[v] for v in outputs if v in producer), None)
        if made is not None:
            return made
        return next((i for v in outputs for r in session_readers[v] if (i := model_node(r, seen)) is not None), None)

    per_task, unmatched = collections.Counter(), {}
    for node, ms in node_ms.items():
        index = model_node(node, set())
        key = model_task(index, set()) if index is not None else None
        if key is None:
            unmatched[node] = ms
        else:
            per_task[key] += ms
    return per_task, unmatched


def _readers(nodes):
    """value name -> the nodes reading it, of (inputs, node) pairs."""
    readers = collections.defaultdict(list)
    for inputs, node in nodes:
        for value in inputs:
            readers[value].append(node)
    return readers


def in_network_lines(net, inputs, result=None, ort=None, number=10, repeat=3):
    """The per-task table: each task's kernels' time inside runs of the built network (GraphModule.network_profile,
    `repeat` means of `number` runs), largest first; with the TaskScheduler's `result`, beside weight x its best
    measured kernel as the tuner timed it (alone, warm caches); with `ort` (an OrtProfile of the same graph),
    beside onnxruntime's time for the same graph nodes (node_tasks). Then the totals, what the runs spend between
    the kernels, and onnxruntime's nodes no task holds by operator type. Returns the lines."""
    estimate = {}
    if result is not None:
        estimate = {t.workload_key: (t.desc, w * r.best_cost if r.best_cost else 0.0)
                    for t, w, r in zip(result.tasks, result.weights, result.task_results)}
    inside, desc = collections.Counter(), {}
    tasks_nodes = collections.defaultdict(list)
    profile = net.network_profile(*inputs, number=number, repeat=repeat)
    for info, seconds in profile.rows:
        key = info.task.workload_key if info.task is not None else info.name
        inside[key] += seconds
        desc.setdefault(key, info.task.desc if info.task is not None else info.name)
        tasks_nodes[key].extend(info.nodes)
    for key, (text, _) in estimate.items():
        desc[key] = text
    profiled, tuned = ort is not None, result is not None
    ort_ms, unmatched = (node_tasks(ort.node_ms, tasks_nodes, ort.model_nodes, ort.session_nodes) if profiled
                         else (None, {}))
    rows = sorted(((inside[k], desc[k], estimate.get(k, (None, 0.0))[1], k) for k in desc), reverse=True)
    lines = [f"  tasks in the network ({len(rows)}; kernel time inside {number * repeat} runs of the built network, "
             f"the best of {repeat} means of {number}"
             + (f"; onnxruntime: its profiler's time for the same graph nodes, the best of {ort.repeat} means of "
                f"{ort.number} runs" if profiled else "") + "):",
             f"    {'task':44}" + (f"{'tuner ms':>12}" if tuned else "") + f"{'in net ms':>10}"
             + (f"{'in / tuner':>11}" if tuned else "") + (f"{'ort ms':>10}{'ort / in net':>13}" if profiled else "")]
    for t_in, text, est, key in rows:
        line = f"    {text[:43]:44}"
        if tuned:
            line += f"{est * 1e3:12.4f}{t_in * 1e3:10.4f}" + (f"{t_in / est:11.2f}" if est else f"{'-':>11}")
        else:
            line += f"{t_in * 1e3:10.4f}"
        if profiled:
            ms = ort_ms.get(key, 0.0)
            line += f"{ms:10.4f}" + (f"{ms / (t_in * 1e3):13.2f}" if ms and t_in else f"{'-':>13}")
        lines.append(line)
    kernels, est_total = sum(inside.values()), sum(est for _, _, est, _ in rows)
    lines.append(f"    {'all tasks':44}" + (f"{est_total * 1e3:12.4f}" if tuned else "") + f"{kernels * 1e3:10.4f}"
                 + (f"{kernels / est_total:11.2f}" if tuned and est_total else "")
                 + (f"{sum(ort_ms.values()):10.4f}" if profiled else "")
                 + f"; between the kernels {(profile.run_seconds - kernels) * 1e3:.3f} ms of a run's "
                 f"{profile.run_seconds * 1e3:.3f}"
                 + (f"; onnxruntime's nodes of no task {sum(unmatched.values()):.3f} ms" if profiled else ""))
    if profiled:
        lines.append(unmatched_line(ort, unmatched))
    return lines


def unmatched_line(ort, unmatched):
    """The share of onnxruntime's kernel time that tasks hold, beside a profiled run's time, and the nodes no task
    holds by operator type."""
    total = sum(ort.node_ms.values())
    missed = sum(unmatched.values())
    by_type, count = _by_type(unmatched, ort.op_types)
    text = (f"    onnxruntime's nodes matched to tasks: {total - missed:.3f} of its {total:.3f} ms "
            f"({(total - missed) / total if total else 1.0:.0%}; a profiled run {ort.run_ms:.3f} ms); of no task: ")
    if not unmatched:
        return text + "none"
    return text + f"{len(unmatched)} nodes, " + ", ".join(
        f"{op} x{count[op]} {ms:.4f} ms" for op, ms in by_type.most_common(8)) + (
        f", {len(by_type) - 8} more types" if len(by_type) > 8 else "")
