// The loop state of a schedule.
//
// A State is a value: the DAG it started from, the list of transform steps
// applied so far, and what those steps derive: the current DAG (cache_read,
// cache_write and rfactor rewrite it) and one Stage per op of the current DAG
// (same order: topological, producers first). States share their data and are
// copied on write, so keeping many of them (as a search does) is cheap.
//
// A Stage keeps the whole history of its iterators as a small graph: node ids
// 0 .. num_root-1 are the op's axes then its reduce axes; split and fuse add
// nodes and a relation; `leaves` are the current iterators, outermost first.
// Lowering expresses every root axis from the leaves through the relations
// (split: outer * inner_extent + inner, fuse: floordiv / floormod).
//
// Extents of stages attached by compute_at are those of the full tensor until
// bound inference (infer_bound.h) narrows them to the region their consumers
// read; ToString prints the inferred ones.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dag/compute_dag.h"
#include "ir/expr.h"
#include "schedule/transform_steps.h"

namespace autosched {

// Mixed would be a fuse of spatial and reduce iterators; fuse rejects that, so
// lowering only meets Spatial and Reduce.
enum class IteratorKind : uint8_t { Spatial, Reduce, Mixed };

const char* IteratorKindName(IteratorKind k);  // "spatial", "reduce", "mixed"

struct Iterator {
  std::string name;
  int64_t extent = -1;  // -1: unknown (a split length not filled yet)
  IteratorKind kind = IteratorKind::Spatial;
  IteratorAnnotation annotation = IteratorAnnotation::None;
};

// How iterator nodes derive from each other.
struct IterRelation {
  enum class Kind : uint8_t { Split, Fuse } kind = Kind::Split;
  std::vector<int> parents;                     // split: one; fuse: the fused nodes, outermost first
  std::vector<int> children;                    // split: the parts, outermost first; fuse: one
  std::vector<std::optional<int64_t>> lengths;  // split only
  bool inner_to_outer = true;                   // split only
};

// Loop variables are 32-bit integers like tensor indices (ir/tensor.cc limits
// a tensor to fewer than 2^31 elements for the same reason): split lengths and
// the range an iterator covers stay within this.
constexpr int64_t kMaxIterExtent = (int64_t{1} << 31) - 1;

enum class ComputeLocKind : uint8_t { Root, Inlined, At };
const char* ComputeLocKindName(ComputeLocKind k);  // "root", "inlined", "at"

struct StorageAlign {
  int axis = 0;  // dimension of the tensor
  int64_t factor = 1;
  int64_t offset = 0;
};

struct Stage {
  Tensor op;
  std::vector<Iterator> nodes;  // every iterator ever made in this stage
  int num_root = 0;             // nodes [0, num_root) are the op's axes and reduce axes
  std::vector<int> leaves;      // node ids of the current iterators, outermost first
  std::vector<IterRelation> relations;

  ComputeLocKind loc = ComputeLocKind::Root;
  int attach_stage = -1;  // loc == At: the stage and the node id of its iterator
  int attach_node = -1;
  int loc_step = -1;  // the step that set the location (for messages)

  MemScope scope = MemScope::Global;  // set by cache_read / cache_write
  int64_t auto_unroll_max_step = 0;   // 0: none
  // pragma "double_buffer" (a shared stage computed at a serial loop): two
  // copies, the next iteration's tile fetched while this one's is read.
  bool double_buffer = false;
  // pragma "storage_transpose" (a shared stage of two or more dimensions):
  // its buffer stores the last dimension outside the one before it, so a
  // register tile can read a column of the tile (e.g. 8 rows of A at one
  // step of the reduction) with vector loads.
  bool storage_transposed = false;
  // pragma "block_swizzle$G" (G > 1) on the fused loop `swizzle_node`: its
  // parents' values are decoded so that consecutive iterations walk down G
  // rows of the outer parents (the last band may hold fewer) before moving to
  // the next column of the last parent (SwizzledRowColumn).
  int swizzle_node = -1;
  int64_t swizzle_width = 1;
  std::vector<StorageAlign> storage_align;

  const std::string& name() const { return op->name; }
  bool is_placeholder() const { return op->is_placeholder(); }
  int num_iters() const { return static_cast<int>(leaves.size()); }
  const Iterator& iter(int i) const { return nodes[leaves[i]]; }
  std::vector<Iterator> iters() const;
  // Position of a node among the leaves; -1 when it is not a leaf.
  int LeafIndex(int node) const;
  // Position of an iterator by name among the leaves; -1 when absent.
  int IterIndex(const std::string& name) const;
  // A stage with one leaf per axis and reduce axis of op.
  static Stage FromOp(const Tensor& op);
};

struct StateNode {
  ComputeDAG init_dag;
  ComputeDAG dag;  // current DAG (after cache / rfactor steps)
  std::vector<Stage> stages;
  std::vector<Step> steps;

  // How users address stages: stage i computes dag.ops()[i], so these are
  // ComputeDAG::FindOp (by name, by tensor, by position); they throw Error
  // naming the stage when there is none or a name is ambiguous.
  int StageIndex(const std::string& name) const;
  int StageIndexOf(const Tensor& tensor) const;
  int StageIndexAt(int64_t index) const;  // negative counts from the end
  // Checked access for steps (State::Apply prefixes messages with the step).
  Stage& StageAt(int stage_id);
  int LeafAt(int stage_id, int iter_id);  // node id of a stage's iterator
  // True when the op of stage_id is one of the DAG's arguments (an output).
  bool IsOutput(int stage_id) const;
};

class State {
 public:
  explicit State(const ComputeDAG& dag);  // the initial state (no steps)

  const ComputeDAG& init_dag() const { return node_->init_dag; }
  const ComputeDAG& dag() const { return node_->dag; }
  const std::vector<Stage>& stages() const { return node_->stages; }
  const Stage& stage(int id) const;
  const std::vector<Step>& steps() const { return node_->steps; }
  int StageIndex(const std::string& name) const { return node_->StageIndex(name); }
  int StageIndexOf(const Tensor& tensor) const { return node_->StageIndexOf(tensor); }
  int StageIndexAt(int64_t index) const { return node_->StageIndexAt(index); }
  const StateNode& node() const { return *node_; }

  // A new state with the step appended. Throws Error naming the step (its
  // index and kind) and the problem when it is invalid; *this is unchanged.
  State Apply(const Step& step) const;

  // Convenience forms of Apply (ids as in transform_steps.h).
  State Split(int stage, int iter, const std::vector<std::optional<int64_t>>& lengths,
              bool inner_to_outer = true) const;
  State Fuse(int stage, const std::vector<int>& iters) const;
  State Reorder(int stage, const std::vector<int>& order) const;
  State Annotate(int stage, int iter, IteratorAnnotation annotation) const;
  State ComputeAt(int stage, int target_stage, int target_iter) const;
  State ComputeInline(int stage) const;
  State ComputeRoot(int stage) const;

  // Replays the steps on init_dag. Every field of the result equals this one.
  State Replay() const;
  static State FromSteps(const ComputeDAG& dag, const std::vector<Step>& steps);

  // The steps as a JSON array of records; FromJson replays them on dag.
  nlohmann::json ToJson() const;
  static State FromJson(const ComputeDAG& dag, const nlohmann::json& steps);

  // The loop nest, one line per loop ("for i.0 (0,32)", "parallel j (0,16)")
  // and per stage body ("C = ..."); inlined stages are left out. Extents are
  // those bound inference gives; while it cannot run (unknown split lengths:
  // "(None)"), the extents of stages attached by compute_at print as "(0,?)".
  std::string ToString() const;
  // The steps as calls of the Python State API, one per line.
  std::string PrintPythonSteps() const;

  // A copy with the same steps whose stages are replaced (bound inference
  // stores inferred extents this way).
  State WithStages(std::vector<Stage> stages) const;
  // A copy with the same steps whose DAG and stages are replaced: not the
  // state the steps give (SplitConstantStages makes such a state to lower).
  State WithDagAndStages(ComputeDAG dag, std::vector<Stage> stages) const;

  // Same steps (records) and thus the same loop state.
  bool SameSteps(const State& o) const;

 private:
  explicit State(std::shared_ptr<const StateNode> node) : node_(std::move(node)) {}
  std::shared_ptr<const StateNode> node_;
};

// Values of every iterator node of `stage` given those of its leaves
// (values[leaf] set, others undefined): parents of splits and fuses are
// derived through the relations, with the extents the nodes have now.
void DeriveNodeValues(const Stage& stage, std::vector<Expr>* values);
// Recomputes the extents of derived nodes from the root extents. With
// `tighten` (bound inference of a stage narrowed to a region), a split part
// longer than the range its parent leaves it gets that range instead
// (min(length, ceil(parent / product of the lengths inside it))), as TVM's
// bound inference does: this happens only when every part outside it runs
// once, so the index math is the same and no iteration is wasted on guards.
void PropagateExtents(Stage* stage, bool tighten = false);

// Checks that every stage that reads a stage attached by compute_at runs
// inside that loop, and that no parallel loop encloses another. Throws Error
// naming the step that placed the offending stage.
void CheckComputeLocations(const StateNode& state, const std::string& step_label);

}  // namespace autosched
