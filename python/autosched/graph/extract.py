"""Tuning tasks of a network: one SearchTask per distinct fused group.

    tasks, weights = autosched.extract_tasks(graph, "llvm")
    autosched.TaskScheduler(tasks, weights).tune(options)

On CPU targets (layout="auto", the default, or "NCHWc") the convolutions and what follows them run in the
channel-blocked layout of the target's vector width (graph/layout.py), after batch-norm folding. Each fused group (graph/fusion.py) becomes a ComputeDAG: a placeholder for every value it reads from outside
(graph inputs, other groups' outputs and constants: weights are task inputs, never baked into the kernel),
then the te of its ops. Groups with the same DAG (the workload key ignores names) are one task whose weight
is how often the group occurs. Nodes that cannot be compiled (Graph.problems()) are reported in one
UnsupportedGraphWarning and left out; the rest is still extracted.
"""
import re
import warnings

from .. import te
from ..compute_dag import ComputeDAG
from ..task import SearchTask
from . import registry
from .fusion import fold_batch_norm, partition
from .layout import convert_layout, resolve_block

__all__ = ["UnsupportedGraphWarning", "extract_tasks", "lower_graph", "group_tensors", "format_problems"]


class UnsupportedGraphWarning(UserWarning):
    """A graph holds nodes that cannot be compiled (unsupported ops, dynamic dims); the message lists them."""


def format_problems(problems):
    """The problems of Graph.problems() as lines '  node (op): why'."""
    return "\n".join(f"  {name} ({op}): {why}" for name, op, why in problems)


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


def lower_graph(graph, target, hardware_params=None, layout="auto"):
    """Folds batch norms, runs the layout pass (layout: "NCHW", "NCHWc" or "auto", see graph/layout.py),
    partitions into fused groups and makes one SearchTask per distinct group."""
    block = resolve_block(layout, target, hardware_params)
    folded = fold_batch_norm(graph)
    if block is not None:
        folded = convert_layout(folded, block)
    groups = partition(folded)
    by_key, tasks, weights, group_tasks, descs = {}, [], [], [], {}
    for group in groups:
        placeholders, out = group_tensors(folded, group)
        dag = ComputeDAG(placeholders + [out])
        key = dag.workload_key()
        if key not in by_key:
            by_key[key] = len(tasks)
            desc = _describe(folded, group)
            descs[desc] = descs.get(desc, 0) + 1
            if descs[desc] > 1:  # another DAG with the same ops and output shape (e.g. another stride)
                desc += f" ({descs[desc]})"
            tasks.append(SearchTask(compute_dag=dag, target=target, hardware_params=hardware_params, desc=desc))
            weights.append(0)
        weights[by_key[key]] += 1
        group_tasks.append(tasks[by_key[key]])
    return LoweredGraph(folded, groups, group_tasks, tasks, weights, block)


def extract_tasks(graph, target, hardware_params=None, layout="auto"):
    """(tasks, task_weights): one SearchTask per distinct fused group of `graph` for `target` (a Target or its
    text) and the number of times each group occurs. Nodes listed by graph.problems() are not compiled: one
    UnsupportedGraphWarning names them all, and the other groups are still extracted. layout: "NCHW" (as the
    graph is), "NCHWc" (convolutions and what follows them in the channel-blocked layout of the target's
    vector width, graph/layout.py) or "auto" (NCHWc on CPU targets, NCHW on GPUs); graph.build takes the same
    option and must be given the same value, so that the tasks tuned are the kernels built."""
    problems = graph.problems()
    if problems:
        warnings.warn(f"graph '{graph.name}': {len(problems)} node(s) cannot be compiled and are left out of "
                      f"the tasks:\n{format_problems(problems)}", UnsupportedGraphWarning, stacklevel=2)
    lowered = lower_graph(graph, target, hardware_params, layout)
    return lowered.tasks, lowered.weights
