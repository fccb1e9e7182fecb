"""Tuning tasks of a network: one SearchTask per distinct fused group.

    tasks, weights = autosched.extract_tasks(graph, "llvm")
    autosched.TaskScheduler(tasks, weights).tune(options)

On CPU targets (layout="auto", the default, or "NCHWc") the convolutions and what follows them run in the
channel-blocked layout of the target's vector width (graph/layout.py), after batch-norm folding. Each fused
group (graph/fusion.py) becomes a ComputeDAG: a placeholder for every value it reads from outside
(graph inputs, other groups' outputs and constants: weights are task inputs, never baked into the kernel),
then the te of its ops. Groups with the same DAG (the workload key ignores names) are one task whose weight
is how often the group occurs. Nodes that cannot be compiled (Graph.problems()) are reported in one
UnsupportedGraphWarning and left out; the rest is still extracted.
"""
import re
import warnings
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

from .. import _core
from ..core import te
from ..core.checks import check_hardware_params, check_target, check_type, describe
from ..core.compute_dag import ComputeDAG
from ..core.task import SearchTask
from . import registry
from .fusion import fold_batch_norm, partition
from .dot_weights import has_bfloat16_dot_product, pack_bfloat16_weights
from .ir import Graph
from .layout import convert_layout, has_integer_dot_product_block, resolve_block, resolve_winograd
from .rewrite import expand_small_powers

__all__ = ["UnsupportedGraphWarning", "extract_tasks", "lower_graph", "constants_exceed_cache",
           "last_level_cache_bytes", "constant_bytes", "group_tensors", "format_problems"]


class UnsupportedGraphWarning(UserWarning):
    """A graph holds nodes that cannot be compiled (unsupported ops, dynamic dims); the message lists them."""


MAX_PROBLEM_LINES = 12
_DYNAMIC = re.compile(r"the dynamic dim '([^']*)'")


def format_problems(problems: List[Tuple[str, str, str]], interface: str = "python") -> str:
    """The problems of Graph.problems() as lines '  node (op): why', at most MAX_PROBLEM_LINES of them. The
    nodes that only have a dynamic dim are one line naming the dims and how to bind them with the interface in
    use: "python" (graph.bind(batch=1)) or "cli" (--shape batch=1)."""
    dims: Dict[str, str] = {}
    dynamic, lines = 0, []
    for name, op, why in problems:
        found = _DYNAMIC.search(why)
        if found:
            dims.setdefault(found[1], name)
            dynamic += 1
        else:
            lines.append(f"  {name} ({op}): {why}")
    if len(lines) > MAX_PROBLEM_LINES:
        lines[MAX_PROBLEM_LINES - 1:] = [f"  ... and {len(lines) - MAX_PROBLEM_LINES + 1} more"]
    if dims:
        names = ", ".join(f"'{d}'" for d in dims)
        if interface == "cli":
            fix = "give a value with " + " ".join(f"--shape {d}=1" for d in dims) + " (any positive size)"
        else:
            fix = "bind it with graph = graph.bind(" + ", ".join(f"{d}=1" for d in dims) + ") (any positive size)"
        lines.insert(0, f"  {dynamic} node(s) have the unbound dynamic dim{'s' if len(dims) > 1 else ''} {names} "
                        f"(first: node {next(iter(dims.values()))}): {fix}")
    return "\n".join(lines)


def _tensor_name(value):
    return re.sub(r"\W", "_", value)


def group_tensors(graph, group):
    """The te of a fused group: (placeholders in the order of group.inputs, output tensor)."""
    tensors, placeholders = {}, []
    for value in group.inputs:
        shape = graph.shape(value)
        t = te.placeholder(tuple(shape), graph.dtype(value), name=_tensor_name(value))
        tensors[value] = t
        placeholders.append(t)
    for node in group.nodes:
        tensors[node.name] = registry.te_builder(node.op)(node, *(tensors[v] for v in node.inputs))
    return placeholders, tensors[group.output]


def _describe(graph, group):
    shape = graph.shape(group.output)
    return f"{group.name} {'x'.join(str(d) for d in shape) if shape else 'scalar'}"


class LoweredGraph:
    """A graph after batch-norm folding, the layout pass and fusion, with its tasks.

    graph: the folded (and, with a layout block, converted) graph; block: the layout pass's block or None; groups: FusedGroups in execution order; group_tasks: the SearchTask of each
    group (identical groups share one); tasks / weights: the distinct tasks and how often each occurs."""

    def __init__(self, graph, groups, group_tasks, tasks, weights, block=None):
        self.graph, self.groups, self.group_tasks, self.block = graph, groups, group_tasks, block
        self.tasks, self.weights = tasks, weights


def last_level_cache_bytes(target, hardware_params=None):
    """The target's last-level cache in bytes: hardware_params.l3_cache_bytes, else l2_cache_bytes (a field of
    -1, or no hardware_params, takes the target's default); 0 when unknown."""
    target = check_target("last_level_cache_bytes", target)
    defaults = _core.default_hardware_params(target)

    def field(name):
        given = getattr(hardware_params, name) if hardware_params is not None else -1
        return given if given >= 0 else getattr(defaults, name)

    return field("l3_cache_bytes") or field("l2_cache_bytes")


def constant_bytes(graph):
    """The bytes of a graph's constants (its weights)."""
    return sum(int(np.asarray(v).nbytes) for v in graph.constants.values())


def constants_exceed_cache(graph, target, hardware_params=None):
    """True when the graph's constants (its weights) take more bytes than the target's last-level cache
    (last_level_cache_bytes): each inference then reads a kernel's weights from memory. False on GPU targets
    and where the cache size is unknown (0)."""
    target = check_target("constants_exceed_cache", target)
    if not target.runs_in_host_process:  # a device's own memory: the host's cache sizes do not apply
        return False
    cache = last_level_cache_bytes(target, hardware_params)
    return cache > 0 and constant_bytes(graph) > cache


def _check_cold_constants(where, cold_constants):
    if not (isinstance(cold_constants, bool) or cold_constants == "auto"):
        raise ValueError(f"{where}: cold_constants must be True, False or 'auto', got {cold_constants!r}")


def lower_graph(graph, target, hardware_params=None, layout="auto", cold_constants=False, winograd="auto",
                network_caches=False):
    """Folds batch norms, runs the layout pass (layout: "NCHW", "NCHWc" or "auto"; winograd: True, False or
    "auto"; see graph/layout.py), partitions into fused groups and makes one SearchTask per distinct group. On a
    GPU target a group that ends in a reshape or transpose of its reduction computes the reduction in the
    output's order (fold_remap_into_reduction), so that one kernel computes the group.
    cold_constants (True, False or "auto": constants_exceed_cache) sets the tasks' SearchTask.cold_constants,
    network_caches (on CPU targets) their SearchTask.network_caches."""
    target = check_target("lower_graph", target)
    _check_cold_constants("lower_graph", cold_constants)
    check_type("lower_graph", "network_caches", network_caches, bool, "True or False")
    block = resolve_block(layout, target, hardware_params)
    winograd = resolve_winograd(winograd, block)
    folded = expand_small_powers(fold_batch_norm(graph))
    bf16_dot = has_bfloat16_dot_product(target)
    if bf16_dot:
        folded = pack_bfloat16_weights(folded)
    if block is not None:
        integer_convs = layout == "NCHWc" or has_integer_dot_product_block(target)
        folded = convert_layout(folded, block, winograd, integer_convs, bf16_dot=bf16_dot)
    if cold_constants == "auto":
        cold_constants = constants_exceed_cache(folded, target, hardware_params)
    groups = partition(folded)
    by_key, tasks, weights, group_tasks, descs = {}, [], [], [], {}
    for group in groups:
        placeholders, out = group_tensors(folded, group)
        if target.is_gpu:  # a reshape or transpose after a dense layer: one kernel, not two
            out = _core.fold_remap_into_reduction(out)
        dag = ComputeDAG(placeholders + [out])
        key = dag.workload_key()
        if key not in by_key:
            by_key[key] = len(tasks)
            desc = _describe(folded, group)
            descs[desc] = descs.get(desc, 0) + 1
            if descs[desc] > 1:  # another DAG with the same ops and output shape (e.g. another stride)
                desc += f" ({descs[desc]})"
            # Prepacked constants and caches set up around runs need kernels that run in this process.
            in_process = target.runs_in_host_process
            constant_args = [i for i, v in enumerate(group.inputs) if v in folded.constants] if in_process else []
            tasks.append(SearchTask(compute_dag=dag, target=target, hardware_params=hardware_params, desc=desc,
                                    constant_args=constant_args,
                                    cold_constants=bool(cold_constants and constant_args),
                                    network_caches=network_caches and in_process))
            weights.append(0)
        weights[by_key[key]] += 1
        group_tasks.append(tasks[by_key[key]])
    return LoweredGraph(folded, groups, group_tasks, tasks, weights, block)


def check_graph_args(where: str, graph: Any, target: Any, hardware_params: Any,
                     params: Any) -> Tuple[Any, Any]:
    """(target, hardware_params) of a call given autosched's arguments (graph, target, hardware_params) or
    TVM's (mod, params, target): a dict in the place of the target is TVM's params. autosched graphs carry
    their weights, so params may only name the graph's constants."""
    if not isinstance(graph, Graph):
        raise TypeError(f"{where}: graph must be an autosched.graph.Graph (from frontends.from_onnx / from_torch "
                        f"or graph.zoo), got {describe(graph)}")
    if isinstance(target, dict):  # TVM's order: (mod, params, target)
        if params is not None:
            raise TypeError(f"{where}: params given twice (by position and by keyword)")
        params, target, hardware_params = target, hardware_params, None
    if params is not None:
        if not isinstance(params, dict):
            raise TypeError(f"{where}: params must be a dict of the graph's constants, got {describe(params)}")
        constants = graph.constants
        unknown = sorted(k for k in params if k not in constants)
        if unknown:
            raise ValueError(f"{where}: params {', '.join(repr(k) for k in unknown[:5])} are not constants of "
                             f"graph '{graph.name}': autosched graphs carry their weights (the importers put "
                             "them in graph.constants); pass no params")
    if target is None:
        raise TypeError(f"{where}: target is missing (e.g. 'llvm' for the host CPU)")
    return check_target(where, target), check_hardware_params(where, hardware_params)


def extract_tasks(graph: Graph, target: Any, hardware_params: Any = None, layout: str = "auto", *,
                  params: Optional[Dict[str, Any]] = None,
                  cold_constants: Union[bool, str] = "auto",
                  winograd: Union[bool, str] = "auto",
                  network_caches: bool = True) -> Tuple[List[SearchTask], List[int]]:
    """(tasks, task_weights): one SearchTask per distinct fused group of `graph` for `target` (a Target or its
    text) and the number of times each group occurs. Nodes listed by graph.problems() are not compiled: one
    UnsupportedGraphWarning names them all, and the other groups are still extracted. layout: "NCHW" (as the
    graph is), "NCHWc" (convolutions and what follows them in the channel-blocked layout of the target's
    vector width, graph/layout.py) or "auto" (NCHWc on CPU targets, NCHW on GPUs); graph.build takes the same
    option and must be given the same value, so that the tasks tuned are the kernels built. TVM's order
    extract_tasks(graph, params, target) works too (params: the graph's own constants, already in it).
    cold_constants: whether the tasks time their kernels with the weights evicted from the caches before each
    run (SearchTask.cold_constants); "auto" turns it on where the graph's weights exceed the target's
    last-level cache, so that no inference finds them cached (ResNet-18's 45 MB, not MobileNet-V2's 14 MB).
    winograd: whether the blocked layout runs 3x3 convolutions of stride 1 by Winograd (conv2d_winograd_nchwc):
    True (every one, by F(2x2, 3x3)), False, or "auto" (F(4x4, 3x3) or F(2x2, 3x3) where it is faster, by the
    channels, the output tiles and the block: graph/layout.py's winograd_tile); graph.build must be given the
    same value.
    network_caches: whether the tasks (on CPU targets) time each run with the caches as the network leaves them
    (SearchTask.network_caches): the private caches refilled with other data and the inputs rewritten by all
    cores, instead of a warm loop that finds weights and inputs in each core's L2."""
    _check_cold_constants("extract_tasks", cold_constants)
    check_type("extract_tasks", "network_caches", network_caches, bool, "True or False")
    target, hardware_params = check_graph_args("extract_tasks", graph, target, hardware_params, params)
    problems = graph.problems()
    if problems:
        warnings.warn(f"graph '{graph.name}': {len(problems)} node(s) cannot be compiled and are left out of "
                      f"the tasks:\n{format_problems(problems)}", UnsupportedGraphWarning, stacklevel=2)
    lowered = lower_graph(graph, target, hardware_params, layout, cold_constants, winograd, network_caches)
    return lowered.tasks, lowered.weights
