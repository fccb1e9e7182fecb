// The rule lists of a task: the CPU lists (rules/cpu/) or the GPU lists
// (rules/gpu/), by the task's target.
#pragma once

#include "search/rules/init_rules.h"
#include "search/rules/mutation_rules.h"
#include "search/rules/sketch_rules.h"
#include "task/search_task.h"

namespace autosched {

// The rule lists of the task's kind (CPU or GPU).
SketchRuleList DefaultSketchRules(const SearchTask& task);
InitRuleList DefaultInitRules(const SearchTask& task);
MutationRuleList DefaultMutationRules(const SearchTask& task);

}  // namespace autosched
