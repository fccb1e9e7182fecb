// Transform steps: the schedule language. A step is an immutable value; a
// State is the initial DAG plus the list of steps applied to it.
//
// Every step kind is one struct below and one entry of the `Step` variant.
// Each struct provides, in one place:
//   kRecordName                 short name in JSON records ("SP", "CA", ...)
//   kName                       its name in messages ("split", "compute_at", ...)
//   void Apply(StateNode&) const  the effect on the loop state (throws Error)
//   nlohmann::json Args() const   its fields, in record order
//   static X FromArgs(json)       the inverse of Args
//   std::string Python(const StateNode& before) const
//                               the call of the Python State API that makes it
// so adding a step touches this header (its struct and the variant entry),
// its .cc, its method in python/autosched/state.py (which writes the record)
// and its row in docs/schedules.md; the bindings take any step's record
// through one LoopState.apply_step.
//
// Stages are addressed by their position in the state's stage list (the
// current DAG's ops in topological order) and iterators by their position in
// the stage's current (leaf) iterator list, as TVM's auto_scheduler does.
//
// split(stage, iter, lengths, inner_to_outer=true) makes len(lengths)+1
// iterators, outermost first: with inner_to_outer the lengths are the extents
// of the inner parts (outer to inner) and the outermost part covers the rest
// (ceil division); otherwise the lengths are the outer parts and the innermost
// covers the rest. A length may be unknown (std::nullopt) in a record; it must
// be filled before bound inference or lowering.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace autosched {

struct StateNode;

// How an iterator runs (unroll, vectorize, parallel, GPU bindings); records
// store the name, never the ordinal.
enum class IteratorAnnotation : uint8_t {
  None,
  Unroll,
  Vectorize,
  Parallel,
  VThread,
  BlockIdxX,
  BlockIdxY,
  BlockIdxZ,
  ThreadIdxX,
  ThreadIdxY,
  ThreadIdxZ,
};
const char* IteratorAnnotationName(IteratorAnnotation a);  // "none", "unroll", ..., "threadIdx.x"
// Throws Error naming the string when it is not an annotation name.
IteratorAnnotation ParseIteratorAnnotation(const std::string& name);

struct SplitStep {
  static constexpr const char* kRecordName = "SP";
  static constexpr const char* kName = "split";
  int stage_id = 0;
  int iter_id = 0;
  std::optional<int64_t> extent;  // extent of the iterator when split (informative)
  std::vector<std::optional<int64_t>> lengths;
  bool inner_to_outer = true;
  void Apply(StateNode& s) const;
  nlohmann::json Args() const;
  static SplitStep FromArgs(const nlohmann::json& a);
  std::string Python(const StateNode& before) const;
};

// Splits like the SplitStep number src_step_id, into n_split + 1 parts.
struct FollowSplitStep {
  static constexpr const char* kRecordName = "FSP";
  static constexpr const char* kName = "follow_split";
  int stage_id = 0;
  int iter_id = 0;
  int src_step_id = 0;
  int n_split = 1;
  void Apply(StateNode& s) const;
  nlohmann::json Args() const;
  static FollowSplitStep FromArgs(const nlohmann::json& a);
  std::string Python(const StateNode& before) const;
};

// Splits in two by the product of the lengths at `level` of several SplitSteps
// (used after fusing iterators that those steps made).
struct FollowFusedSplitStep {
  static constexpr const char* kRecordName = "FFSP";
  static constexpr const char* kName = "follow_fused_split";
  int stage_id = 0;
  int iter_id = 0;
  std::vector<int> src_step_ids;
  int level = 0;
  bool factor_or_nparts = true;  // true: the length is the inner factor
  void Apply(StateNode& s) const;
  nlohmann::json Args() const;
  static FollowFusedSplitStep FromArgs(const nlohmann::json& a);
  std::string Python(const StateNode& before) const;
};

// Fuses consecutive iterators (outermost first) into one.
struct FuseStep {
  static constexpr const char* kRecordName = "FU";
  static constexpr const char* kName = "fuse";
  int stage_id = 0;
  std::vector<int> fused_ids;
  void Apply(StateNode& s) const;
  nlohmann::json Args() const;
  static FuseStep FromArgs(const nlohmann::json& a);
  std::string Python(const StateNode& before) const;
};

// New order of all iterators of a stage (a permutation of their positions).
struct ReorderStep {
  static constexpr const char* kRecordName = "RE";
  static constexpr const char* kName = "reorder";
  int stage_id = 0;
  std::vector<int> after_ids;
  void Apply(StateNode& s) const;
  nlohmann::json Args() const;
  static ReorderStep FromArgs(const nlohmann::json& a);
  std::string Python(const StateNode& before) const;
};

// unroll / vectorize / parallel / vthread / GPU binding of one iterator.
struct AnnotationStep {
  static constexpr const char* kRecordName = "AN";
  static constexpr const char* kName = "annotation";
  int stage_id = 0;
  int iter_id = 0;
  IteratorAnnotation annotation = IteratorAnnotation::None;  // stored by name in records
  void Apply(StateNode& s) const;
  nlohmann::json Args() const;
  static AnnotationStep FromArgs(const nlohmann::json& a);
  std::string Python(const StateNode& before) const;
};

// "auto_unroll_max_step$N": unroll loops of the stage up to N steps.
// "double_buffer" (a "shared" stage): lowered with two copies of its buffer
// when computed at a serial loop: the tile of iteration k + 1 is fetched
// into one copy while iteration k reads the other (lower_state.h).
// "storage_transpose" (a "shared" stage): its buffer stores its last two
// dimensions swapped (Stage::storage_transposed).
// "block_swizzle$G" (a loop fused from two or more, e.g. the blockIdx loop of
// a GPU tile): its iterations visit the fused rows in bands of G (1: off),
// so consecutive work-groups share rows and columns of the inputs
// (Stage::swizzle_width).
struct PragmaStep {
  static constexpr const char* kRecordName = "PR";
  static constexpr const char* kName = "pragma";
  int stage_id = 0;
  int iter_id = 0;
  std::string pragma_type;
  void Apply(StateNode& s) const;
  nlohmann::json Args() const;
  static PragmaStep FromArgs(const nlohmann::json& a);
  std::string Python(const StateNode& before) const;
};

// Pads the stride of the dimension of a root axis so that
// stride % factor == offset.
struct StorageAlignStep {
  static constexpr const char* kRecordName = "SA";
  static constexpr const char* kName = "storage_align";
  int stage_id = 0;
  int iter_id = 0;
  int64_t factor = 1;
  int64_t offset = 0;
  void Apply(StateNode& s) const;
  nlohmann::json Args() const;
  static StorageAlignStep FromArgs(const nlohmann::json& a);
  std::string Python(const StateNode& before) const;
};

struct ComputeAtStep {
  static constexpr const char* kRecordName = "CA";
  static constexpr const char* kName = "compute_at";
  int stage_id = 0;
  int target_stage_id = 0;
  int target_iter_id = 0;
  void Apply(StateNode& s) const;
  nlohmann::json Args() const;
  static ComputeAtStep FromArgs(const nlohmann::json& a);
  std::string Python(const StateNode& before) const;
};

struct ComputeInlineStep {
  static constexpr const char* kRecordName = "CI";
  static constexpr const char* kName = "compute_inline";
  int stage_id = 0;
  void Apply(StateNode& s) const;
  nlohmann::json Args() const;
  static ComputeInlineStep FromArgs(const nlohmann::json& a);
  std::string Python(const StateNode& before) const;
};

struct ComputeRootStep {
  static constexpr const char* kRecordName = "CR";
  static constexpr const char* kName = "compute_root";
  int stage_id = 0;
  void Apply(StateNode& s) const;
  nlohmann::json Args() const;
  static ComputeRootStep FromArgs(const nlohmann::json& a);
  std::string Python(const StateNode& before) const;
};

// Adds a stage "<name>.<scope>" copying the tensor, read by `reader_stage_ids`
// instead of the original (rewrites the DAG).
struct CacheReadStep {
  static constexpr const char* kRecordName = "CHR";
  static constexpr const char* kName = "cache_read";
  int stage_id = 0;
  std::string scope_name;
  std::vector<int> reader_stage_ids;
  void Apply(StateNode& s) const;
  nlohmann::json Args() const;
  static CacheReadStep FromArgs(const nlohmann::json& a);
  std::string Python(const StateNode& before) const;
};

// Adds a stage "<name>.<scope>" that computes the tensor; the original stage
// then copies it (rewrites the DAG). Both stages restart from plain iterators.
struct CacheWriteStep {
  static constexpr const char* kRecordName = "CHW";
  static constexpr const char* kName = "cache_write";
  int stage_id = 0;
  std::string scope_name;
  void Apply(StateNode& s) const;
  nlohmann::json Args() const;
  static CacheWriteStep FromArgs(const nlohmann::json& a);
  std::string Python(const StateNode& before) const;
};

// Adds a stage "<name>.pack" holding the tensor in a tile-contiguous layout:
// dimension `axis` (extent E) is split into (E + lanes - 1) / lanes blocks,
// moved outermost, and `lanes` positions, moved innermost (so each block is
// contiguous): for a 2-D B[k, j] and axis 1, Bp[jo, k, jv] = B[k, jo * lanes
// + jv]. The readers' loads T[i0, .., x, ..] become
// Tp[x // lanes, i0, .., x % lanes] (the other indices in order). Where
// lanes does not divide E the tail of the last block repeats the last element
// (never read). Rewrites the DAG, like cache_read.
struct PackLayoutStep {
  static constexpr const char* kRecordName = "PK";
  static constexpr const char* kName = "pack";
  int stage_id = 0;
  std::vector<int> reader_stage_ids;
  int axis = 0;
  int64_t lanes = 1;
  void Apply(StateNode& s) const;
  nlohmann::json Args() const;
  static PackLayoutStep FromArgs(const nlohmann::json& a);
  std::string Python(const StateNode& before) const;
};

// Factors the reduction at iterator iter_id (a reduce axis, a fuse of several,
// or a split part of either) into a new stage "<name>.rf" where it becomes a
// spatial axis placed at position factor_iter_id; the other iterators derived
// from the same reduce axes stay reductions there, and the original stage then
// reduces over the new axis.
struct RfactorStep {
  static constexpr const char* kRecordName = "RF";
  static constexpr const char* kName = "rfactor";
  int stage_id = 0;
  int iter_id = 0;
  int factor_iter_id = 0;
  void Apply(StateNode& s) const;
  nlohmann::json Args() const;
  static RfactorStep FromArgs(const nlohmann::json& a);
  std::string Python(const StateNode& before) const;
};

// The table of steps: adding a step = adding its struct here.
using Step = std::variant<SplitStep, FollowSplitStep, FollowFusedSplitStep, FuseStep, ReorderStep,
                          AnnotationStep, PragmaStep, StorageAlignStep, ComputeAtStep, ComputeInlineStep,
                          ComputeRootStep, CacheReadStep, CacheWriteStep, RfactorStep, PackLayoutStep>;

// ["SP", args...]
nlohmann::json StepToJson(const Step& step);
// Throws Error naming the record when it is malformed or of an unknown kind.
Step StepFromJson(const nlohmann::json& record);
// The record name ("SP") of a step.
const char* StepRecordName(const Step& step);
// How printed Python steps address stage stage_id of s: its name in quotes when
// no other stage has it, else its index (which replays the same way).
std::string PythonStageRef(const StateNode& s, int stage_id);
// A short description for error messages: "step 3 (compute_at)".
std::string StepLabel(const Step& step, int index);

// Lengths a FollowSplitStep / FollowFusedSplitStep takes from earlier steps.
std::vector<std::optional<int64_t>> FollowSplitLengths(const std::vector<Step>& steps, int src_step_id,
                                                       int n_split);
std::optional<int64_t> FollowFusedSplitLength(const std::vector<Step>& steps, const std::vector<int>& src_ids,
                                              int level);

}  // namespace autosched
