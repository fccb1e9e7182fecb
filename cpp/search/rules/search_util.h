// Queries and small transformations of loop states shared by the sketch rules
// (sketch_rules.h) and the init rules (init_rules.h).
//
// Stage ids are positions in state.stages(), which parallel the current DAG's
// ops (state.dag()), so the DAG's access facts of a stage are
// state.dag().access(stage_id).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "schedule/state.h"

namespace autosched {

// A compute stage that is not inlined (it has loops of its own).
bool HasLoops(const State& s, int stage_id);
bool HasReduceIter(const Stage& st);
// The stage's loops are still its op's axes: nothing split, fused or reordered.
bool IsUntouched(const Stage& st);
// A compute stage at the root whose loops nothing has changed yet.
bool IsFreshRootStage(const State& s, int stage_id);
// `s` with `count` consecutive loops of the stage from `first` fused into
// one (unchanged for fewer than two).
State FuseRange(const State& s, int stage_id, int first, int count);
// Products of the extents of the op's spatial axes and of its reduce axes.
int64_t SpatialProduct(const Stage& st);
int64_t ReduceProduct(const Stage& st);
// The access analysis asks for multi-level tiling (a reduction with reuse).
bool NeedsMultiLevelTiling(const State& s, int stage_id);
// The "<name>.local" stage made by a cache_write (its copy consumes it).
bool IsCacheWriteStage(const State& s, int stage_id);
// The stage into which stage_id can be fused: the one stage with loops that
// reads its values, looking through inlined stages (several paths may meet
// in it), when every link reads the previous tensor element-wise (same
// shape, own indices), and that stage has no reduction, is computed at root
// and is still untouched. -1 otherwise.
int ElementwiseFusionTarget(const State& s, int stage_id);

// Multi-level tiling of an untouched stage: every spatial iterator split into
// as many parts as `structure` has 'S' letters, every reduce iterator into as
// many as it has 'R' letters (lengths unknown), then the parts reordered level
// by level as the letters say. Returns the state and, per spatial iterator
// (outermost first), the index of the step that split it.
struct TiledStage {
  State state;
  std::vector<int> spatial_split_steps;
};
TiledStage MultiLevelTile(const State& s, int stage_id, const std::string& structure);

// Tiles the untouched stage stage_id like the spatial splits of a producer:
// iterator k follows split step split_steps[k] with `level` + 1 parts, and the
// parts are ordered level by level. Returns the state and the position of the
// last iterator of the outer `level` levels (where the producer is attached).
std::pair<State, int> FollowTiling(const State& s, int stage_id, const std::vector<int>& split_steps,
                                   int level);

// The auto_unroll_max_step values worth trying on a stage whose loops run
// `iterations` times in all: those below it and the smallest one at or above
// it (any larger value unrolls the same loops).
std::vector<int64_t> UsefulUnrollSteps(const std::vector<int64_t>& candidates, int64_t iterations);
// The product of a stage's loop extents (-1 extents count as 1).
int64_t StageIterations(const Stage& st);

// Uniform integer in [0, n) (n > 0) from the generator; portable across
// standard libraries, so a seed gives the same states everywhere.
inline int64_t RandomIndex(std::mt19937* rng, int64_t n) { return static_cast<int64_t>((*rng)() % n); }
// Uniform in [0, 1), portable likewise.
inline double RandomUnit(std::mt19937* rng) { return static_cast<double>((*rng)()) / 4294967296.0; }

// The state with each root reduction's reduce loops moved outside its last
// spatial loop (i, k, j for a matmul): the innermost loop then walks
// contiguous outputs and can be vectorized. Unchanged where no stage has a
// reduce loop innermost.
State InterchangeReductions(const State& state);

// The key of a state among measured and searched ones: its steps as JSON
// text (two states with the same steps are the same schedule).
inline std::string StateKey(const State& s) { return s.ToJson().dump(); }

}  // namespace autosched
