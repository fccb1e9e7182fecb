// Deployment with constant arguments (a network's weights): the stages of a
// schedule that compute only from constants (the pack-operand rule's packed
// copy of a weight, a cache_read of one) can run once, before the kernel,
// instead of on every call.
#pragma once

#include <vector>

#include "dag/compute_dag.h"
#include "schedule/state.h"

namespace autosched {

struct ConstantStageSplit {
  // The kernel: each split stage is a placeholder of the same name, shape and
  // dtype, appended to the DAG's arguments in the order of stage_ids. Its
  // steps are those of the original state: it is for lowering, not replaying.
  State state;
  std::vector<int> stage_ids;  // the split stages, ids in the original state
  // Per split stage, its computation alone: the constant arguments it reads
  // (in argument order), then its tensor; and the positions of those
  // arguments among the original DAG's arguments.
  std::vector<ComputeDAG> prepack;
  std::vector<std::vector<int>> prepack_args;
};

// Splits off the stages of `s` that are computed (not inlined, not outputs)
// only from the arguments at positions `constant_args` of s.dag().tensors()
// and are read by a stage that is not (or is inlined): the outermost such
// stages. Stages attached to another stage's loops by compute_at are split
// too: the kernel then reads the whole tensor. A stage that a remaining stage
// is attached to is kept. No such stage: state is s, the lists are empty.
// Throws Error for a position out of range or not a placeholder.
ConstantStageSplit SplitConstantStages(const State& s, const std::vector<int>& constant_args);

}  // namespace autosched
