#include "search/rule_sets.h"

#include "search/rules/gpu/gpu_rules.h"

namespace autosched {

SketchRuleList DefaultSketchRules(const SearchTask& task) {
  return task.target.kind->is_gpu ? DefaultGpuSketchRules() : DefaultCpuSketchRules();
}

InitRuleList DefaultInitRules(const SearchTask& task) {
  return task.target.kind->is_gpu ? DefaultGpuInitRules() : DefaultCpuInitRules();
}

MutationRuleList DefaultMutationRules(const SearchTask& task) {
  return task.target.kind->is_gpu ? DefaultGpuMutationRules() : DefaultCpuMutationRules();
}

}  // namespace autosched
