// Roadmap of the search policy (cpp/search/).
//
//   search_params.h   SearchParams: every knob with its default.
//   sketch_rules.h    SketchRule and the ordered CPU list (inline, const
//                     tensors, rfactor, cache write, tiling with fusion,
//                     tiling, skip).
//   init_rules.h      InitRule and the ordered CPU list (tile sizes,
//                     parallel, unroll, vectorize); SampleInitPopulation.
//   search_util.h     state queries and tiling helpers both lists share.
//   sketch_policy.*   this file: the two entry points below.
//
// Data flow:
//   SearchTask ─► GenerateSketches: a worklist of (partial sketch, stage id),
//     starting from the initial state at the last stage; each entry asks the
//     sketch rules in order (Skip / Apply / ApplyAndSkipRest) and their
//     results, (state, next stage id), form the next worklist; an entry whose
//     stage id is below 0 is a finished sketch.
//   sketches ─► SampleInitPopulation: random sketch ─► init rules ─► bound
//     inference and lowering as a check ─► distinct states, drops counted.
//   (next: mutations, evolutionary search with the cost model, measurement.)
#include "search/sketch_policy.h"

#include <unordered_set>

#include "support/error.h"

namespace autosched {

SketchPolicy::SketchPolicy(SearchTask task, SearchParams params)
    : task_(std::move(task)),
      params_(std::move(params)),
      sketch_rules_(DefaultCpuSketchRules()),
      init_rules_(DefaultCpuInitRules()) {
  AS_CHECK(task_.target.kind == TargetKind::LLVM,
           "the sketch policy has rules for CPU (llvm) targets only, not for '" << task_.target.str() << "'");
}

void SketchPolicy::ApplyRules(const State& state, int stage_id, std::vector<std::pair<State, int>>* next) {
  const SketchContext ctx{task_, params_};
  for (const auto& rule : sketch_rules_) {
    SketchRule::Condition cond = SketchRule::Condition::Skip;
    try {
      cond = rule->MeetCondition(ctx, state, stage_id);
      if (cond == SketchRule::Condition::Skip) continue;
      for (auto& result : rule->Apply(ctx, state, stage_id)) next->push_back(std::move(result));
    } catch (const std::exception& e) {
      // The next rules are asked as if this one had not applied.
      rule_failures_.push_back("rule '" + rule->name() + "' at stage '" + state.stage(stage_id).name() +
                               "': " + e.what());
      continue;
    }
    if (cond == SketchRule::Condition::ApplyAndSkipRest) break;
  }
}

std::vector<State> SketchPolicy::GenerateSketches() {
  rule_failures_.clear();
  State init(task_.compute_dag);
  std::vector<std::pair<State, int>> now = {{init, static_cast<int>(init.stages().size()) - 1}};
  std::vector<State> sketches;
  std::unordered_set<std::string> seen;
  while (!now.empty()) {
    std::vector<std::pair<State, int>> next;
    for (const auto& [state, stage_id] : now) {
      if (stage_id < 0) {
        if (seen.insert(state.ToJson().dump()).second) sketches.push_back(state);
      } else {
        ApplyRules(state, stage_id, &next);
      }
    }
    now = std::move(next);
  }
  return sketches;
}

InitPopulation SketchPolicy::SampleInitPopulation(int n, uint32_t seed) {
  std::vector<State> sketches = GenerateSketches();
  std::mt19937 rng(seed);
  return autosched::SampleInitPopulation(task_, sketches, n, &rng, params_, init_rules_);
}

}  // namespace autosched
