#include "search/rule_sets.h"

#include "search/rules/gpu/gpu_rules.h"

namespace autosched {

SketchRuleList DefaultSketchRules(const SearchTask& task) {
  return IsGpuTask(task) ? DefaultGpuSketchRules() : DefaultCpuSketchRules();
}

InitRuleList DefaultInitRules(const SearchTask& task) {
  return IsGpuTask(task) ? DefaultGpuInitRules() : DefaultCpuInitRules();
}

MutationRuleList DefaultMutationRules(const SearchTask& task) {
  return IsGpuTask(task) ? DefaultGpuMutationRules() : DefaultCpuMutationRules();
}

}  // namespace autosched
