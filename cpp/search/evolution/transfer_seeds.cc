#include "search/evolution/transfer_seeds.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "search/rules/mutation_rules.h"
#include "search/rules/search_util.h"
#include "support/error.h"

namespace autosched {
namespace {

std::vector<int64_t> DivisorsOf(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d) continue;
    out.push_back(d);
    if (d != n / d) out.push_back(n / d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The divisor of n nearest to `want` in ratio, at most `limit` (ties: the
// smaller one).
int64_t NearestDivisor(int64_t n, int64_t want, int64_t limit) {
  int64_t best = 1;
  double best_gap = INFINITY;
  for (int64_t d : DivisorsOf(n)) {
    if (d > limit) break;
    const double gap = std::abs(std::log(static_cast<double>(d)) - std::log(static_cast<double>(want)));
    if (gap < best_gap - 1e-12) {
      best = d;
      best_gap = gap;
    }
  }
  return best;
}

// The split refitted to `extent` (the iterator's extent in the replay).
void FitSplit(SplitStep* split, int64_t extent, int64_t max_innermost) {
  std::vector<int64_t> old;
  int64_t product = 1;
  for (const auto& len : split->lengths) {
    if (!len || *len < 1) return;  // unknown: left to the search's fill rule
    old.push_back(*len);
    product *= *len;
  }
  const int64_t old_extent = split->extent.value_or(-1);
  const bool divided = old_extent <= 0 || old_extent % product == 0;
  if (divided) {
    // The innermost part is the last length with inner_to_outer, else the rest.
    const int64_t inner_limit = split->inner_to_outer ? max_innermost : extent;
    const std::vector<int64_t> lengths = FitSplitLengths(old, extent, inner_limit);
    split->lengths.assign(lengths.begin(), lengths.end());
  }
  split->extent = extent;
}

}  // namespace

std::vector<int64_t> FitSplitLengths(const std::vector<int64_t>& old, int64_t extent, int64_t max_innermost) {
  std::vector<int64_t> out(old.size(), 1);
  int64_t rest = std::max<int64_t>(1, extent);
  for (int k = static_cast<int>(old.size()) - 1; k >= 0; --k) {
    const int64_t limit = k == static_cast<int>(old.size()) - 1 ? std::max<int64_t>(1, max_innermost) : rest;
    out[k] = NearestDivisor(rest, std::max<int64_t>(1, old[k]), limit);
    rest /= out[k];
  }
  return out;
}

RefitResult RefitState(const SketchContext& ctx, const State& source) {
  RefitResult r;
  const ComputeDAG& dag = ctx.task.compute_dag;
  if (source.init_dag().structure_key() != dag.structure_key()) {
    r.failure = "dissimilar";
    r.message = "the source's compute structure " + source.init_dag().structure_key() +
                " is not the task's " + dag.structure_key();
    return r;
  }
  State s(dag);
  try {
    const std::vector<Step>& steps = source.steps();
    for (const Step& original : steps) {
      Step step = original;
      if (auto* split = std::get_if<SplitStep>(&step)) {
        AS_CHECK(split->stage_id >= 0 && split->stage_id < static_cast<int>(s.stages().size()) &&
                     split->iter_id >= 0 && split->iter_id < s.stage(split->stage_id).num_iters(),
                 "split of a stage or iterator the task does not have");
        const int64_t extent = s.stage(split->stage_id).iter(split->iter_id).extent;
        if (extent > 0) FitSplit(split, extent, ctx.params.max_innermost_split_factor);
      }
      s = s.Apply(step);
    }
  } catch (const std::exception& e) {
    r.failure = "replay";
    r.message = e.what();
    return r;
  }
  r.failure = CheckState(s, &r.message);
  if (r.failure.empty()) r.state = std::move(s);
  return r;
}

std::vector<State> RefitSeeds(const SketchContext& ctx, const std::vector<State>& sources, int64_t max_seeds,
                              TransferReport* report) {
  AS_ICHECK(report != nullptr);
  std::vector<State> seeds;
  std::unordered_set<std::string> keys;
  report->given += static_cast<int64_t>(sources.size());
  for (const State& source : sources) {
    if (static_cast<int64_t>(seeds.size()) >= max_seeds) break;
    RefitResult r = RefitState(ctx, source);
    if (!r.state) {
      ++report->drops[r.failure];
      report->messages.emplace(r.failure, r.message);
      continue;
    }
    if (!keys.insert(StateKey(*r.state)).second) {
      ++report->drops["duplicate"];
      continue;
    }
    seeds.push_back(std::move(*r.state));
  }
  report->kept = static_cast<int64_t>(seeds.size());
  return seeds;
}

}  // namespace autosched
