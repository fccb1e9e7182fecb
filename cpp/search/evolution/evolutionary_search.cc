#include "search/evolution/evolutionary_search.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include "search/rules/parallel.h"
#include "search/rules/search_util.h"
#include "support/error.h"

namespace autosched {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The best states seen, at most `capacity`, none measured, each once.
class BestHeap {
 public:
  BestHeap(size_t capacity, const std::unordered_set<std::string>& measured)
      : capacity_(capacity), measured_(measured) {}

  void Offer(double score, const std::string& key, const State& state) {
    if (!std::isfinite(score) || measured_.count(key) || kept_.count(key)) return;
    if (heap_.size() == capacity_) {
      if (score <= heap_.front().score) return;
      std::pop_heap(heap_.begin(), heap_.end(), Lower);
      kept_.erase(heap_.back().key);
      heap_.pop_back();
    }
    heap_.push_back({score, key, state});
    std::push_heap(heap_.begin(), heap_.end(), Lower);
    kept_.insert(key);
  }

  std::vector<State> BestFirst() {
    std::sort(heap_.begin(), heap_.end(), [](const Entry& a, const Entry& b) { return a.score > b.score; });
    std::vector<State> out;
    for (Entry& e : heap_) out.push_back(std::move(e.state));
    return out;
  }

 private:
  struct Entry {
    double score;
    std::string key;
    State state;
  };
  // A min-heap on the score: the front is the worst kept state.
  static bool Lower(const Entry& a, const Entry& b) { return a.score > b.score; }

  size_t capacity_;
  const std::unordered_set<std::string>& measured_;
  std::vector<Entry> heap_;
  std::unordered_set<std::string> kept_;
};

// States scored at once when the search has a deadline: the deadline is
// checked between slices (a slice takes tens of milliseconds).
constexpr size_t kScoreSlice = 128;

// Scores every state, asking the model once per distinct state (with the
// function it lowered to, where known). With a deadline the distinct states
// are scored a slice at a time; those left when it passes get
// kInvalidScore, and *cut is set.
std::vector<double> ScorePopulation(const SketchContext& ctx, const std::vector<State>& pop,
                                    const std::vector<LoweredPtr>& lowered,
                                    const std::vector<std::string>& keys, CostModel* model,
                                    EvolutionStats* stats, Clock::time_point deadline, bool* cut) {
  std::unordered_map<std::string, size_t> slot;
  std::vector<State> distinct;
  std::vector<LoweredPtr> distinct_lowered;
  std::vector<size_t> index(pop.size());
  for (size_t i = 0; i < pop.size(); ++i) {
    auto [it, fresh] = slot.emplace(keys[i], distinct.size());
    if (fresh) {
      distinct.push_back(pop[i]);
      distinct_lowered.push_back(lowered[i]);
    } else if (!distinct_lowered[it->second]) {
      distinct_lowered[it->second] = lowered[i];
    }
    index[i] = it->second;
  }
  const auto start = Clock::now();
  std::vector<double> distinct_scores;
  if (deadline == Clock::time_point::max()) {
    distinct_scores = model->PredictLowered(ctx.task, distinct, distinct_lowered);
  } else {
    distinct_scores.assign(distinct.size(), kInvalidScore);
    for (size_t begin = 0; begin < distinct.size(); begin += kScoreSlice) {
      if (Clock::now() >= deadline) {
        *cut = true;
        break;
      }
      const size_t end = std::min(distinct.size(), begin + kScoreSlice);
      const std::vector<State> slice(distinct.begin() + begin, distinct.begin() + end);
      const std::vector<LoweredPtr> slice_lowered(distinct_lowered.begin() + begin,
                                                  distinct_lowered.begin() + end);
      const std::vector<double> slice_scores = model->PredictLowered(ctx.task, slice, slice_lowered);
      AS_ICHECK(slice_scores.size() == slice.size());
      std::copy(slice_scores.begin(), slice_scores.end(), distinct_scores.begin() + begin);
    }
  }
  stats->cost_model_seconds += SecondsSince(start);
  AS_ICHECK(distinct_scores.size() == distinct.size());
  stats->scored += static_cast<int64_t>(distinct.size());
  std::vector<double> scores(pop.size());
  for (size_t i = 0; i < pop.size(); ++i) scores[i] = distinct_scores[index[i]];
  return scores;
}

// Index drawn with probability proportional to its weight (cumulative sums).
size_t Choose(const std::vector<double>& cumulative, std::mt19937* rng) {
  const double u = RandomUnit(rng) * cumulative.back();
  auto it = std::upper_bound(cumulative.begin(), cumulative.end(), u);
  return std::min<size_t>(it - cumulative.begin(), cumulative.size() - 1);
}

// What one slot of the next generation got.
struct Slot {
  State state;
  LoweredPtr lowered;
  bool mutated = false;
  int attempts = 0;
  std::vector<std::pair<std::string, std::string>> failures;  // (reason, message)
};

constexpr int kTriesPerSlot = 4;

Slot BreedSlot(const SketchContext& ctx, const std::vector<State>& pop,
               const std::vector<LoweredPtr>& lowered, const std::vector<double>& cumulative,
               const MutationRuleList& rules, std::mt19937* rng) {
  size_t parent = Choose(cumulative, rng);
  Slot slot{pop[parent], lowered[parent], false, 0, {}};
  for (int t = 0; t < kTriesPerSlot; ++t) {
    if (t > 0) parent = Choose(cumulative, rng);
    if (RandomUnit(rng) >= ctx.params.evolutionary_search_mutation_prob) {
      slot.state = pop[parent];
      slot.lowered = lowered[parent];
      return slot;
    }
    ++slot.attempts;
    MutationResult r = MutateState(ctx, pop[parent], rules, rng);
    if (r.state) {
      slot.state = std::move(*r.state);
      slot.lowered = std::move(r.lowered);
      slot.mutated = true;
      return slot;
    }
    slot.failures.emplace_back(r.failure, r.message);
    slot.state = pop[parent];
    slot.lowered = lowered[parent];
  }
  return slot;  // a copy of the last parent
}

// The next generation; *lowered (what each state of `pop` lowers to) becomes
// that of the next.
// A slot whose turn comes after `deadline` copies the first state instead
// (the caller drops a generation cut so), and *cut is set.
std::vector<State> Breed(const SketchContext& ctx, const std::vector<State>& pop,
                         std::vector<LoweredPtr>* lowered, const std::vector<double>& weights,
                         const MutationRuleList& rules, uint64_t seed, int generation, EvolutionStats* stats,
                         Clock::time_point deadline, bool* cut) {
  std::vector<double> cumulative(weights.size());
  std::partial_sum(weights.begin(), weights.end(), cumulative.begin());
  const int64_t size = std::max<int64_t>(1, ctx.params.evolutionary_search_population);
  std::vector<Slot> slots(size, Slot{pop.front(), nullptr, false, 0, {}});
  std::atomic<bool> late{false};
  RunParallel(size, static_cast<int>(ctx.params.num_threads), [&](int64_t i) {
    if (late.load(std::memory_order_relaxed) || Clock::now() >= deadline) {
      late.store(true, std::memory_order_relaxed);
      return;
    }
    std::mt19937 rng = RngFor(seed, static_cast<uint64_t>(generation), static_cast<uint64_t>(i));
    slots[i] = BreedSlot(ctx, pop, *lowered, cumulative, rules, &rng);
  });
  std::vector<State> next;
  next.reserve(size);
  lowered->clear();
  for (Slot& s : slots) {
    lowered->push_back(std::move(s.lowered));
    stats->attempts += s.attempts;
    (s.mutated ? stats->mutated : stats->copied) += 1;
    for (auto& [reason, message] : s.failures) {
      ++stats->failures[reason];
      if (!message.empty()) stats->failure_messages.emplace(reason, message);
    }
    next.push_back(std::move(s.state));
  }
  if (late.load()) *cut = true;
  return next;
}

}  // namespace

std::vector<double> SelectionWeights(const std::vector<double>& scores) {
  std::vector<double> w(scores.size(), 0.0);
  bool positive = false;
  for (size_t i = 0; i < scores.size(); ++i) {
    if (std::isfinite(scores[i]) && scores[i] > 0) {
      w[i] = scores[i];
      positive = true;
    }
  }
  if (positive) return w;
  std::vector<size_t> order;
  for (size_t i = 0; i < scores.size(); ++i) {
    if (std::isfinite(scores[i])) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] < scores[b]; });
  for (size_t r = 0; r < order.size(); ++r) w[order[r]] = static_cast<double>(r + 1);
  return w;
}

std::vector<State> EvolutionarySearch(const SketchContext& ctx, const std::vector<State>& init_population,
                                      int num_out, CostModel* model,
                                      const std::unordered_set<std::string>& measured,
                                      const MutationRuleList& rules, uint64_t seed, EvolutionStats* stats,
                                      const std::vector<LoweredPtr>& init_lowered, Generation* last,
                                      Clock::time_point deadline) {
  AS_CHECK(num_out >= 1, "the evolutionary search needs to return at least 1 state, got " << num_out);
  AS_ICHECK(model != nullptr && stats != nullptr);
  BestHeap heap(static_cast<size_t>(num_out), measured);
  std::vector<State> pop = init_population;
  std::vector<LoweredPtr> lowered = init_lowered;
  lowered.resize(pop.size());
  const int64_t num_iters = std::max<int64_t>(0, ctx.params.evolutionary_search_num_iters);
  bool bred = false;
  bool cut = false;  // the deadline passed: the search stops where it is
  for (int k = 0; k <= num_iters && !pop.empty() && Clock::now() < deadline; ++k) {
    auto start = Clock::now();
    std::vector<std::string> keys(pop.size());
    RunParallel(static_cast<int64_t>(pop.size()), static_cast<int>(ctx.params.num_threads),
                [&](int64_t i) { keys[i] = StateKey(pop[i]); });
    stats->search_seconds += SecondsSince(start);
    const std::vector<double> scores = ScorePopulation(ctx, pop, lowered, keys, model, stats, deadline, &cut);
    ++stats->generations;
    for (size_t i = 0; i < pop.size(); ++i) {
      heap.Offer(scores[i], keys[i], pop[i]);
      if (std::isfinite(scores[i])) stats->best_score = std::max(stats->best_score, scores[i]);
    }
    if (k == num_iters || cut) break;
    const std::vector<double> weights = SelectionWeights(scores);
    if (std::all_of(weights.begin(), weights.end(), [](double w) { return w <= 0; })) break;
    start = Clock::now();
    pop = Breed(ctx, pop, &lowered, weights, rules, seed, k, stats, deadline, &cut);
    bred = true;
    stats->search_seconds += SecondsSince(start);
    if (cut) break;  // a generation bred in part is not scored
  }
  if (last != nullptr) {
    // Only a whole bred generation (of the population's size) is worth going on from.
    *last = bred && !cut ? Generation{std::move(pop), std::move(lowered)} : Generation{};
  }
  return heap.BestFirst();
}

}  // namespace autosched
