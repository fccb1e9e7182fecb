// Roadmap of the search policy (cpp/search/).
//
//   search_params.h   SearchParams: every knob with its default.
//   sketch_rules.h    SketchRule and the ordered CPU list (inline, const
//                     tensors, rfactor, cache write, tiling with fusion,
//                     tiling, skip).
//   init_rules.h      InitRule and the ordered CPU list (tile sizes,
//                     parallel, unroll, vectorize); SampleInitPopulation.
//   search_util.h     state queries and tiling helpers both lists share.
//   mutation_rules.h  MutationRule and the CPU list with probabilities.
//   evolutionary_search.h  generations of scoring, selection and mutation.
//   parallel.h        the parallel loop and per-item seeds.
//   sketch_policy.*   this file: sketches, sampling and the search rounds.
//
// Data flow:
//   SearchTask ─► GenerateSketches: a worklist of (partial sketch, stage id),
//     starting from the initial state at the last stage; each entry asks the
//     sketch rules in order (Skip / Apply / ApplyAndSkipRest) and their
//     results, (state, next stage id), form the next worklist; an entry whose
//     stage id is below 0 is a finished sketch.
//   sketches ─► SampleInitPopulation: random sketch ─► init rules ─► bound
//     inference and lowering as a check ─► distinct states, drops counted.
//   ContinueSearchOneRound: random states (sampled in parallel) + the
//     expert schedule + the transfer seeds (transfer_seeds.h) + the best
//     measured states ─► EvolutionarySearch (cost model scores, mutations)
//     ─► a few transfer seeds not measured yet + the best unmeasured states
//     + a few random ones (epsilon-greedy) ─► the batch to measure. RecordMeasured brings the results back:
//     the measured set (dedup, also of a resumed log), the best measured states, and the cost model's update.
#include "search/sketch_policy.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <unordered_set>

#include "cost_model/random_model.h"
#include "lower/lower.h"
#include "search/rule_sets.h"
#include "search/rules/gpu_state.h"
#include "search/rules/parallel.h"
#include "search/rules/search_util.h"
#include "support/error.h"
#include "support/interrupt.h"

namespace autosched {

SketchPolicy::SketchPolicy(SearchTask task, SearchParams params, uint64_t seed)
    : SketchPolicy(std::move(task), std::make_shared<RandomModel>(seed), std::move(params), seed) {}

SketchPolicy::SketchPolicy(SearchTask task, std::shared_ptr<CostModel> cost_model, SearchParams params,
                           uint64_t seed)
    : task_(std::move(task)),
      params_(std::move(params)),
      seed_(seed),
      sketch_rules_(DefaultSketchRules(task_)),
      init_rules_(DefaultInitRules(task_)),
      mutation_rules_(DefaultMutationRules(task_)),
      cost_model_(std::move(cost_model)) {
  AS_CHECK(cost_model_ != nullptr, "the sketch policy needs a cost model");
  CheckFields(params_);
}

namespace {

std::string RuleNamesText(const SketchRuleList& rules) {
  std::string out;
  for (const auto& r : rules) out += (out.empty() ? "" : ", ") + r->name();
  return out;
}

}  // namespace

void SketchPolicy::PreloadSketchRule(std::shared_ptr<const SketchRule> rule) {
  AS_CHECK(rule != nullptr, "PreloadSketchRule: no rule given");
  for (const auto& r : sketch_rules_) {
    AS_CHECK(r->name() != rule->name(),
             "the sketch policy already has a rule named '" << rule->name() << "'");
  }
  sketch_rules_.insert(sketch_rules_.begin() + static_cast<std::ptrdiff_t>(num_custom_sketch_rules_),
                       std::move(rule));
  ++num_custom_sketch_rules_;
  sketches_.reset();  // the next round generates them with the new rule
  expert_.reset();
}

// A rule's results must name a stage of their state (or -1: finished), be
// states of the task's DAG, and make progress: the state and stage a rule was
// given, returned as they are, would be visited forever.
void SketchPolicy::CheckRuleResults(const SketchRule& rule, const State& state, int stage_id,
                                    const std::vector<std::pair<State, int>>& results) const {
  for (const auto& [result, next] : results) {
    const int num_stages = static_cast<int>(result.stages().size());
    AS_CHECK(next >= -1 && next < num_stages, "sketch rule '" << rule.name() << "' at stage '"
                                                              << state.stage(stage_id).name()
                                                              << "' returned the next stage id " << next
                                                              << ", not in [-1, " << num_stages << ")");
    AS_CHECK(result.init_dag().workload_key() == task_.compute_dag.workload_key(),
             "sketch rule '" << rule.name() << "' at stage '" << state.stage(stage_id).name()
                             << "' returned a state of another compute DAG");
    AS_CHECK(next != stage_id || !result.SameSteps(state),
             "sketch rule '" << rule.name() << "' at stage '" << state.stage(stage_id).name()
                             << "' returned the state and stage it was given: generation would never end");
  }
}

void SketchPolicy::ApplyRules(const State& state, int stage_id, std::vector<std::pair<State, int>>* next) {
  const SketchContext ctx{task_, params_};
  for (const auto& rule : sketch_rules_) {
    SketchRule::Condition cond = SketchRule::Condition::Skip;
    std::vector<std::pair<State, int>> results;
    try {
      cond = rule->MeetCondition(ctx, state, stage_id);
      if (cond == SketchRule::Condition::Skip) continue;
      results = rule->Apply(ctx, state, stage_id);
    } catch (const std::exception& e) {
      if (!rule->RecordsFailures()) throw;
      // The next rules are asked as if this one had not applied.
      rule_failures_.push_back("rule '" + rule->name() + "' at stage '" + state.stage(stage_id).name() +
                               "': " + e.what());
      continue;
    }
    CheckRuleResults(*rule, state, stage_id, results);
    for (auto& result : results) next->push_back(std::move(result));
    if (cond == SketchRule::Condition::ApplyAndSkipRest) break;
  }
}

std::vector<State> SketchPolicy::GenerateSketches() {
  rule_failures_.clear();
  State init(task_.compute_dag);
  std::vector<std::pair<State, int>> now = {{init, static_cast<int>(init.stages().size()) - 1}};
  std::vector<State> sketches;
  std::unordered_set<std::string> seen;
  // Each round moves every partial sketch to a lower stage, or to a stage a
  // rule added (rfactor, cache write) or revisits once (pack): far fewer
  // rounds than this bound, unless a rule keeps sending states back.
  const size_t max_rounds = 16 * init.stages().size() + 64;
  size_t visited = 0, rounds = 0;
  while (!now.empty()) {
    visited += now.size();
    AS_CHECK(
        ++rounds <= max_rounds && visited <= kMaxPartialSketches,
        "sketch generation did not finish after "
            << rounds << " rounds and " << visited << " partial sketches: a sketch rule keeps branching or "
            << "returns states to stages already visited (rules: " << RuleNamesText(sketch_rules_) << ")");
    std::vector<std::pair<State, int>> next;
    for (const auto& [state, stage_id] : now) {
      PollInterrupt();
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
  return autosched::SampleInitPopulation(task_, GenerateSketches(), n, seed, params_, init_rules_);
}

// ---- search rounds ----

namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Whether `state` (which lowers to `lowered`, where known) generates code
// within the task's limits (CheckGpuState; always for a CPU task).
bool WithinLimits(const SketchContext& ctx, const State& state, LoweredPtr lowered) {
  if (!ctx.task.target.kind->is_gpu) return true;
  std::string message;
  try {
    if (!lowered) lowered = std::make_shared<const LoweredFunc>(Lower(state));
    return CheckGpuState(ctx, state, *lowered, &message).empty();
  } catch (const std::exception&) {
    return false;
  }
}

void Shuffle(std::vector<State>* v, std::mt19937* rng) {
  for (int64_t i = static_cast<int64_t>(v->size()) - 1; i > 0; --i) {
    std::swap((*v)[i], (*v)[RandomIndex(rng, i + 1)]);
  }
}

}  // namespace

const std::vector<State>& SketchPolicy::Sketches() {
  if (!sketches_) sketches_ = GenerateSketches();
  return *sketches_;
}

const ExpertSchedule& SketchPolicy::Expert() {
  if (!expert_) {
    try {
      expert_ = MakeExpertSchedule(task_, params_, Sketches());
    } catch (const std::exception& e) {
      expert_ = ExpertSchedule{std::nullopt, std::string("no sketches: ") + e.what(), ""};
    }
  }
  return *expert_;
}

// Random states from the sketches (at least sample_init_min_population, up
// to the population size; carry_over_fresh_share of it when going on from the
// last generation of the round before, which follows them), the expert
// schedule, and the best measured states; *lowered holds what the random and
// carried states lower to (their checks lowered them).
std::vector<State> SketchPolicy::InitialPopulation(std::vector<State>* random_states,
                                                   std::vector<LoweredPtr>* lowered) {
  const auto start = Clock::now();
  const int64_t population = std::max<int64_t>(1, params_.evolutionary_search_population);
  const int64_t use_measured = std::min(
      static_cast<int64_t>(measured_good_.size()),
      static_cast<int64_t>(params_.sample_init_use_measured_ratio * static_cast<double>(population)));
  const bool carry = params_.evolutionary_search_carry_over && !last_generation_.states.empty();
  const int64_t num_random =
      carry ? std::max<int64_t>(
                  1, std::llround(params_.carry_over_fresh_share * static_cast<double>(population)))
            : std::max<int64_t>(std::max<int64_t>(1, params_.sample_init_min_population),
                                population - use_measured);
  std::vector<State> pop;
  if (!Sketches().empty()) {
    InitPopulation sampled =
        autosched::SampleInitPopulation(task_, Sketches(), static_cast<int>(num_random),
                                        SeedFor(seed_, rounds_, 1), params_, init_rules_, deadline_);
    last_round_.sampled += static_cast<int64_t>(sampled.states.size());
    for (const auto& [reason, count] : sampled.drops) last_round_.sample_drops[reason] += count;
    pop = std::move(sampled.states);
    *lowered = std::move(sampled.lowered);
  }
  *random_states = pop;
  if (carry) {
    lowered->resize(pop.size());
    pop.insert(pop.end(), last_generation_.states.begin(), last_generation_.states.end());
    lowered->insert(lowered->end(), last_generation_.lowered.begin(), last_generation_.lowered.end());
    last_round_.carried += static_cast<int64_t>(last_generation_.states.size());
  }
  if (!Sketches().empty() && Expert().state) pop.push_back(*Expert().state);
  pop.insert(pop.end(), transfer_seeds_.begin(), transfer_seeds_.end());
  last_round_.transfer_seeds += static_cast<int64_t>(transfer_seeds_.size());
  std::partial_sort(measured_good_.begin(), measured_good_.begin() + use_measured, measured_good_.end(),
                    [](const auto& a, const auto& b) { return a.first > b.first; });
  for (int64_t i = 0; i < use_measured; ++i) pop.push_back(measured_good_[i].second);
  last_round_.seeded_measured += use_measured;
  last_round_.sample_seconds += SecondsSince(start);
  return pop;
}

// num_measure - eps_greedy * num_measure states from `best`, the rest from
// `random` (either list makes up for the other), each not measured yet.
std::vector<State> SketchPolicy::PickEpsGreedy(const std::vector<State>& best,
                                               const std::vector<State>& random, int num_measure) {
  const int num_random = static_cast<int>(params_.eps_greedy * num_measure);
  const size_t num_good = static_cast<size_t>(num_measure - num_random);
  size_t next_best = 0, next_random = 0;
  std::vector<State> out;
  while (out.size() < static_cast<size_t>(num_measure)) {
    const bool has_best = next_best < best.size(), has_random = next_random < random.size();
    if (!has_best && !has_random) break;
    const bool from_best = has_best && (out.size() < num_good || !has_random);
    const State& s = from_best ? best[next_best++] : random[next_random++];
    if (!measured_keys_.insert(StateKey(s)).second) continue;
    out.push_back(s);
    ++(from_best ? last_round_.picked_best : last_round_.picked_random);
  }
  return out;
}

TransferReport SketchPolicy::SetTransferSeeds(const std::vector<State>& sources, int64_t max_seeds) {
  TransferReport report;
  const SketchContext ctx{task_, params_};
  transfer_seeds_ = RefitSeeds(ctx, sources, max_seeds, &report);
  // Seeds of another device may exceed this task's limits (its work groups,
  // shared memory): they would be proposed and refused.
  const size_t before = transfer_seeds_.size();
  transfer_seeds_.erase(std::remove_if(transfer_seeds_.begin(), transfer_seeds_.end(),
                                       [&](const State& seed) { return !WithinLimits(ctx, seed, nullptr); }),
                        transfer_seeds_.end());
  if (transfer_seeds_.size() < before) {
    report.drops["device_limits"] += static_cast<int64_t>(before - transfer_seeds_.size());
    report.kept = static_cast<int64_t>(transfer_seeds_.size());
  }
  return report;
}

// Up to transfer_seeds_measured seeds never measured, in their order (they
// count as measured from now on).
std::vector<State> SketchPolicy::PickTransferSeeds(int num_measure) {
  std::vector<State> out;
  const int64_t limit = std::min<int64_t>(num_measure, params_.transfer_seeds_measured);
  for (const State& seed : transfer_seeds_) {
    if (static_cast<int64_t>(out.size()) >= limit) break;
    if (!measured_keys_.insert(StateKey(seed)).second) continue;
    out.push_back(seed);
    ++last_round_.picked_transfer;
  }
  return out;
}

std::vector<State> SketchPolicy::ContinueSearchOneRound(int num_measure) {
  AS_CHECK(num_measure >= 1, "a search round needs to measure at least 1 state, got " << num_measure);
  last_round_ = SearchRoundStats();
  const SketchContext ctx{task_, params_};
  std::vector<State> batch;
  const int64_t tries = 1 + std::max<int64_t>(0, params_.retry_search_one_round_on_empty);
  for (int64_t t = 0; t < tries && batch.empty(); ++t) {
    if (Clock::now() >= deadline_) {
      last_round_.cut_at_deadline = true;
      break;
    }
    ++rounds_;
    ++last_round_.tries;
    std::vector<State> random_states;
    std::vector<LoweredPtr> lowered;
    const std::vector<State> init = InitialPopulation(&random_states, &lowered);
    std::vector<State> best;
    if (!init.empty()) {
      best = EvolutionarySearch(ctx, init, 2 * num_measure, cost_model_.get(), measured_keys_,
                                mutation_rules_, SeedFor(seed_, rounds_, 2), &last_round_.evolution, lowered,
                                &last_generation_, deadline_);
    }
    if (Clock::now() >= deadline_) {  // no measurement follows: pick nothing, so nothing counts as measured
      last_round_.cut_at_deadline = true;
      break;
    }
    std::mt19937 rng = RngFor(seed_, rounds_, 3);
    Shuffle(&random_states, &rng);
    batch = PickTransferSeeds(num_measure);
    for (State& s : PickEpsGreedy(best, random_states, num_measure - static_cast<int>(batch.size())))
      batch.push_back(std::move(s));
  }
  return batch;
}

void SketchPolicy::SetPopulation(int64_t population) {
  AS_CHECK(population >= 1, "the search population must be at least 1, got " << population);
  params_.evolutionary_search_population = population;
}

void SketchPolicy::SetGenerations(int64_t num_iters) {
  AS_CHECK(num_iters >= 0, "the search's generations per round must be at least 0, got " << num_iters);
  params_.evolutionary_search_num_iters = num_iters;
}

void SketchPolicy::SetCarryOver(bool carry_over) { params_.evolutionary_search_carry_over = carry_over; }

bool SketchPolicy::IsMeasured(const State& state) const { return measured_keys_.count(StateKey(state)) != 0; }

void SketchPolicy::RecordMeasured(const std::vector<State>& states,
                                  const std::vector<MeasureResult>& results) {
  AS_CHECK(states.size() == results.size(),
           "RecordMeasured: " << states.size() << " states but " << results.size() << " results");
  std::vector<MeasuredProgram> programs;
  const double flop = task_.compute_dag.flop_ct();
  for (size_t i = 0; i < states.size(); ++i) {
    const std::string key = StateKey(states[i]);
    measured_keys_.insert(key);
    const MeasureResult& r = results[i];
    const double cost = r.mean_cost();
    if (r.ok() && std::isfinite(cost) && cost > 0 && good_keys_.insert(key).second) {
      measured_good_.emplace_back(flop > 0 ? flop / cost : 1 / cost, states[i]);
    }
    programs.push_back({task_, states[i], r.costs, r.ok()});
    learned_max_threads_ = std::max(learned_max_threads_, r.kernel_max_threads);
  }
  // The largest maximum reported: a kernel of fewer registers may run larger
  // groups than the one refused, but none above every reported maximum is
  // proposed again.
  int64_t& limit = task_.hardware_params.max_threads_per_block;
  if (learned_max_threads_ > 0 && (limit <= 0 || learned_max_threads_ < limit)) {
    limit = learned_max_threads_;
    DropStatesBeyondLimits();
  }
  if (programs.empty()) return;
  const auto start = Clock::now();
  cost_model_->Update(programs);
  model_update_seconds_ += SecondsSince(start);
}

// The states kept from before the limits changed were checked against the
// old ones: the last generation (which a carried-over round goes on from),
// the transfer seeds and the expert schedule. Those beyond the limits now
// would be proposed, and refused by the measurement, again and again.
void SketchPolicy::DropStatesBeyondLimits() {
  const SketchContext ctx{task_, params_};
  Generation kept;
  for (size_t i = 0; i < last_generation_.states.size(); ++i) {
    const LoweredPtr lowered = i < last_generation_.lowered.size() ? last_generation_.lowered[i] : nullptr;
    if (!WithinLimits(ctx, last_generation_.states[i], lowered)) continue;
    kept.states.push_back(last_generation_.states[i]);
    kept.lowered.push_back(lowered);
  }
  last_generation_ = std::move(kept);
  transfer_seeds_.erase(std::remove_if(transfer_seeds_.begin(), transfer_seeds_.end(),
                                       [&](const State& seed) { return !WithinLimits(ctx, seed, nullptr); }),
                        transfer_seeds_.end());
  if (expert_ && expert_->state && !WithinLimits(ctx, *expert_->state, nullptr)) {
    expert_->state.reset();
    expert_->reason = "the expert schedule exceeds the work-group limit learned from the device (" +
                      std::to_string(task_.hardware_params.max_threads_per_block) + " work items)";
  }
}

std::vector<State> BaselineStates(const SearchTask& task, const SearchParams& params) {
  const SketchContext ctx{task, params};
  const State plain(task.compute_dag);
  std::vector<State> out;
  std::string message;
  if (CheckState(plain, &message).empty()) out.push_back(plain);
  if (task.target.kind->is_gpu) {
    // On a GPU the CPU variants (parallel, vectorized loops) would run in one
    // work item; the nests without bindings get the default GPU schedule
    // instead (docs/opencl.md): the plain one and, where it differs, the one
    // whose inner loop is spatial.
    const State interchanged = InterchangeReductions(plain);
    if (!interchanged.SameSteps(plain) && CheckState(interchanged, &message).empty())
      out.push_back(interchanged);
    return out;
  }
  // Parallel outer loops and vectorized inner ones, on the plain nest and on
  // the nest with reductions interchanged (whose inner loop is spatial).
  for (const State& start : {plain, InterchangeReductions(plain)}) {
    const std::optional<State> s = ParallelVectorized(ctx, start);
    if (!s) continue;
    const bool known = std::any_of(out.begin(), out.end(), [&](const State& o) { return o.SameSteps(*s); });
    if (!known && CheckState(*s, &message).empty()) out.push_back(*s);
  }
  return out;
}

ExpertSchedule MakeExpertSchedule(const SearchTask& task, const SearchParams& params) {
  if (!params.use_expert_schedule) return MakeExpertSchedule(task, params, {});
  try {
    SketchPolicy policy(task, params);
    return MakeExpertSchedule(task, params, policy.GenerateSketches());
  } catch (const std::exception& e) {
    ExpertSchedule out;
    out.reason = std::string("no sketches: ") + e.what();
    return out;
  }
}

std::vector<std::pair<std::string, State>> ExpertAlternatives(const SearchTask& task,
                                                              const SearchParams& params) {
  if (!params.use_expert_schedule || !task.target.kind->is_gpu) return {};
  try {
    SketchPolicy policy(task, params);
    return GpuExpertAlternatives(task, params, policy.GenerateSketches());
  } catch (const std::exception&) {
    return {};  // no sketches: MakeExpertSchedule gives the reason
  }
}

}  // namespace autosched
