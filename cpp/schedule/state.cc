#include "schedule/state.h"

#include <algorithm>
#include <functional>
#include <sstream>

#include "schedule/infer_bound.h"
#include "support/enum_table.h"
#include "support/error.h"

namespace autosched {

namespace {
constexpr EnumEntry<IteratorKind> kIteratorKindNames[] = {
    {IteratorKind::Spatial, "spatial"}, {IteratorKind::Reduce, "reduce"}, {IteratorKind::Mixed, "mixed"}};
constexpr EnumEntry<IteratorAnnotation> kIteratorAnnotationNames[] = {
    {IteratorAnnotation::None, "none"},
    {IteratorAnnotation::Unroll, "unroll"},
    {IteratorAnnotation::Vectorize, "vectorize"},
    {IteratorAnnotation::Parallel, "parallel"},
    {IteratorAnnotation::VThread, "vthread"},
    {IteratorAnnotation::BlockIdxX, "blockIdx.x"},
    {IteratorAnnotation::BlockIdxY, "blockIdx.y"},
    {IteratorAnnotation::BlockIdxZ, "blockIdx.z"},
    {IteratorAnnotation::ThreadIdxX, "threadIdx.x"},
    {IteratorAnnotation::ThreadIdxY, "threadIdx.y"},
    {IteratorAnnotation::ThreadIdxZ, "threadIdx.z"},
};
constexpr EnumEntry<ComputeLocKind> kComputeLocKindNames[] = {
    {ComputeLocKind::Root, "root"}, {ComputeLocKind::Inlined, "inlined"}, {ComputeLocKind::At, "at"}};
}  // namespace

const char* IteratorKindName(IteratorKind k) { return EnumName(kIteratorKindNames, k); }
const char* IteratorAnnotationName(IteratorAnnotation a) { return EnumName(kIteratorAnnotationNames, a); }
IteratorAnnotation ParseIteratorAnnotation(const std::string& name) {
  return ParseEnum(kIteratorAnnotationNames, name, "iterator annotation");
}
const char* ComputeLocKindName(ComputeLocKind k) { return EnumName(kComputeLocKindNames, k); }

// ---- Stage ----

std::vector<Iterator> Stage::iters() const {
  std::vector<Iterator> out;
  for (int n : leaves) out.push_back(nodes[n]);
  return out;
}

int Stage::LeafIndex(int node) const {
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (leaves[i] == node) return static_cast<int>(i);
  }
  return -1;
}

int Stage::IterIndex(const std::string& iter_name) const {
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (nodes[leaves[i]].name == iter_name) return static_cast<int>(i);
  }
  return -1;
}

Stage Stage::FromOp(const Tensor& op) {
  Stage stage;
  stage.op = op;
  for (const IterVar& iv : op->axis) stage.nodes.push_back({iv.name(), iv.extent, IteratorKind::Spatial});
  for (const IterVar& iv : op->reduce_axis)
    stage.nodes.push_back({iv.name(), iv.extent, IteratorKind::Reduce});
  stage.num_root = static_cast<int>(stage.nodes.size());
  for (int i = 0; i < stage.num_root; ++i) stage.leaves.push_back(i);
  return stage;
}

// ---- iterator relations ----

namespace {

// (row, column) of fused index f over rows x cols (row-major) visited in
// bands of `width` rows: f runs down the band's rows, then to the next
// column; the last band holds rows % width rows when width does not divide.
// Each branch of that select clamps f to its own side (a no-op where the
// branch is taken), so that interval analysis bounds the row and column
// within the grid and lowering adds no guards for them.
std::pair<Expr, Expr> SwizzledRowColumn(const Expr& f, int64_t rows, int64_t cols, int64_t width) {
  const int64_t g = std::min(width, rows), full = rows / g * g;
  auto c = [](int64_t v) { return Expr(static_cast<int>(v)); };
  if (full == rows)
    return {floordiv(f, c(g * cols)) * c(g) + floormod(f, c(g)), floordiv(floormod(f, c(g * cols)), c(g))};
  const Expr banded = min(f, c(full * cols - 1));
  const Expr row = floordiv(banded, c(g * cols)) * c(g) + floormod(banded, c(g));
  const Expr col = floordiv(floormod(banded, c(g * cols)), c(g));
  const int64_t tail = rows - full;
  const Expr t = max(f - c(full * cols), c(0));
  const Expr in_band = f < c(full * cols);
  return {select(in_band, row, c(full) + floormod(t, c(tail))), select(in_band, col, floordiv(t, c(tail)))};
}

}  // namespace

void DeriveNodeValues(const Stage& stage, std::vector<Expr>* values) {
  std::vector<Expr>& v = *values;
  for (auto rel = stage.relations.rbegin(); rel != stage.relations.rend(); ++rel) {
    if (rel->kind == IterRelation::Kind::Split) {
      Expr value = v[rel->children[0]];
      for (size_t k = 1; k < rel->children.size(); ++k) {
        const int child = rel->children[k];
        value = value * Expr(static_cast<int>(stage.nodes[child].extent)) + v[child];
      }
      v[rel->parents[0]] = value;
    } else {
      Expr fused = v[rel->children[0]];
      size_t n = rel->parents.size();
      if (stage.swizzle_width > 1 && rel->children[0] == stage.swizzle_node && n >= 2) {
        const int64_t cols = stage.nodes[rel->parents[n - 1]].extent;
        int64_t rows = 1;
        for (size_t k = 0; k + 1 < n; ++k) rows *= stage.nodes[rel->parents[k]].extent;
        auto [row, col] = SwizzledRowColumn(fused, rows, cols, stage.swizzle_width);
        v[rel->parents[n - 1]] = col;
        fused = row;  // the outer parents decode it as usual
        --n;
      }
      int64_t inner = 1;  // product of the extents of the parents inside parent k
      for (size_t k = n; k-- > 0;) {
        const int parent = rel->parents[k];
        Expr value = inner == 1 ? fused : floordiv(fused, Expr(static_cast<int>(inner)));
        if (k > 0) value = floormod(value, Expr(static_cast<int>(stage.nodes[parent].extent)));
        v[parent] = value;
        inner *= stage.nodes[parent].extent;
      }
    }
  }
}

void PropagateExtents(Stage* stage, bool tighten) {
  for (const IterRelation& rel : stage->relations) {
    if (rel.kind == IterRelation::Kind::Split) {
      const int64_t parent = stage->nodes[rel.parents[0]].extent;
      int64_t known = 1;
      bool all_known = parent > 0;
      for (const auto& len : rel.lengths) {
        if (len)
          known *= *len;
        else
          all_known = false;
      }
      const size_t n = rel.children.size();
      int64_t inside = known;  // product of the lengths inside part k (inner_to_outer)
      for (size_t k = 0; k < n; ++k) {
        const bool rest = rel.inner_to_outer ? k == 0 : k + 1 == n;
        const size_t len_index = rel.inner_to_outer ? k - 1 : k;
        int64_t& ext = stage->nodes[rel.children[k]].extent;
        if (rest) {
          ext = all_known ? (parent + known - 1) / known : -1;
        } else {
          ext = rel.lengths[len_index] ? *rel.lengths[len_index] : -1;
          if (rel.inner_to_outer && all_known) {
            inside /= ext;
            // A part longer than what its parent leaves it: only when every
            // part outside it runs once, so the index math is unchanged.
            if (tighten) ext = std::min(ext, (parent + inside - 1) / inside);
          }
        }
      }
    } else {
      int64_t product = 1;
      for (int p : rel.parents) {
        const int64_t e = stage->nodes[p].extent;
        product = (product < 0 || e < 0) ? -1 : product * e;
      }
      stage->nodes[rel.children[0]].extent = product;
    }
  }
}

// ---- StateNode ----

int StateNode::StageIndex(const std::string& name) const { return dag.FindOp(name); }
int StateNode::StageIndexOf(const Tensor& tensor) const { return dag.FindOp(tensor); }
int StateNode::StageIndexAt(int64_t index) const { return dag.FindOp(index); }

Stage& StateNode::StageAt(int stage_id) {
  AS_CHECK(stage_id >= 0 && stage_id < static_cast<int>(stages.size()),
           "stage " << stage_id << " does not exist (the state has " << stages.size() << " stages)");
  return stages[stage_id];
}

int StateNode::LeafAt(int stage_id, int iter_id) {
  Stage& st = StageAt(stage_id);
  AS_CHECK(iter_id >= 0 && iter_id < st.num_iters(),
           "stage '" << st.name() << "' has no iterator " << iter_id << " (it has " << st.num_iters() << ")");
  return st.leaves[iter_id];
}

bool StateNode::IsOutput(int stage_id) const {
  for (const Tensor& t : dag.tensors()) {
    if (t.get() == stages[stage_id].op.get()) return t->is_compute();
  }
  return false;
}

// ---- State ----

State::State(const ComputeDAG& dag) {
  auto node = std::make_shared<StateNode>(StateNode{dag, dag, {}, {}});
  for (const Tensor& op : dag.ops()) node->stages.push_back(Stage::FromOp(op));
  node_ = std::move(node);
}

const Stage& State::stage(int id) const {
  AS_CHECK(id >= 0 && id < static_cast<int>(stages().size()), "stage " << id << " does not exist");
  return stages()[id];
}

State State::Apply(const Step& step) const {
  auto node = std::make_shared<StateNode>(*node_);
  const std::string label = StepLabel(step, static_cast<int>(node->steps.size()));
  try {
    std::visit([&](const auto& s) { s.Apply(*node); }, step);
    node->steps.push_back(step);
    CheckComputeLocations(*node, label);
  } catch (const Error&) {
    RethrowWithContext(label);
  } catch (const InternalError&) {
    RethrowWithContext(label);
  }
  return State(std::move(node));
}

State State::Split(int stage, int iter, const std::vector<std::optional<int64_t>>& lengths,
                   bool inner_to_outer) const {
  SplitStep s;
  s.stage_id = stage;
  s.iter_id = iter;
  s.lengths = lengths;
  s.inner_to_outer = inner_to_outer;
  if (stage >= 0 && stage < static_cast<int>(stages().size()) && iter >= 0 &&
      iter < stages()[stage].num_iters()) {
    int64_t e = stages()[stage].iter(iter).extent;
    if (e > 0) s.extent = e;
  }
  return Apply(s);
}

State State::Fuse(int stage, const std::vector<int>& iters) const { return Apply(FuseStep{stage, iters}); }
State State::Reorder(int stage, const std::vector<int>& order) const {
  return Apply(ReorderStep{stage, order});
}
State State::Annotate(int stage, int iter, IteratorAnnotation annotation) const {
  return Apply(AnnotationStep{stage, iter, annotation});
}
State State::ComputeAt(int stage, int target_stage, int target_iter) const {
  return Apply(ComputeAtStep{stage, target_stage, target_iter});
}
State State::ComputeInline(int stage) const { return Apply(ComputeInlineStep{stage}); }
State State::ComputeRoot(int stage) const { return Apply(ComputeRootStep{stage}); }

State State::FromSteps(const ComputeDAG& dag, const std::vector<Step>& steps) {
  State s(dag);
  for (const Step& step : steps) s = s.Apply(step);
  return s;
}

State State::Replay() const { return FromSteps(init_dag(), steps()); }

nlohmann::json State::ToJson() const {
  nlohmann::json out = nlohmann::json::array();
  for (const Step& s : steps()) out.push_back(StepToJson(s));
  return out;
}

State State::FromJson(const ComputeDAG& dag, const nlohmann::json& steps) {
  AS_CHECK(steps.is_array(), "a state's steps must be a JSON array, got " << steps.dump());
  std::vector<Step> parsed;
  for (const auto& record : steps) parsed.push_back(StepFromJson(record));
  return FromSteps(dag, parsed);
}

State State::WithStages(std::vector<Stage> stages) const {
  auto node = std::make_shared<StateNode>(*node_);
  node->stages = std::move(stages);
  return State(std::move(node));
}

State State::WithDagAndStages(ComputeDAG dag, std::vector<Stage> stages) const {
  auto node = std::make_shared<StateNode>(*node_);
  node->dag = std::move(dag);
  node->stages = std::move(stages);
  return State(std::move(node));
}

bool State::SameSteps(const State& o) const { return ToJson() == o.ToJson(); }

std::string State::PrintPythonSteps() const {
  std::ostringstream os;
  State replay(init_dag());
  for (const Step& step : steps()) {
    os << std::visit([&](const auto& s) { return s.Python(replay.node()); }, step) << "\n";
    replay = replay.Apply(step);
  }
  return os.str();
}

namespace {

// A stage attached by compute_at has the extents bound inference gives it;
// `inferred` false: inference could not run yet (unknown split lengths), and
// such stages print '?' rather than the full tensor's extents.
struct PrintContext {
  const StateNode& state;
  bool inferred;
  std::ostream& os;
};

std::string ExtentText(int64_t extent, bool not_inferred) {
  if (extent < 0) return "(None)";
  return not_inferred ? "(0,?)" : "(0," + std::to_string(extent) + ")";
}

void PrintStage(const PrintContext& ctx, int stage_id, int indent);

void PrintAttached(const PrintContext& ctx, int stage_id, int node, int indent) {
  for (size_t i = 0; i < ctx.state.stages.size(); ++i) {
    const Stage& other = ctx.state.stages[i];
    if (other.loc == ComputeLocKind::At && other.attach_stage == stage_id && other.attach_node == node) {
      PrintStage(ctx, static_cast<int>(i), indent);
    }
  }
}

void PrintStage(const PrintContext& ctx, int stage_id, int indent) {
  const Stage& st = ctx.state.stages[stage_id];
  std::ostream& os = ctx.os;
  const bool not_inferred = !ctx.inferred && st.loc == ComputeLocKind::At;
  if (st.auto_unroll_max_step > 0) {
    os << std::string(indent * 2, ' ') << st.name() << " auto_unroll: " << st.auto_unroll_max_step << "\n";
  }
  if (st.double_buffer) os << std::string(indent * 2, ' ') << st.name() << " double_buffer\n";
  if (st.storage_transposed) os << std::string(indent * 2, ' ') << st.name() << " storage_transpose\n";
  if (st.swizzle_width > 1)
    os << std::string(indent * 2, ' ') << st.name() << " block_swizzle: " << st.swizzle_width << "\n";
  for (int i = 0; i < st.num_iters(); ++i) {
    const Iterator& it = st.iter(i);
    const char* keyword =
        it.annotation == IteratorAnnotation::None ? "for" : IteratorAnnotationName(it.annotation);
    os << std::string((indent + i) * 2, ' ') << keyword << " " << it.name << " "
       << ExtentText(it.extent, not_inferred) << "\n";
    PrintAttached(ctx, stage_id, st.leaves[i], indent + i + 1);
  }
  os << std::string((indent + st.num_iters()) * 2, ' ') << st.name() << " = ...\n";
}

}  // namespace

std::string State::ToString() const {
  std::optional<State> bounded;
  try {
    bounded = InferBound(*this);
  } catch (const Error&) {
    // Unknown split lengths: printed as they are, attached stages with '?'.
  }
  const StateNode& shown = bounded ? bounded->node() : *node_;
  std::ostringstream os;
  std::vector<std::string> placeholders;
  for (const Stage& st : shown.stages) {
    if (st.is_placeholder()) placeholders.push_back(st.name());
  }
  if (!placeholders.empty()) {
    os << "Placeholder: ";
    for (size_t i = 0; i < placeholders.size(); ++i) os << (i ? ", " : "") << placeholders[i];
    os << "\n";
  }
  const PrintContext ctx{shown, bounded.has_value(), os};
  for (size_t i = 0; i < shown.stages.size(); ++i) {
    const Stage& st = shown.stages[i];
    if (!st.is_placeholder() && st.loc == ComputeLocKind::Root) PrintStage(ctx, static_cast<int>(i), 0);
  }
  return os.str();
}

// ---- validity of compute locations ----

namespace {

// Stages that read `stage_id`, looking through inlined stages.
std::vector<int> EffectiveReaders(const StateNode& state, int stage_id) {
  std::vector<int> out;
  std::function<void(int)> visit = [&](int s) {
    for (int c : state.dag.access(s).consumers) {
      if (state.stages[c].loc == ComputeLocKind::Inlined) {
        visit(c);
      } else {
        out.push_back(c);
      }
    }
  };
  visit(stage_id);
  return out;
}

// True when stage `reader` runs inside loop node `node` of stage `target`.
bool RunsInside(const StateNode& state, int reader, int target, int node) {
  if (reader == target) return true;
  const int leaf = state.stages[target].LeafIndex(node);
  int x = reader;
  while (state.stages[x].loc == ComputeLocKind::At) {
    const Stage& sx = state.stages[x];
    if (sx.attach_stage == target) return state.stages[target].LeafIndex(sx.attach_node) >= leaf;
    x = sx.attach_stage;
  }
  return false;
}

void CheckParallelNesting(const StateNode& state, int stage_id, const std::string& label) {
  const Stage& st = state.stages[stage_id];
  int parallel = 0;
  for (int i = 0; i < st.num_iters(); ++i) parallel += st.iter(i).annotation == IteratorAnnotation::Parallel;
  AS_CHECK(parallel <= 1, label << ": stage '" << st.name() << "' has nested parallel loops");
  if (parallel == 0) return;
  int x = stage_id;
  while (state.stages[x].loc == ComputeLocKind::At) {
    const Stage& sx = state.stages[x];
    const Stage& target = state.stages[sx.attach_stage];
    const int leaf = target.LeafIndex(sx.attach_node);
    for (int i = 0; i <= leaf && i < target.num_iters(); ++i) {
      AS_CHECK(target.iter(i).annotation != IteratorAnnotation::Parallel,
               label << ": parallel loop of stage '" << st.name() << "' is nested in parallel loop '"
                     << target.iter(i).name << "' of stage '" << target.name() << "'");
    }
    x = sx.attach_stage;
  }
}

}  // namespace

void CheckComputeLocations(const StateNode& state, const std::string& label) {
  for (size_t p = 0; p < state.stages.size(); ++p) {
    const Stage& st = state.stages[p];
    CheckParallelNesting(state, static_cast<int>(p), label);
    if (st.loc != ComputeLocKind::At) continue;
    const Stage& target = state.stages[st.attach_stage];
    AS_CHECK(target.loc != ComputeLocKind::Inlined, label << ": stage '" << st.name() << "' is attached to '"
                                                          << target.name() << "', which is inlined");
    AS_CHECK(target.LeafIndex(st.attach_node) >= 0, label << ": stage '" << st.name()
                                                          << "' is attached to an iterator of '"
                                                          << target.name() << "' that no longer exists");
    for (int reader : EffectiveReaders(state, static_cast<int>(p))) {
      AS_CHECK(RunsInside(state, reader, st.attach_stage, st.attach_node),
               label << ": compute_at breaks a dependence: stage '" << state.stages[reader].name()
                     << "' reads '" << st.name() << "' outside loop '" << target.nodes[st.attach_node].name
                     << "' of stage '" << target.name() << "'");
    }
  }
}

}  // namespace autosched
