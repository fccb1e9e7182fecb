// Register blocks: the micro-kernel shape of a multi-level-tiled CPU stage.
//
// The innermost spatial tile of a tiled stage (the last level of
// cpu_tiling_structure) is a block of accumulators that should live in SIMD
// registers across the reduction loops around it: `rows` iterations of one
// spatial axis (unrolled) times `vec_length` iterations of the innermost
// spatial axis with an extent above 1 (contiguous in the output; vectorized),
// times `cols` iterations of a column axis where the stage has one (unrolled):
// an axis the vector operand depends on and the broadcast one does not, such
// as the outer channel blocks of an NCHWc convolution, whose input scalar then
// serves several filter vectors. Each reduction step loads one row of the
// vector operand per column (`vectors` registers each, shared by the rows)
// and broadcasts one scalar per row, so a block fits when
// (rows + 1) * vectors * cols + 1 <= the register count.
//
// PlanRegisterBlocks looks at a stage whose loops are still its op's axes and
// lists the blocks that fit (the family the sampler and the mutations draw
// from, best first by a small throughput model), the axes they apply to and
// the reduce axis sized by the L1 cache. ExpertTileParts and
// SampleBlockTileParts turn a plan into the lengths of every split of
// MultiLevelTile: the expert schedule's (expert_schedule.h) and random ones of
// the family. Every length comes from HardwareParams (vector width, register
// count, FMA units, cache sizes) and the extents: no width is assumed.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "schedule/state.h"
#include "search/rules/sketch_rules.h"

namespace autosched {

struct RegisterBlock {
  int64_t rows = 1;        // innermost part of the row axis (unrolled)
  int64_t vec_length = 1;  // innermost part of the vector axis (vectorized)
  int64_t vectors = 1;     // SIMD registers one row of vec_length takes
  int64_t cols = 1;        // innermost part of the column axis (unrolled)
  bool vec_divides = true;
  bool rows_divide = true;
  bool tile = false;      // multiplied as AMX tiles (TileMultiplyBlock), not vector registers
  double throughput = 0;  // useful lanes per cycle the model expects
  int64_t accumulators() const { return rows * vectors * cols; }
};

struct RegisterBlockPlan {
  int vec_axis = -1;     // index into op->axis: the innermost spatial axis with extent > 1
  int row_axis = -1;     // index into op->axis of the rows; -1 when no other axis has extent > 1
  int col_axis = -1;     // index into op->axis of the columns; -1 when no axis qualifies
  int main_reduce = -1;  // index into op->reduce_axis whose inner part is sized by L1; -1 without
  int dot_reduce = -1;   // index into op->reduce_axis of a dot-product group (DotReduceAxis); -1 without
  int64_t lanes = 1;     // SIMD lanes of the stage's dtype
  int64_t registers = 16;
  int64_t fma_units = 1;
  int64_t element_bytes = 4;
  bool widening = false;              // a uint8 x int8 group in the widening form (no VNNI)
  std::vector<RegisterBlock> family;  // blocks that fit, best first; empty: nothing to block
  bool strided = false;               // no block: no operand is contiguous along the vector axis
  bool empty() const { return family.empty(); }
};

// Vector registers and FMA pipes the search plans for: the task's
// HardwareParams, or where a field is 0 (unknown) what the vector width
// implies (32 registers with 64-byte vectors, else 16; 1 FMA pipe).
int64_t VectorRegisterCount(const HardwareParams& hw);
int64_t FmaUnitCount(const HardwareParams& hw);
// Cache sizes with defaults where the target does not know them (32 KiB,
// 1 MiB, 8 MiB).
int64_t L1Bytes(const HardwareParams& hw);
int64_t L2Bytes(const HardwareParams& hw);

// The plan of a compute stage (its op's axes; the loops may be tiled).
// Empty family (and vec_axis -1) for a stage without a spatial axis of
// extent > 1, or whose innermost such axis is not the output's last and no
// operand is contiguous along (each vector lane would read another row).
RegisterBlockPlan PlanRegisterBlocks(const SketchContext& ctx, const Stage& stage);

// The reduce axis of a dot-product group (codegen/llvm/dot_product.h): an
// int32 stage whose reduce axis of extent 4 reads only 8-bit operands (a
// float32 one whose axis of extent 2 reads only bfloat16) and is the
// innermost index of an operand that varies along `vec_axis` (a weight packed
// as [N/16, K/4, 16, 4]). Tilings keep it whole and outside the register
// block (its inner parts 1), where the code generator turns it into one
// instruction per accumulator vector; -1 when there is none.
int DotReduceAxis(const Stage& stage, int vec_axis);

// The row axis of a stage whose innermost tile runs along `vec_axis`: among
// the spatial axes other than it with extent > 1, the one the most operands
// indexed by `vec_axis` do not depend on, so that their values serve every
// row (A's rows of a matmul whose vector axis is B's columns); the innermost
// on a tie; -1 when there is none.
//
// An axis that such an operand reads only as floordiv(axis, c) counts as one
// it does not depend on: within each run of c values the operand is the same
// (a grouped convolution's input, for the output channels of one group).
int PickRowAxis(const Stage& stage, int vec_axis);

// The c of floordiv(v, c) where every use of `v` in the load's indices is
// one (the gcd where there are several); 0 otherwise.
int64_t FloorDivPeriod(const TensorLoadNode* load, const VarNode* v);

// The period along `row_axis` over which every operand indexed by `vec_axis`
// stays the same (FloorDivPeriod; the gcd over the operands that use the
// rows), or 0 where one of them varies with every row or none uses it.
int64_t RowPeriod(const Stage& stage, int vec_axis, int row_axis);

// The parts (outermost first) of every axis split by MultiLevelTile with
// n_space spatial and n_reduce reduce levels; parts[0] covers the rest
// (ceil division) and the others are the split's lengths.
struct TileParts {
  std::vector<std::vector<int64_t>> spatial;  // per op axis
  std::vector<std::vector<int64_t>> reduce;   // per reduce axis
  RegisterBlock block;
  std::string note;  // how the lengths were chosen (for people)
};

// The expert's tiling: the best block of one column innermost (blocks of
// several columns are the search's to try: the model cannot tell the
// convolutions they speed up from those they slow down; the best block of the
// family where none of one column is in it, or where the stage multiplies
// dot-product groups: see the definition), the second level 1 (so that
// an accumulator stage attached at level 2 is the register block itself), the
// vector axis' L2 panel at level 1, the row axis' blocks at level 1, other
// axes outermost; the main reduction's inner part the largest divisor (at
// most max_innermost_split_factor) whose operand rows fit half of L1, other
// reduce axes outermost.
TileParts ExpertTileParts(const SketchContext& ctx, const Stage& stage, const RegisterBlockPlan& plan,
                          int n_space, int n_reduce);

// A random tiling of the family: a block drawn from plan.family, the main
// reduction's inner part drawn among the divisors that fit L1, the level
// above the block drawn so that its output tile fits half of L2 and leaves a
// tile per core, the other parts random divisors.
TileParts SampleBlockTileParts(const SketchContext& ctx, const Stage& stage, const RegisterBlockPlan& plan,
                               int n_space, int n_reduce, std::mt19937* rng);

// The split lengths (parts 1..n-1) of parts.
std::vector<std::optional<int64_t>> SplitLengths(const std::vector<int64_t>& parts);

// Levels of cpu_tiling_structure: its 'S' and 'R' letters.
struct TilingLevels {
  int space = 0, reduce = 0;
};
TilingLevels CpuTilingLevels(const SearchParams& params);

// Whether `split`, about to be applied to s, is one of MultiLevelTile's: on
// a root iterator of a stage that asks for multi-level tiling, with as many
// lengths as its kind has levels minus one (and, with `unknown`, none known).
bool IsTilingSplit(const State& s, const SplitStep& split, const TilingLevels& levels, bool unknown);

// The tiling splits of a complete state by step index: the stage they tile
// and the root node they split (op axes first, then reduce axes). Replays
// the steps; rfactor splits are left out.
struct TilingSplitRole {
  std::string stage;
  int node = -1;
};
std::map<int, TilingSplitRole> TilingSplitRoles(const State& state, const TilingLevels& levels);

// Position among the stage's leaves of the innermost leaf derived by splits
// from root node `root`; -1 when none (or it went through a fuse).
int InnermostLeafOf(const Stage& stage, int root);

// Whether an innermost spatial tile (rows x vec_length x cols, vec_length on
// the vector axis) is one of the plan's family.
bool InFamily(const RegisterBlockPlan& plan, int64_t rows, int64_t vec_length, int64_t cols = 1);

// The block's innermost part of op axis `axis`: vec_length, rows, cols or 1.
int64_t BlockPart(const RegisterBlockPlan& plan, const RegisterBlock& block, int axis);

}  // namespace autosched
