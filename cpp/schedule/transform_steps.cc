// The loop-only steps (split, fuse, reorder, annotations, compute locations)
// and the step table's generic parts: JSON records and labels. The steps that
// rewrite the DAG (cache_read, cache_write, rfactor) are in dag_rewrite_steps.cc.
#include "schedule/transform_steps.h"

#include <algorithm>
#include <functional>
#include <sstream>

#include "schedule/state.h"
#include "support/error.h"

namespace autosched {

using nlohmann::json;

namespace {

// ---- helpers for records ----

void CheckArgs(const json& a, size_t n, const char* name) {
  AS_CHECK(a.is_array() && a.size() == n,
           "record '" << name << "' needs " << n << " arguments, got " << a.dump());
}

int GetInt(const json& a, size_t i, const char* name) {
  AS_CHECK(a[i].is_number_integer(),
           "record '" << name << "': argument " << i << " must be an integer, got " << a[i].dump());
  return a[i].get<int>();
}

std::vector<int> GetInts(const json& a, size_t i, const char* name) {
  AS_CHECK(a[i].is_array(),
           "record '" << name << "': argument " << i << " must be a list, got " << a[i].dump());
  std::vector<int> out;
  for (const auto& x : a[i]) {
    AS_CHECK(x.is_number_integer(), "record '" << name << "': argument " << i << " holds a non-integer");
    out.push_back(x.get<int>());
  }
  return out;
}

std::string GetString(const json& a, size_t i, const char* name) {
  AS_CHECK(a[i].is_string(),
           "record '" << name << "': argument " << i << " must be a string, got " << a[i].dump());
  return a[i].get<std::string>();
}

bool GetBool(const json& a, size_t i, const char* name) {
  AS_CHECK(a[i].is_boolean() || a[i].is_number_integer(),
           "record '" << name << "': argument " << i << " must be a bool, got " << a[i].dump());
  return a[i].is_boolean() ? a[i].get<bool>() : a[i].get<int>() != 0;
}

json OptionalToJson(const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); }

std::optional<int64_t> OptionalFromJson(const json& v, const char* name) {
  if (v.is_null()) return std::nullopt;
  AS_CHECK(v.is_number_integer(),
           "record '" << name << "': a length must be an integer or null, got " << v.dump());
  return v.get<int64_t>();
}

// ---- helpers for Python text ----

// A Python string literal (JSON's escapes are valid Python).
std::string Quote(const std::string& s) { return json(s).dump(); }

template <typename T>
std::string ListText(const std::vector<T>& xs, const std::function<std::string(const T&)>& fn) {
  std::string out = "[";
  for (size_t i = 0; i < xs.size(); ++i) out += (i ? ", " : "") + fn(xs[i]);
  return out + "]";
}

std::string IntList(const std::vector<int>& xs) {
  return ListText<int>(xs, [](const int& x) { return std::to_string(x); });
}

std::string LengthList(const std::vector<std::optional<int64_t>>& xs) {
  return ListText<std::optional<int64_t>>(
      xs, [](const std::optional<int64_t>& x) { return x ? std::to_string(*x) : std::string("None"); });
}

// ---- helpers for applying ----

void CheckComputeStage(StateNode& s, int stage_id) {
  const Stage& st = s.StageAt(stage_id);
  AS_CHECK(!st.is_placeholder(), "stage '" << st.name() << "' is a placeholder and has no loops");
}

// Moves stages attached at any of `from` of stage stage_id to node `to`.
void MoveAttachments(StateNode& s, int stage_id, const std::vector<int>& from, int to) {
  for (Stage& other : s.stages) {
    if (other.loc == ComputeLocKind::At && other.attach_stage == stage_id &&
        std::find(from.begin(), from.end(), other.attach_node) != from.end()) {
      other.attach_node = to;
    }
  }
}

// Lengths are in [1, kMaxIterExtent], and so is the range the parts cover
// (lowering computes the parent's value from them in 32-bit arithmetic).
void CheckSplitLengths(const Iterator& parent, const std::vector<std::optional<int64_t>>& lengths) {
  int64_t known = 1;
  bool all_known = parent.extent > 0;
  for (const auto& len : lengths) {
    if (!len) {
      all_known = false;
      continue;
    }
    AS_CHECK(*len > 0,
             "split of '" << parent.name << "' has a bad factor " << *len << " (lengths must be positive)");
    AS_CHECK(*len <= kMaxIterExtent, "split of '" << parent.name << "' has length " << *len << ", more than "
                                                  << kMaxIterExtent << " (loop indices are 32-bit integers)");
    AS_CHECK(known <= kMaxIterExtent / *len, "split of '" << parent.name << "' by " << LengthList(lengths)
                                                          << ": the lengths multiply to more than "
                                                          << kMaxIterExtent
                                                          << " (loop indices are 32-bit integers)");
    known *= *len;
  }
  if (!all_known) return;
  const int64_t rest = (parent.extent + known - 1) / known;  // the part that covers the rest
  AS_CHECK(rest <= kMaxIterExtent / known,
           "split of '" << parent.name << "' (extent " << parent.extent << ") by " << LengthList(lengths)
                        << " covers " << rest * known << " iterations, more than " << kMaxIterExtent
                        << " (loop indices are 32-bit integers)");
}

void ApplySplit(StateNode& s, int stage_id, int iter_id, const std::vector<std::optional<int64_t>>& lengths,
                bool inner_to_outer) {
  CheckComputeStage(s, stage_id);
  const int node = s.LeafAt(stage_id, iter_id);
  Stage& st = s.stages[stage_id];
  AS_CHECK(!lengths.empty(), "split of '" << st.nodes[node].name << "' needs at least one length");
  CheckSplitLengths(st.nodes[node], lengths);
  const Iterator parent = st.nodes[node];
  IterRelation rel;
  rel.kind = IterRelation::Kind::Split;
  rel.parents = {node};
  rel.lengths = lengths;
  rel.inner_to_outer = inner_to_outer;
  for (size_t k = 0; k <= lengths.size(); ++k) {
    rel.children.push_back(static_cast<int>(st.nodes.size()));
    st.nodes.push_back({parent.name + "." + std::to_string(k), -1, parent.kind, IteratorAnnotation::None});
  }
  st.relations.push_back(rel);
  PropagateExtents(&st);
  st.leaves.erase(st.leaves.begin() + iter_id);
  st.leaves.insert(st.leaves.begin() + iter_id, rel.children.begin(), rel.children.end());
  MoveAttachments(s, stage_id, {node}, rel.children.back());
}

}  // namespace

std::string PythonStageRef(const StateNode& s, int stage_id) {
  if (stage_id < 0 || stage_id >= static_cast<int>(s.stages.size())) return std::to_string(stage_id);
  const std::string& name = s.stages[stage_id].name();
  const auto same =
      std::count_if(s.stages.begin(), s.stages.end(), [&](const Stage& st) { return st.name() == name; });
  return same == 1 ? Quote(name) : std::to_string(stage_id);
}

// ---- split ----

void SplitStep::Apply(StateNode& s) const { ApplySplit(s, stage_id, iter_id, lengths, inner_to_outer); }
json SplitStep::Args() const {
  json lens = json::array();
  for (const auto& l : lengths) lens.push_back(OptionalToJson(l));
  return {stage_id, iter_id, OptionalToJson(extent), lens, inner_to_outer};
}
SplitStep SplitStep::FromArgs(const json& a) {
  CheckArgs(a, 5, kRecordName);
  SplitStep s;
  s.stage_id = GetInt(a, 0, kRecordName);
  s.iter_id = GetInt(a, 1, kRecordName);
  s.extent = OptionalFromJson(a[2], kRecordName);
  AS_CHECK(a[3].is_array(), "record 'SP': the lengths must be a list, got " << a[3].dump());
  for (const auto& l : a[3]) s.lengths.push_back(OptionalFromJson(l, kRecordName));
  s.inner_to_outer = GetBool(a, 4, kRecordName);
  return s;
}
std::string SplitStep::Python(const StateNode& b) const {
  return "s.split(" + PythonStageRef(b, stage_id) + ", " + std::to_string(iter_id) + ", " +
         LengthList(lengths) + (inner_to_outer ? "" : ", inner_to_outer=False") + ")";
}

// ---- follow_split ----

std::vector<std::optional<int64_t>> FollowSplitLengths(const std::vector<Step>& steps, int src_step_id,
                                                       int n_split) {
  AS_CHECK(src_step_id >= 0 && src_step_id < static_cast<int>(steps.size()),
           "follows step " << src_step_id << ", which does not exist");
  const auto* src = std::get_if<SplitStep>(&steps[src_step_id]);
  AS_CHECK(src != nullptr, "follows step " << src_step_id << ", which is not a split");
  AS_CHECK(n_split >= 1 && n_split <= static_cast<int>(src->lengths.size()),
           "n_split " << n_split << " must be in [1, " << src->lengths.size() << "]");
  std::vector<std::optional<int64_t>> out(src->lengths.begin(), src->lengths.begin() + n_split - 1);
  std::optional<int64_t> last = 1;  // the remaining inner lengths multiplied together
  for (size_t j = n_split - 1; j < src->lengths.size(); ++j) {
    last = (last && src->lengths[j]) ? std::optional<int64_t>(*last * *src->lengths[j]) : std::nullopt;
  }
  out.push_back(last);
  return out;
}

void FollowSplitStep::Apply(StateNode& s) const {
  ApplySplit(s, stage_id, iter_id, FollowSplitLengths(s.steps, src_step_id, n_split), true);
}
json FollowSplitStep::Args() const { return {stage_id, iter_id, src_step_id, n_split}; }
FollowSplitStep FollowSplitStep::FromArgs(const json& a) {
  CheckArgs(a, 4, kRecordName);
  return {GetInt(a, 0, kRecordName), GetInt(a, 1, kRecordName), GetInt(a, 2, kRecordName),
          GetInt(a, 3, kRecordName)};
}
std::string FollowSplitStep::Python(const StateNode& b) const {
  return "s.follow_split(" + PythonStageRef(b, stage_id) + ", " + std::to_string(iter_id) + ", " +
         std::to_string(src_step_id) + ", " + std::to_string(n_split) + ")";
}

// ---- follow_fused_split ----

std::optional<int64_t> FollowFusedSplitLength(const std::vector<Step>& steps, const std::vector<int>& src_ids,
                                              int level) {
  AS_CHECK(!src_ids.empty(), "follow_fused_split needs at least one source step");
  std::optional<int64_t> product = 1;
  for (int id : src_ids) {
    AS_CHECK(id >= 0 && id < static_cast<int>(steps.size()),
             "follows step " << id << ", which does not exist");
    const auto* src = std::get_if<SplitStep>(&steps[id]);
    AS_CHECK(src != nullptr, "follows step " << id << ", which is not a split");
    AS_CHECK(level >= 0 && level < static_cast<int>(src->lengths.size()),
             "level " << level << " is out of range for step " << id);
    const auto& len = src->lengths[level];
    // Saturates past kMaxIterExtent (the split then refuses the length) rather than overflowing.
    product = (product && len) ? std::optional<int64_t>(std::min(*product * *len, kMaxIterExtent + 1))
                               : std::nullopt;
  }
  return product;
}

void FollowFusedSplitStep::Apply(StateNode& s) const {
  ApplySplit(s, stage_id, iter_id, {FollowFusedSplitLength(s.steps, src_step_ids, level)}, factor_or_nparts);
}
json FollowFusedSplitStep::Args() const { return {stage_id, iter_id, src_step_ids, level, factor_or_nparts}; }
FollowFusedSplitStep FollowFusedSplitStep::FromArgs(const json& a) {
  CheckArgs(a, 5, kRecordName);
  return {GetInt(a, 0, kRecordName), GetInt(a, 1, kRecordName), GetInts(a, 2, kRecordName),
          GetInt(a, 3, kRecordName), GetBool(a, 4, kRecordName)};
}
std::string FollowFusedSplitStep::Python(const StateNode& b) const {
  return "s.follow_fused_split(" + PythonStageRef(b, stage_id) + ", " + std::to_string(iter_id) + ", " +
         IntList(src_step_ids) + ", " + std::to_string(level) + ", " + (factor_or_nparts ? "True" : "False") +
         ")";
}

// ---- fuse ----

void FuseStep::Apply(StateNode& s) const {
  CheckComputeStage(s, stage_id);
  AS_CHECK(!fused_ids.empty(), "fuse needs at least one iterator");
  std::vector<int> nodes;
  for (size_t k = 0; k < fused_ids.size(); ++k) {
    nodes.push_back(s.LeafAt(stage_id, fused_ids[k]));
    AS_CHECK(k == 0 || fused_ids[k] == fused_ids[k - 1] + 1,
             "fuse needs consecutive iterators, got " << IntList(fused_ids));
  }
  Stage& st = s.stages[stage_id];
  Iterator fused{"", 1, st.nodes[nodes[0]].kind, IteratorAnnotation::None};
  for (size_t k = 0; k < nodes.size(); ++k) {
    const Iterator& it = st.nodes[nodes[k]];
    AS_CHECK(it.kind == fused.kind, "fuse of spatial and reduce iterators ('" << st.nodes[nodes[0]].name
                                                                              << "', '" << it.name
                                                                              << "') is not supported");
    fused.name += (k ? "@" : "") + it.name;
    fused.extent = (fused.extent < 0 || it.extent < 0) ? -1 : fused.extent * it.extent;
    AS_CHECK(fused.extent <= kMaxIterExtent, "fuse of " << IntList(fused_ids) << " in stage '" << st.name()
                                                        << "' makes an iterator of more than "
                                                        << kMaxIterExtent
                                                        << " iterations (loop indices are 32-bit integers)");
  }
  IterRelation rel;
  rel.kind = IterRelation::Kind::Fuse;
  rel.parents = nodes;
  rel.children = {static_cast<int>(st.nodes.size())};
  st.nodes.push_back(fused);
  st.relations.push_back(rel);
  st.leaves.erase(st.leaves.begin() + fused_ids.front(), st.leaves.begin() + fused_ids.back() + 1);
  st.leaves.insert(st.leaves.begin() + fused_ids.front(), rel.children[0]);
  MoveAttachments(s, stage_id, nodes, rel.children[0]);
}
json FuseStep::Args() const { return {stage_id, fused_ids}; }
FuseStep FuseStep::FromArgs(const json& a) {
  CheckArgs(a, 2, kRecordName);
  return {GetInt(a, 0, kRecordName), GetInts(a, 1, kRecordName)};
}
std::string FuseStep::Python(const StateNode& b) const {
  return "s.fuse(" + PythonStageRef(b, stage_id) + ", " + IntList(fused_ids) + ")";
}

// ---- reorder ----

void ReorderStep::Apply(StateNode& s) const {
  CheckComputeStage(s, stage_id);
  Stage& st = s.stages[stage_id];
  std::vector<int> sorted = after_ids;
  std::sort(sorted.begin(), sorted.end());
  bool permutation = static_cast<int>(sorted.size()) == st.num_iters();
  for (size_t i = 0; permutation && i < sorted.size(); ++i) permutation = sorted[i] == static_cast<int>(i);
  AS_CHECK(permutation, "reorder of stage '" << st.name() << "' needs a permutation of its " << st.num_iters()
                                             << " iterators, got " << IntList(after_ids));
  std::vector<int> leaves;
  for (int i : after_ids) leaves.push_back(st.leaves[i]);
  st.leaves = leaves;
}
json ReorderStep::Args() const { return {stage_id, after_ids}; }
ReorderStep ReorderStep::FromArgs(const json& a) {
  CheckArgs(a, 2, kRecordName);
  return {GetInt(a, 0, kRecordName), GetInts(a, 1, kRecordName)};
}
std::string ReorderStep::Python(const StateNode& b) const {
  return "s.reorder(" + PythonStageRef(b, stage_id) + ", " + IntList(after_ids) + ")";
}

// ---- annotation ----

void AnnotationStep::Apply(StateNode& s) const {
  CheckComputeStage(s, stage_id);
  const IteratorAnnotation ann = annotation;
  Iterator& it = s.stages[stage_id].nodes[s.LeafAt(stage_id, iter_id)];
  const bool on_reduce_ok = ann == IteratorAnnotation::None || ann == IteratorAnnotation::Unroll;
  AS_CHECK(it.kind == IteratorKind::Spatial || on_reduce_ok,
           IteratorAnnotationName(ann) << " on reduce iterator '" << it.name << "' of stage '"
                                       << s.stages[stage_id].name() << "' is not allowed");
  it.annotation = ann;
}
json AnnotationStep::Args() const { return {stage_id, iter_id, IteratorAnnotationName(annotation)}; }
AnnotationStep AnnotationStep::FromArgs(const json& a) {
  CheckArgs(a, 3, kRecordName);
  AnnotationStep step{GetInt(a, 0, kRecordName), GetInt(a, 1, kRecordName)};
  if (a[2].is_string()) {
    step.annotation = ParseIteratorAnnotation(a[2].get<std::string>());
  } else {
    // Version-1 records stored the ordinal, in the order the enum had then;
    // this frozen list keeps them meaning what they meant.
    static constexpr IteratorAnnotation kVersion1Order[] = {
        IteratorAnnotation::None,       IteratorAnnotation::Unroll,    IteratorAnnotation::Vectorize,
        IteratorAnnotation::Parallel,   IteratorAnnotation::VThread,   IteratorAnnotation::BlockIdxX,
        IteratorAnnotation::BlockIdxY,  IteratorAnnotation::BlockIdxZ, IteratorAnnotation::ThreadIdxX,
        IteratorAnnotation::ThreadIdxY, IteratorAnnotation::ThreadIdxZ};
    const int ordinal = GetInt(a, 2, kRecordName);
    AS_CHECK(ordinal >= 0 && ordinal < static_cast<int>(std::size(kVersion1Order)),
             "record " << kRecordName << ": unknown annotation " << ordinal);
    step.annotation = kVersion1Order[ordinal];
  }
  return step;
}
std::string AnnotationStep::Python(const StateNode& b) const {
  const IteratorAnnotation ann = annotation;
  const std::string args = PythonStageRef(b, stage_id) + ", " + std::to_string(iter_id);
  switch (ann) {
    case IteratorAnnotation::Unroll: return "s.unroll(" + args + ")";
    case IteratorAnnotation::Vectorize: return "s.vectorize(" + args + ")";
    case IteratorAnnotation::Parallel: return "s.parallel(" + args + ")";
    default: return "s.bind(" + args + ", " + Quote(IteratorAnnotationName(ann)) + ")";
  }
}

// ---- pragma ----

void PragmaStep::Apply(StateNode& s) const {
  CheckComputeStage(s, stage_id);
  s.LeafAt(stage_id, iter_id);
  if (pragma_type == "double_buffer") {
    Stage& st = s.stages[stage_id];
    // A shared tile fetched by the group, or a private register tile read
    // from it (the next reduction step's values loaded during this one).
    AS_CHECK(st.scope == MemScope::Shared || st.scope == MemScope::Local,
             "pragma double_buffer needs a stage of scope 'shared' or 'local', got '"
                 << st.name() << "' (scope " << MemScopeName(st.scope) << ")");
    st.double_buffer = true;
    return;
  }
  if (pragma_type == "storage_transpose") {
    Stage& st = s.stages[stage_id];
    AS_CHECK(st.scope == MemScope::Shared && st.op->axis.size() >= 2,
             "pragma storage_transpose needs a stage of scope 'shared' with two or more dimensions, got '"
                 << st.name() << "' (scope " << MemScopeName(st.scope) << ", " << st.op->axis.size()
                 << " dimensions)");
    st.storage_transposed = true;
    return;
  }
  const std::string key = pragma_type.substr(0, pragma_type.find('$') + 1);
  AS_CHECK(key == "auto_unroll_max_step$" || key == "block_swizzle$",
           "unknown pragma '"
               << pragma_type
               << "' (supported: auto_unroll_max_step$N, block_swizzle$N, double_buffer, storage_transpose)");
  int64_t value = -1;
  try {
    size_t used = 0;
    value = std::stoll(pragma_type.substr(key.size()), &used);
    if (used != pragma_type.size() - key.size()) value = -1;
  } catch (const std::exception&) {
    value = -1;
  }
  AS_CHECK(value >= 0, "pragma '" << pragma_type << "' needs a non-negative integer after '$'");
  if (key == "auto_unroll_max_step$") {
    s.stages[stage_id].auto_unroll_max_step = value;
    return;
  }
  Stage& st = s.stages[stage_id];
  const int node = st.leaves[iter_id];
  bool fused = false;
  for (const IterRelation& rel : st.relations)
    fused |= rel.kind == IterRelation::Kind::Fuse && rel.children[0] == node && rel.parents.size() >= 2;
  AS_CHECK(fused, "pragma block_swizzle needs a loop fused from two or more, got '"
                      << st.nodes[node].name << "' of '" << st.name() << "'");
  AS_CHECK(value >= 1, "pragma block_swizzle needs a group width >= 1, got " << value);
  st.swizzle_node = node;
  st.swizzle_width = value;
}
json PragmaStep::Args() const { return {stage_id, iter_id, pragma_type}; }
PragmaStep PragmaStep::FromArgs(const json& a) {
  CheckArgs(a, 3, kRecordName);
  return {GetInt(a, 0, kRecordName), GetInt(a, 1, kRecordName), GetString(a, 2, kRecordName)};
}
std::string PragmaStep::Python(const StateNode& b) const {
  return "s.pragma(" + PythonStageRef(b, stage_id) + ", " + std::to_string(iter_id) + ", " +
         Quote(pragma_type) + ")";
}

// ---- storage_align ----

void StorageAlignStep::Apply(StateNode& s) const {
  CheckComputeStage(s, stage_id);
  const int node = s.LeafAt(stage_id, iter_id);
  Stage& st = s.stages[stage_id];
  AS_CHECK(node < static_cast<int>(st.op->axis.size()), "storage_align needs an unsplit spatial axis of '"
                                                            << st.name() << "', got '" << st.nodes[node].name
                                                            << "'");
  AS_CHECK(factor > 0 && offset >= 0 && offset < factor,
           "storage_align needs factor > 0 and 0 <= offset < factor, got " << factor << ", " << offset);
  st.storage_align.push_back({node, factor, offset});
}
json StorageAlignStep::Args() const { return {stage_id, iter_id, factor, offset}; }
StorageAlignStep StorageAlignStep::FromArgs(const json& a) {
  CheckArgs(a, 4, kRecordName);
  return {GetInt(a, 0, kRecordName), GetInt(a, 1, kRecordName), GetInt(a, 2, kRecordName),
          GetInt(a, 3, kRecordName)};
}
std::string StorageAlignStep::Python(const StateNode& b) const {
  return "s.storage_align(" + PythonStageRef(b, stage_id) + ", " + std::to_string(iter_id) + ", " +
         std::to_string(factor) + ", " + std::to_string(offset) + ")";
}

// ---- compute locations ----

void ComputeAtStep::Apply(StateNode& s) const {
  CheckComputeStage(s, stage_id);
  const int node = s.LeafAt(target_stage_id, target_iter_id);
  Stage& st = s.stages[stage_id];
  const Stage& target = s.stages[target_stage_id];
  AS_CHECK(target_stage_id != stage_id, "stage '" << st.name() << "' cannot be computed at itself");
  AS_CHECK(target_stage_id > stage_id, "compute_at of '" << st.name() << "' at '" << target.name()
                                                         << "', which comes before it (not a consumer)");
  AS_CHECK(target.loc != ComputeLocKind::Inlined, "compute_at target '" << target.name() << "' is inlined");
  AS_CHECK(!s.IsOutput(stage_id), "compute_at of output '" << st.name() << "' is not supported");
  st.loc = ComputeLocKind::At;
  st.attach_stage = target_stage_id;
  st.attach_node = node;
  st.loc_step = static_cast<int>(s.steps.size());
}
json ComputeAtStep::Args() const { return {stage_id, target_stage_id, target_iter_id}; }
ComputeAtStep ComputeAtStep::FromArgs(const json& a) {
  CheckArgs(a, 3, kRecordName);
  return {GetInt(a, 0, kRecordName), GetInt(a, 1, kRecordName), GetInt(a, 2, kRecordName)};
}
std::string ComputeAtStep::Python(const StateNode& b) const {
  return "s.compute_at(" + PythonStageRef(b, stage_id) + ", " + PythonStageRef(b, target_stage_id) + ", " +
         std::to_string(target_iter_id) + ")";
}

void ComputeInlineStep::Apply(StateNode& s) const {
  CheckComputeStage(s, stage_id);
  Stage& st = s.stages[stage_id];
  AS_CHECK(st.op->reduce_axis.empty(), "stage '" << st.name() << "' has a reduction and cannot be inlined");
  AS_CHECK(!s.IsOutput(stage_id), "stage '" << st.name() << "' is an output and cannot be inlined");
  for (const Stage& other : s.stages) {
    AS_CHECK(
        !(other.loc == ComputeLocKind::At && other.attach_stage == stage_id),
        "stage '" << st.name() << "' cannot be inlined: stage '" << other.name() << "' is attached to it");
  }
  st.loc = ComputeLocKind::Inlined;
  st.attach_stage = st.attach_node = -1;
  st.loc_step = static_cast<int>(s.steps.size());
}
json ComputeInlineStep::Args() const { return {stage_id}; }
ComputeInlineStep ComputeInlineStep::FromArgs(const json& a) {
  CheckArgs(a, 1, kRecordName);
  return {GetInt(a, 0, kRecordName)};
}
std::string ComputeInlineStep::Python(const StateNode& b) const {
  return "s.compute_inline(" + PythonStageRef(b, stage_id) + ")";
}

void ComputeRootStep::Apply(StateNode& s) const {
  CheckComputeStage(s, stage_id);
  Stage& st = s.stages[stage_id];
  st.loc = ComputeLocKind::Root;
  st.attach_stage = st.attach_node = -1;
  st.loc_step = static_cast<int>(s.steps.size());
}
json ComputeRootStep::Args() const { return {stage_id}; }
ComputeRootStep ComputeRootStep::FromArgs(const json& a) {
  CheckArgs(a, 1, kRecordName);
  return {GetInt(a, 0, kRecordName)};
}
std::string ComputeRootStep::Python(const StateNode& b) const {
  return "s.compute_root(" + PythonStageRef(b, stage_id) + ")";
}

// ---- the table ----

json StepToJson(const Step& step) {
  return std::visit(
      [](const auto& s) {
        json record = json::array({s.kRecordName});
        for (const auto& arg : s.Args()) record.push_back(arg);
        return record;
      },
      step);
}

namespace {

template <size_t I = 0>
Step ParseAlternative(const std::string& name, const json& args) {
  if constexpr (I == std::variant_size_v<Step>) {
    AS_CHECK(false, "unknown step record '" << name << "'");
    return Step{};
  } else {
    using T = std::variant_alternative_t<I, Step>;
    if (name == T::kRecordName) return T::FromArgs(args);
    return ParseAlternative<I + 1>(name, args);
  }
}

}  // namespace

Step StepFromJson(const json& record) {
  AS_CHECK(record.is_array() && !record.empty() && record[0].is_string(),
           "a step record must be [\"NAME\", args...], got " << record.dump());
  const json args(record.begin() + 1, record.end());
  try {
    return ParseAlternative(record[0].get<std::string>(), args);
  } catch (const json::exception& e) {
    AS_CHECK(false, "malformed step record " << record.dump() << ": " << e.what());
  }
  return Step{};
}

const char* StepRecordName(const Step& step) {
  return std::visit([](const auto& s) { return s.kRecordName; }, step);
}

std::string StepLabel(const Step& step, int index) {
  return "step " + std::to_string(index) + " (" + std::visit([](const auto& s) { return s.kName; }, step) +
         ")";
}

}  // namespace autosched
