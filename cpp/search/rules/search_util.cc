#include "search/rules/search_util.h"

#include <algorithm>
#include <functional>
#include <set>

#include "support/error.h"

namespace autosched {

State FuseRange(const State& s, int stage_id, int first, int count) {
  if (count <= 1) return s;
  std::vector<int> ids(count);
  for (int k = 0; k < count; ++k) ids[k] = first + k;
  return s.Fuse(stage_id, ids);
}

bool HasLoops(const State& s, int stage_id) {
  const Stage& st = s.stage(stage_id);
  return !st.is_placeholder() && st.loc != ComputeLocKind::Inlined;
}

bool HasReduceIter(const Stage& st) {
  for (int i = 0; i < st.num_iters(); ++i) {
    if (st.iter(i).kind == IteratorKind::Reduce) return true;
  }
  return false;
}

bool IsUntouched(const Stage& st) { return st.relations.empty() && st.num_iters() == st.num_root; }

bool IsFreshRootStage(const State& s, int stage_id) {
  const Stage& st = s.stage(stage_id);
  return HasLoops(s, stage_id) && st.loc == ComputeLocKind::Root && IsUntouched(st);
}

int64_t SpatialProduct(const Stage& st) {
  int64_t product = 1;
  for (const IterVar& iv : st.op->axis) product *= iv.extent;
  return product;
}

int64_t ReduceProduct(const Stage& st) {
  int64_t product = 1;
  for (const IterVar& iv : st.op->reduce_axis) product *= iv.extent;
  return product;
}

bool NeedsMultiLevelTiling(const State& s, int stage_id) {
  return HasLoops(s, stage_id) && s.dag().access(stage_id).needs_multi_level_tiling;
}

bool IsCacheWriteStage(const State& s, int stage_id) {
  const Stage& st = s.stage(stage_id);
  if (st.is_placeholder() || st.scope != MemScope::Local) return false;
  const auto& consumers = s.dag().access(stage_id).consumers;
  return consumers.size() == 1 && s.dag().ElementWiseMatch(stage_id, consumers[0]);
}

int ElementwiseFusionTarget(const State& s, int stage_id) {
  // The stages that read stage_id's values once the inlined ones are looked
  // through (a SiLU's x * sigmoid(x) reads x twice, both in one stage), each
  // path element-wise.
  std::set<int> readers;
  bool element_wise = true;
  std::function<void(int)> visit = [&](int current) {
    for (int consumer : s.dag().access(current).consumers) {
      if (!s.dag().ElementWiseMatch(current, consumer)) {
        element_wise = false;
        return;
      }
      if (s.stage(consumer).loc == ComputeLocKind::Inlined) {
        visit(consumer);
      } else {
        readers.insert(consumer);
      }
    }
  };
  visit(stage_id);
  if (!element_wise || readers.size() != 1) return -1;
  const int target = *readers.begin();
  const Stage& st = s.stage(target);
  const bool fusible =
      st.loc == ComputeLocKind::Root && !HasReduceIter(st) && IsUntouched(st) && st.num_iters() > 0;
  return fusible ? target : -1;
}

TiledStage MultiLevelTile(const State& s, int stage_id, const std::string& structure) {
  const int n_space = static_cast<int>(std::count(structure.begin(), structure.end(), 'S'));
  const int n_reduce = static_cast<int>(std::count(structure.begin(), structure.end(), 'R'));
  AS_CHECK(n_space >= 1 && n_reduce >= 1 && n_space + n_reduce == static_cast<int>(structure.size()),
           "tiling structure '" << structure << "' must be made of 'S' and 'R', at least one of each");
  TiledStage out{s, {}};
  // parts[k]: the positions of iterator k's parts right after its split.
  std::vector<std::vector<int>> parts;
  std::vector<bool> spatial;
  int pos = 0;
  const int num_iters = s.stage(stage_id).num_iters();
  for (int k = 0; k < num_iters; ++k) {
    const bool is_spatial = out.state.stage(stage_id).iter(pos).kind == IteratorKind::Spatial;
    const int n = is_spatial ? n_space : n_reduce;
    spatial.push_back(is_spatial);
    parts.emplace_back();
    if (n > 1) {
      if (is_spatial) out.spatial_split_steps.push_back(static_cast<int>(out.state.steps().size()));
      out.state = out.state.Split(stage_id, pos, std::vector<std::optional<int64_t>>(n - 1, std::nullopt));
    }
    for (int p = 0; p < n; ++p) parts.back().push_back(pos++);
  }
  // Level by level: the next unused part of every iterator of that kind.
  std::vector<int> order;
  int space_level = 0, reduce_level = 0;
  for (char c : structure) {
    const bool want_spatial = c == 'S';
    const int level = want_spatial ? space_level++ : reduce_level++;
    for (int k = 0; k < num_iters; ++k) {
      if (spatial[k] == want_spatial) order.push_back(parts[k][level]);
    }
  }
  out.state = out.state.Reorder(stage_id, order);
  return out;
}

std::pair<State, int> FollowTiling(const State& s, int stage_id, const std::vector<int>& split_steps,
                                   int level) {
  const Stage& st = s.stage(stage_id);
  AS_ICHECK(IsUntouched(st) && static_cast<int>(split_steps.size()) == st.num_iters() && level >= 1);
  State out = s;
  const int rank = st.num_iters();
  for (int k = 0; k < rank; ++k) {
    out = out.Apply(FollowSplitStep{stage_id, k * (level + 1), split_steps[k], level});
  }
  // After the splits iterator k's part p is at k * (level + 1) + p.
  std::vector<int> order;
  for (int p = 0; p <= level; ++p) {
    for (int k = 0; k < rank; ++k) order.push_back(k * (level + 1) + p);
  }
  out = out.Reorder(stage_id, order);
  return {out, level * rank - 1};
}

std::vector<int64_t> UsefulUnrollSteps(const std::vector<int64_t>& candidates, int64_t iterations) {
  std::vector<int64_t> sorted = candidates;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> out;
  for (int64_t v : sorted) {
    out.push_back(v);
    if (v >= iterations) break;
  }
  return out;
}

int64_t StageIterations(const Stage& st) {
  int64_t product = 1;
  for (int i = 0; i < st.num_iters(); ++i) {
    product *= std::max<int64_t>(1, st.iter(i).extent);
    if (product > kMaxIterExtent) return kMaxIterExtent;
  }
  return product;
}

State InterchangeReductions(const State& state) {
  State s = state;
  for (int id = 0; id < static_cast<int>(s.stages().size()); ++id) {
    const Stage& stage = s.stage(id);
    if (stage.is_placeholder() || stage.loc != ComputeLocKind::Root || stage.num_iters() < 2) continue;
    std::vector<int> spatial, reduce;
    for (int i = 0; i < stage.num_iters(); ++i) {
      (stage.iter(i).kind == IteratorKind::Spatial ? spatial : reduce).push_back(i);
    }
    if (spatial.empty() || reduce.empty() || spatial.back() > reduce.back()) continue;
    std::vector<int> order(spatial.begin(), spatial.end() - 1);
    order.insert(order.end(), reduce.begin(), reduce.end());
    order.push_back(spatial.back());
    s = s.Reorder(id, order);
  }
  return s;
}

}  // namespace autosched
