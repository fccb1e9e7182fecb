#include "search/rules/cpu/register_block.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <sstream>

#include "ir/functor.h"
#include "search/rules/search_util.h"
#include "support/arith.h"
#include "support/error.h"

namespace autosched {
namespace {

// Cycles one FMA takes before its result can be used again (4 on the x86 and
// ARM cores of this project's kind, plus a margin): a block whose every
// accumulator gets one FMA per reduction step needs at least this many
// cycles per step.
constexpr double kFmaLatency = 5;
// Loads (a vector or a broadcast scalar) one core issues per cycle.
constexpr double kLoadsPerCycle = 2;
// Most rows and vectors of a block: libraries' micro-kernels stay within them,
// and a larger unrolled block only grows the code.
constexpr int64_t kMaxRows = 16;
constexpr int64_t kMaxVectors = 4;
// Most columns: each takes a row of vector registers.
constexpr int64_t kMaxCols = 4;
// Blocks whose modelled throughput is at least this share of the best one
// form the family.
constexpr double kFamilyShare = 0.5;
// Row counts that divide nothing (their last block guarded) join the family
// where their best block models at least kNonDividingGain times faster than
// the best one of dividing rows and wastes at most 1/kMaxNonDividingWaste of
// the rows, on a row axis of at least kMinRowsForNonDividing rows, where the
// guarded last block is a small share of the work: Winograd's batched
// product over 49 tiles ran 1.16x slower with blocks of 10 rows than with 7
// on a Zen 3, while 128 rows of a dense layer ran 1.2x faster with 5 than
// with 8 (docs/notes/models_figures.md).
constexpr double kNonDividingGain = 1.125;
constexpr int64_t kMaxNonDividingWaste = 16;
constexpr int64_t kMinRowsForNonDividing = 64;
// A tile of K holds 16 groups (64 bytes); a tile block's inner reduction
// takes at most this many groups (the code generator unrolls its chunks).
constexpr int64_t kTileGroups = 16;
constexpr int64_t kMaxTileGroups = 4096;

std::vector<int64_t> Divisors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    out.push_back(d);
    if (d != n / d) out.push_back(n / d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Candidate lengths of the vector axis' innermost part: its divisors in
// [2, max_inner] of at most kMaxVectors registers that are a whole number of
// vectors or fit in one (a length of 15 with 8 lanes is one vector and one
// of 7 lanes, which the code generator splits into masked or scalar parts);
// where no divisor is a whole number of vectors and none reaches half a
// vector, non-dividing multiples of the lanes as well (the tail runs
// guarded, PartitionLoops keeps the rest SIMD).
struct VecOption {
  int64_t length, vectors;
  bool divides;
};
std::vector<VecOption> VecOptions(int64_t extent, int64_t lanes, int64_t max_inner) {
  std::vector<VecOption> out;
  bool half_vector = false, whole_vectors = false;
  for (int64_t d : Divisors(extent)) {
    if (d < 2 && extent > 1) continue;
    if (d > max_inner) break;
    const int64_t vectors = CeilDiv(d, lanes);
    if (vectors > kMaxVectors || (d > lanes && d % lanes != 0)) continue;
    out.push_back({d, vectors, true});
    half_vector = half_vector || 2 * d >= std::min(lanes, extent);
    whole_vectors = whole_vectors || d % lanes == 0;
  }
  if (!half_vector || (!whole_vectors && extent > lanes)) {
    for (int64_t v = 1; v <= kMaxVectors && v * lanes <= std::min(extent, max_inner); ++v) {
      if (extent % (v * lanes) != 0) out.push_back({v * lanes, v, false});
    }
  }
  return out;
}

// Useful lanes per cycle of a block: the FMAs, the loads (one vector per
// register of a row and column, one broadcast per row) and the FMA latency
// each bound the cycles of one reduction step.
double Throughput(int64_t rows, const VecOption& v, int64_t cols, int64_t extent, int64_t fma_units) {
  const double fma = static_cast<double>(rows * v.vectors * cols) / static_cast<double>(fma_units);
  const double loads = static_cast<double>(rows + v.vectors * cols) / kLoadsPerCycle;
  const double cycles = std::max({fma, loads, kFmaLatency});
  const double padded = static_cast<double>(CeilDiv(extent, v.length) * v.length);
  return static_cast<double>(rows * v.length * cols) * (static_cast<double>(extent) / padded) / cycles;
}

// Vector operations one core issues per cycle (x86 cores of this kind: 3 to 4).
constexpr double kVectorOpsPerCycle = 3;

// Useful lanes per cycle of a uint8 x int8 block on a CPU without the
// dot-product instruction, where the code generator computes each group as
// two vpmaddwd per register of lanes (codegen/llvm/dot_product.h, the
// widening form). Per group step: each accumulator register takes 2
// multiply-adds and 2 adds, each row 3 operations to widen and broadcast its
// 4 bytes, each register of the packed operand 4 to split and widen its
// bytes. Those operations bound the block more than the registers do:
// accumulators beyond the registers spill, a load and a store per step each
// (8 rows x 32 lanes, which spills, ran 1.5x 8 x 8 on a Zen 3).
double WideningThroughput(int64_t rows, const VecOption& v, int64_t cols, int64_t extent, int64_t registers) {
  const int64_t accumulators = rows * v.vectors * cols, packed = v.vectors * cols;
  const double ops = static_cast<double>(4 * accumulators + 3 * rows + 4 * packed) / kVectorOpsPerCycle;
  const int64_t spilled = std::max<int64_t>(0, accumulators + 2 * packed + 2 - registers);
  const double memory = static_cast<double>(rows + packed + 2 * spilled) / kLoadsPerCycle;
  const double padded = static_cast<double>(CeilDiv(extent, v.length) * v.length);
  return static_cast<double>(rows * v.length * cols) * (static_cast<double>(extent) / padded) /
         std::max(ops, memory);
}

std::vector<const TensorLoadNode*> Loads(const Stage& st) {
  std::vector<const TensorLoadNode*> loads;
  PostOrderVisit(st.op->body, [&](const Expr& x) {
    if (const auto* load = x.as<TensorLoadNode>()) loads.push_back(load);
  });
  return loads;
}

bool LoadUses(const TensorLoadNode* load, const VarNode* v) {
  return std::any_of(load->indices.begin(), load->indices.end(),
                     [&](const Expr& e) { return UsesVar(e, v); });
}

// The column axis: the outermost spatial axis other than the vector and row
// axes, with extent > 1, that every vector operand (a load indexed by the
// vector axis) depends on and no broadcast operand (one that is not) does,
// there being one of each; -1 when none.
int PickColAxis(const Stage& st, int vec_axis, int row_axis) {
  const std::vector<const TensorLoadNode*> loads = Loads(st);
  const VarNode* vec = st.op->axis[vec_axis].var_node();
  const bool has_broadcast =
      std::any_of(loads.begin(), loads.end(), [&](const TensorLoadNode* l) { return !LoadUses(l, vec); });
  if (!has_broadcast || loads.size() < 2) return -1;
  for (int a = 0; a < static_cast<int>(st.op->axis.size()); ++a) {
    if (a == vec_axis || a == row_axis || st.op->axis[a].extent <= 1) continue;
    const VarNode* v = st.op->axis[a].var_node();
    const bool qualifies = std::all_of(loads.begin(), loads.end(), [&](const TensorLoadNode* l) {
      return LoadUses(l, vec) == LoadUses(l, v);
    });
    if (qualifies) return a;
  }
  return -1;
}

// Whether the vector axis is not the output's last one (the axes after it
// have extent 1: a row maximum or sum that keeps its reduced dimension) and
// no operand is contiguous along it: every vector lane would load from
// another row (softmax's maximum over the rows of attention scores ran
// slower vectorized across rows than the parallel loop nest).
bool StridedAlongTheVector(const Stage& st, int vec_axis) {
  if (vec_axis == static_cast<int>(st.op->axis.size()) - 1) return false;
  const VarNode* vec = st.op->axis[vec_axis].var_node();
  const std::vector<const TensorLoadNode*> loads = Loads(st);
  return std::none_of(loads.begin(), loads.end(), [&](const TensorLoadNode* l) {
    return !l->indices.empty() && l->indices.back().as<VarNode>() == vec;
  });
}

int64_t ReduceTotal(const Stage& st) {
  int64_t total = 1;
  for (const IterVar& iv : st.op->reduce_axis) total *= std::max<int64_t>(1, iv.extent);
  return total;
}

// Bytes of the operands one reduction step of the block reads.
int64_t StepBytes(const RegisterBlockPlan& plan, const RegisterBlock& b) {
  return (b.rows + b.vec_length * b.cols) * plan.element_bytes;
}

std::string Kib(int64_t bytes) {
  std::ostringstream os;
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) == 0) {
    os << bytes / (1024 * 1024) << " MiB";
  } else if (bytes >= 1024) {
    os << static_cast<double>(bytes) / 1024 << " KiB";
  } else {
    os << bytes << " B";
  }
  return os.str();
}

template <typename T>
const T& PickOne(const std::vector<T>& v, std::mt19937* rng) {
  return v[RandomIndex(rng, static_cast<int64_t>(v.size()))];
}

// Inner parts of the reduce axes: the main one's innermost from `kc`, the
// others' innermost from `other`; middle parts 1; parts[0] the rest.
std::vector<std::vector<int64_t>> ReduceParts(const Stage& st, int main_reduce, int n_reduce, int64_t kc,
                                              const std::vector<int64_t>& other) {
  std::vector<std::vector<int64_t>> out;
  for (int r = 0; r < static_cast<int>(st.op->reduce_axis.size()); ++r) {
    const int64_t extent = std::max<int64_t>(1, st.op->reduce_axis[r].extent);
    std::vector<int64_t> parts(n_reduce, 1);
    const int64_t inner = n_reduce < 2 ? 1 : r == main_reduce ? kc : other[r];
    parts.back() = inner;
    parts[0] = n_reduce < 2 ? extent : extent / inner;
    out.push_back(parts);
  }
  return out;
}

// The reduce axis whose inner part is innermost: the one the broadcast
// operand (a load not indexed by the vector axis) is contiguous along, where
// there is one (the input-channel lane of an NCHWc convolution: its values
// share a cache line, whereas a step over the channel blocks jumps a whole
// image; with a dot-product group, the axis of the groups in that lane), the
// longest of those; else the longest reduce axis (the later on a tie). Never
// the dot-product group `dot` (it stays whole, outside). -1 without reduce
// axes.
int MainReduce(const Stage& st, int vec_axis, int dot) {
  const auto& reduce = st.op->reduce_axis;
  auto longest = [&](const std::function<bool(int)>& eligible) {
    int best = -1;
    for (int r = 0; r < static_cast<int>(reduce.size()); ++r) {
      if (r != dot && eligible(r) && (best < 0 || reduce[r].extent >= reduce[best].extent)) best = r;
    }
    return best;
  };
  if (vec_axis >= 0) {
    const VarNode* vec = st.op->axis[vec_axis].var_node();
    const std::vector<const TensorLoadNode*> loads = Loads(st);
    const VarNode* dot_var = dot >= 0 ? reduce[dot].var_node() : nullptr;
    const int contiguous = longest([&](int r) {
      const VarNode* v = reduce[r].var_node();
      return reduce[r].extent > 1 && std::any_of(loads.begin(), loads.end(), [&](const TensorLoadNode* l) {
               if (LoadUses(l, vec) || l->indices.empty()) return false;
               const Expr& last = l->indices.back();
               return last.as<VarNode>() == v ||
                      (dot_var != nullptr && UsesVar(last, dot_var) && UsesVar(last, v));
             });
    });
    if (contiguous >= 0) return contiguous;
  }
  return longest([](int) { return true; });
}

}  // namespace

int DotReduceAxis(const Stage& st, int vec_axis) {
  // Elements per 32-bit lane: 4 bytes into int32 (vpdpbusd), 2 bfloat16 into float32 (vdpbf16ps).
  const DataType out = st.op->dtype;
  if (vec_axis < 0 || out.bits != 32 || (!out.is_int() && !(out.is_float() && !out.is_bfloat16()))) return -1;
  const int64_t group = out.is_int() ? 4 : 2;
  const VarNode* vec = st.op->axis[vec_axis].var_node();
  const std::vector<const TensorLoadNode*> loads = Loads(st);
  const auto& reduce = st.op->reduce_axis;
  for (int r = 0; r < static_cast<int>(reduce.size()); ++r) {
    const VarNode* v = reduce[r].var_node();
    if (reduce[r].extent != group) continue;
    bool packed_operand = false, bytes_only = true;  // bytes_only: the narrow type of the group
    for (const TensorLoadNode* load : loads) {
      if (!LoadUses(load, v)) continue;
      bytes_only = bytes_only && (out.is_int() ? load->dtype.bits == 8 : load->dtype.is_bfloat16());
      packed_operand = packed_operand || (LoadUses(load, vec) && !load->indices.empty() &&
                                          load->indices.back().as<VarNode>() == v);
    }
    if (packed_operand && bytes_only) return r;
  }
  return -1;
}

int64_t FloorDivPeriod(const TensorLoadNode* load, const VarNode* v) {
  int64_t uses = 0, divided = 0, period = 0;
  for (const Expr& index : load->indices) {
    PostOrderVisit(index, [&](const Expr& x) {
      if (x.get() == v) ++uses;
      const auto* div = x.as<BinaryNode>();
      if (div == nullptr || div->op != BinOp::FloorDiv || div->a.get() != v) return;
      const auto* divisor = div->b.as<IntImmNode>();
      if (divisor == nullptr || divisor->value < 2) return;
      ++divided;
      period = period == 0 ? divisor->value : std::gcd(period, divisor->value);
    });
  }
  return uses > 0 && uses == divided ? period : 0;
}

int PickRowAxis(const Stage& st, int vec_axis) {
  const std::vector<const TensorLoadNode*> loads = Loads(st);
  const auto& uses = LoadUses;
  const VarNode* vec = st.op->axis[vec_axis].var_node();
  int best = -1, best_score = -1;
  for (int a = 0; a < static_cast<int>(st.op->axis.size()); ++a) {
    if (a == vec_axis || st.op->axis[a].extent <= 1) continue;
    const VarNode* v = st.op->axis[a].var_node();
    int score = 0;
    for (const TensorLoadNode* load : loads)
      score += uses(load, vec) && (!uses(load, v) || FloorDivPeriod(load, v) > 0);
    if (score >= best_score) best = a, best_score = score;
  }
  return best;
}

int64_t RowPeriod(const Stage& st, int vec_axis, int row_axis) {
  if (vec_axis < 0 || row_axis < 0) return 0;
  const VarNode* vec = st.op->axis[vec_axis].var_node();
  const VarNode* row = st.op->axis[row_axis].var_node();
  int64_t period = 0;
  for (const TensorLoadNode* load : Loads(st)) {
    if (!LoadUses(load, vec) || !LoadUses(load, row)) continue;
    const int64_t p = FloorDivPeriod(load, row);
    if (p == 0) return 0;  // a vector operand that varies along every row
    period = period == 0 ? p : std::gcd(period, p);
  }
  return period;
}

int64_t VectorRegisterCount(const HardwareParams& hw) {
  if (hw.num_vector_registers > 0) return hw.num_vector_registers;
  return hw.vector_unit_bytes >= 64 ? 32 : 16;
}

int64_t FmaUnitCount(const HardwareParams& hw) { return hw.fma_units > 0 ? hw.fma_units : 1; }
int64_t L1Bytes(const HardwareParams& hw) { return hw.l1_cache_bytes > 0 ? hw.l1_cache_bytes : 32 * 1024; }
int64_t L2Bytes(const HardwareParams& hw) { return hw.l2_cache_bytes > 0 ? hw.l2_cache_bytes : 1024 * 1024; }

namespace {

// Where the target multiplies tiles (AMX) for a dot-product group's operands
// (4 bytes: amx-int8; 2 bfloat16: amx-bf16) and a row of 16 lanes is one row
// of a tile: a block of up to 32 rows (two tiles of A) and 2 columns of 16
// lanes (two tiles of B), four tiles of C, which the code generator
// multiplies as tiles (codegen/llvm/amx_tile.h). Four independent tiles of C
// hide the multiply's latency, and each tile of A or B serves two multiplies.
std::optional<RegisterBlock> TileMultiplyBlock(const SketchContext& ctx, const Stage& st,
                                               const RegisterBlockPlan& plan) {
  constexpr int64_t kTileRows = 16, kTileLanes = 16, kRowTiles = 2, kColTiles = 2;
  if (plan.dot_reduce < 0 || plan.row_axis < 0 || plan.lanes != kTileLanes || plan.element_bytes != 4)
    return std::nullopt;
  const CpuSpec& cpu = ctx.task.target.cpu;
  const int64_t group = st.op->reduce_axis[plan.dot_reduce].extent;
  if (!cpu.Has("amx-tile") || !cpu.Has(group == 4 ? "amx-int8" : "amx-bf16")) return std::nullopt;
  const auto& axes = st.op->axis;
  if (axes[plan.vec_axis].extent % kTileLanes != 0) return std::nullopt;
  RegisterBlock b;
  for (int64_t d : Divisors(axes[plan.row_axis].extent)) {  // whole tiles of rows, or one tile
    if (d <= kTileRows || (d <= kRowTiles * kTileRows && d % kTileRows == 0)) b.rows = d;
  }
  if (plan.col_axis >= 0) {
    for (int64_t d : Divisors(axes[plan.col_axis].extent)) {
      if (d <= kColTiles) b.cols = d;
    }
  }
  b.vec_length = kTileLanes;
  b.vectors = 1;
  b.tile = true;
  b.throughput = static_cast<double>(b.rows * b.cols * kTileLanes);
  return b;
}

}  // namespace

RegisterBlockPlan PlanRegisterBlocks(const SketchContext& ctx, const Stage& st) {
  RegisterBlockPlan plan;
  bool tile_block = false;
  const HardwareParams& hw = ctx.task.hardware_params;
  plan.element_bytes = std::max(1, st.op->dtype.bytes());
  plan.lanes = std::max<int64_t>(1, hw.vector_unit_bytes / plan.element_bytes);
  plan.registers = VectorRegisterCount(hw);
  plan.fma_units = FmaUnitCount(hw);
  const auto& axes = st.op->axis;
  for (int a = static_cast<int>(axes.size()) - 1; a >= 0 && plan.vec_axis < 0; --a) {
    if (axes[a].extent > 1) plan.vec_axis = a;
  }
  plan.dot_reduce = DotReduceAxis(st, plan.vec_axis);
  plan.main_reduce = MainReduce(st, plan.vec_axis, plan.dot_reduce);
  if (plan.vec_axis < 0) return plan;
  if (StridedAlongTheVector(st, plan.vec_axis)) {
    plan.vec_axis = -1;
    plan.strided = true;
    return plan;
  }
  plan.row_axis = PickRowAxis(st, plan.vec_axis);
  if (plan.row_axis >= 0) plan.col_axis = PickColAxis(st, plan.vec_axis, plan.row_axis);
  const int64_t vec_extent = axes[plan.vec_axis].extent;
  const int64_t max_inner = std::max<int64_t>(1, ctx.params.max_innermost_split_factor);
  // Rows: divisors of the row axis' extent; where none reaches 4 (a prime
  // extent), non-dividing counts too (the last block's extra rows are guarded).
  const int64_t row_extent = plan.row_axis >= 0 ? axes[plan.row_axis].extent : 1;
  const int64_t max_rows = std::min(kMaxRows, max_inner);
  // Rows whose vector operand is the same within each period (a grouped
  // convolution's output channels of one group) stay within one period.
  const int64_t period = RowPeriod(st, plan.vec_axis, plan.row_axis);
  std::vector<std::pair<int64_t, bool>> rows_options;
  for (int64_t d : Divisors(row_extent)) {
    if (d <= max_rows && (period == 0 || period % d == 0)) rows_options.emplace_back(d, true);
  }
  const bool no_dividing_block = rows_options.back().first < 4 && row_extent > max_rows;
  // Elsewhere non-dividing counts wasting at most 1/kMaxNonDividingWaste of
  // the rows, kept apart: they join the blocks below only where they pay.
  std::vector<std::pair<int64_t, bool>> other_rows;
  for (int64_t r = 4; r <= max_rows && row_extent > max_rows && period == 0; ++r) {
    if (row_extent % r == 0) continue;
    const int64_t padded = CeilDiv(row_extent, r) * r;
    if (no_dividing_block && 4 * padded <= 5 * row_extent) rows_options.emplace_back(r, false);
    if (!no_dividing_block && row_extent >= kMinRowsForNonDividing &&
        kMaxNonDividingWaste * (padded - row_extent) <= padded)
      other_rows.emplace_back(r, false);
  }
  // Columns: divisors of the column axis' extent (1 without one).
  std::vector<int64_t> cols_options;
  for (int64_t d : Divisors(plan.col_axis >= 0 ? axes[plan.col_axis].extent : 1)) {
    if (d <= std::min(kMaxCols, max_inner)) cols_options.push_back(d);
  }
  // A uint8 x int8 group without VNNI (its widening form, WideningThroughput).
  const bool widening = plan.dot_reduce >= 0 && st.op->dtype.is_int() &&
                        ctx.task.target.cpu.ByteDotProductForm() == CpuSpec::ByteDotProduct::kWidening;
  plan.widening = widening;
  const std::vector<VecOption> vec_options = VecOptions(vec_extent, plan.lanes, max_inner);
  auto blocks_of = [&](const std::vector<std::pair<int64_t, bool>>& rows_list) {
    std::vector<RegisterBlock> out;
    for (const VecOption& v : vec_options) {
      for (const auto& [rows, divide] : rows_list) {
        for (int64_t cols : cols_options) {
          if (!widening && (rows + 1) * v.vectors * cols + 1 > plan.registers) continue;
          const double row_share =
              static_cast<double>(row_extent) / static_cast<double>(CeilDiv(row_extent, rows) * rows);
          RegisterBlock b;
          b.rows = rows;
          b.vec_length = v.length;
          b.vectors = v.vectors;
          b.cols = cols;
          b.vec_divides = v.divides;
          b.rows_divide = divide;
          b.throughput = (widening ? WideningThroughput(rows, v, cols, vec_extent, plan.registers)
                                   : Throughput(rows, v, cols, vec_extent, plan.fma_units)) *
                         row_share;
          out.push_back(b);
        }
      }
    }
    return out;
  };
  auto best_of = [](const std::vector<RegisterBlock>& list) {
    double best = 0;
    for (const RegisterBlock& b : list) best = std::max(best, b.throughput);
    return best;
  };
  std::vector<RegisterBlock> blocks = blocks_of(rows_options);
  // Rows that divide nothing join where the divisors leave the register file
  // badly used: 128 rows on AVX2's 16 registers allow 8 x 1 or 4 x 2 vectors
  // (8 accumulators, FMA latency-bound), where 5 or 6 rows of 2 vectors keep
  // 10-12 accumulators busy for 3% of rows guarded. The margin covers what
  // the model does not count: the guarded last block.
  const std::vector<RegisterBlock> other = blocks_of(other_rows);
  if (best_of(other) >= kNonDividingGain * best_of(blocks))
    blocks.insert(blocks.end(), other.begin(), other.end());
  if (blocks.empty()) return plan;
  if (const auto tile = TileMultiplyBlock(ctx, st, plan)) {
    plan.family.push_back(*tile);  // the tile registers hold it; the vector blocks follow
    tile_block = true;
  }
  std::sort(blocks.begin(), blocks.end(), [](const RegisterBlock& a, const RegisterBlock& b) {
    if (a.throughput != b.throughput) return a.throughput > b.throughput;
    if (a.rows != b.rows) return a.rows > b.rows;  // the vector operand streams from further away
    if (a.cols != b.cols) return a.cols < b.cols;
    if (a.vec_divides != b.vec_divides) return a.vec_divides;
    if (a.rows_divide != b.rows_divide) return a.rows_divide;
    return a.vec_length > b.vec_length;
  });
  const double best = blocks.front().throughput;
  for (const RegisterBlock& b : blocks) {
    if (b.throughput >= kFamilyShare * best && !tile_block) plan.family.push_back(b);
  }
  return plan;
}

// Whether a broadcast operand (a load not indexed by the vector axis) has
// the row axis as its last, contiguous index.
bool BroadcastContiguousAlongRows(const Stage& st, const RegisterBlockPlan& plan) {
  if (plan.row_axis < 0 || plan.vec_axis < 0) return false;
  const VarNode* vec = st.op->axis[plan.vec_axis].var_node();
  const VarNode* row = st.op->axis[plan.row_axis].var_node();
  for (const TensorLoadNode* load : Loads(st)) {
    if (LoadUses(load, vec) || load->indices.empty()) continue;
    if (load->indices.back().as<VarNode>() == row) return true;
  }
  return false;
}

TileParts ExpertTileParts(const SketchContext& ctx, const Stage& st, const RegisterBlockPlan& plan,
                          int n_space, int n_reduce) {
  AS_ICHECK(n_space >= 1 && n_reduce >= 1);
  TileParts out;
  // One column where a block of one column is in the family; where every
  // one-column block runs below half the best (a short row axis: a few
  // output pixels and many channel blocks), the best block with its columns.
  // A dot-product stage takes a best block as modelled, the one of fewest
  // accumulators among equals: its vector axis is the packed operand's one
  // vector of lanes, so columns are its only way to serve several vectors
  // from one broadcast group, and one column needs many rows, each a stream
  // of the broadcast operand. Beyond what hides the latency, accumulators
  // only crowd the register file. On a Zen 4, 8 rows x 2 columns ran 1.37x
  // 16 x 1 for a bfloat16 matmul and 1.10x for a uint8 x int8 one; 14 x 2
  // for a convolution ran 1.4x slower than 7 x 2
  // (docs/notes/quantized_figures.md).
  if (!plan.empty()) out.block = plan.family.front();
  if (plan.dot_reduce >= 0 && !plan.widening) {
    for (const RegisterBlock& candidate : plan.family) {
      if (candidate.throughput == out.block.throughput && candidate.accumulators() < out.block.accumulators())
        out.block = candidate;
    }
  } else {
    for (const RegisterBlock& candidate : plan.family) {
      if (candidate.cols == 1) {
        out.block = candidate;
        break;
      }
    }
  }
  const RegisterBlock& b = out.block;
  const int64_t reduce_total = ReduceTotal(st);
  const int64_t l1 = L1Bytes(ctx.task.hardware_params), l2 = L2Bytes(ctx.task.hardware_params);
  std::ostringstream note;
  for (int a = 0; a < static_cast<int>(st.op->axis.size()); ++a) {
    const int64_t extent = std::max<int64_t>(1, st.op->axis[a].extent);
    std::vector<int64_t> parts(n_space, 1);
    int64_t inner = 1;
    if (!plan.empty()) inner = BlockPart(plan, b, a);
    if (n_space == 1) inner = 1;
    parts.back() = inner;
    const int64_t rest = CeilDiv(extent, inner);
    if (n_space >= 3 && a == plan.vec_axis) {
      // A panel of the vector operand over the whole reduction stays in half of L2.
      int64_t panel = 1;
      for (int64_t d : Divisors(rest)) {
        if (d * inner * reduce_total * plan.element_bytes <= l2 / 2) panel = d;
      }
      parts[1] = panel;
      parts[0] = rest / panel;
      note << st.op->axis[a].name() << ": " << panel << " blocks of " << inner << " per panel ("
           << Kib(panel * inner * reduce_total * plan.element_bytes)
           << " of the vector operand <= L2/2 = " << Kib(l2 / 2) << "); ";
    } else if (n_space >= 3 && a == plan.row_axis) {
      parts[1] = rest;  // the row blocks run inside the panel loop
      // Where the broadcast operand is contiguous along the rows (A stored
      // transposed, [K, M]), one cache line of it holds several blocks' rows
      // at a step of the reduction: those blocks run inside the reduction's
      // outer loop, so that each line comes into L1 once per chunk of K, not
      // once per block.
      const int64_t line = std::max<int64_t>(1, ctx.task.hardware_params.cache_line_bytes);
      const int64_t per_line = line / std::max<int64_t>(1, inner * plan.element_bytes);
      if (n_space >= 4 && per_line > 1 && BroadcastContiguousAlongRows(st, plan)) {
        int64_t blocks = 1;
        for (int64_t d : Divisors(rest)) {
          if (d <= per_line) blocks = d;
        }
        parts[n_space - 2] = blocks;
        parts[1] = rest / blocks;
        if (blocks > 1)
          note << st.op->axis[a].name() << ": " << blocks
               << " row blocks share a cache line of the broadcast operand; ";
      }
    } else {
      parts[0] = n_space == 1 ? extent : rest;
    }
    out.spatial.push_back(parts);
  }
  if (n_space >= 3 && plan.col_axis >= 0 && plan.vec_axis >= 0) {
    // The column axis indexes the vector operand too (the output channel
    // blocks of an NCHWc convolution): as many of its blocks join the panel
    // as keep it within half of L2, so that the broadcast operand's rows (the
    // input pixels) are read once per panel, not once per column block.
    std::vector<int64_t>& parts = out.spatial[plan.col_axis];
    const int64_t vec_panel = out.spatial[plan.vec_axis][1] * out.spatial[plan.vec_axis].back();
    const int64_t rest = parts[0] * parts[1];
    int64_t panel = 1;
    for (int64_t d : Divisors(rest)) {
      if (d * parts.back() * vec_panel * reduce_total * plan.element_bytes <= l2 / 2) panel = d;
    }
    parts[1] = panel;
    parts[0] = rest / panel;
    note << st.op->axis[plan.col_axis].name() << ": " << panel << " of " << rest << " in the panel; ";
  }
  int64_t kc = 1;
  if (plan.main_reduce >= 0 && b.tile) {
    // A tile block keeps its accumulators in tile registers over its whole
    // inner reduction (codegen/llvm/amx_tile.h), loading and storing them
    // once: the whole reduction, in whole tiles of K, up to kMaxTileGroups.
    const int64_t extent = std::max<int64_t>(1, st.op->reduce_axis[plan.main_reduce].extent);
    for (int64_t d : Divisors(extent)) {
      if (d <= kMaxTileGroups && (d % kTileGroups == 0 || kc % kTileGroups != 0)) kc = d;
    }
    note << st.op->reduce_axis[plan.main_reduce].name() << " inner " << kc
         << " (the tiles of C stay in tile registers over it)";
  } else if (plan.main_reduce >= 0) {
    const int64_t extent = std::max<int64_t>(1, st.op->reduce_axis[plan.main_reduce].extent);
    for (int64_t d : Divisors(extent)) {
      if (d * StepBytes(plan, b) <= l1 / 2 && d <= ctx.params.max_innermost_split_factor) kc = d;
    }
    note << st.op->reduce_axis[plan.main_reduce].name() << " inner " << kc << " ("
         << Kib(kc * StepBytes(plan, b)) << " of operands <= L1/2 = " << Kib(l1 / 2) << ")";
  }
  out.reduce = ReduceParts(st, plan.main_reduce, n_reduce, kc,
                           std::vector<int64_t>(st.op->reduce_axis.size(), int64_t{1}));
  out.note = note.str();
  return out;
}

TileParts SampleBlockTileParts(const SketchContext& ctx, const Stage& st, const RegisterBlockPlan& plan,
                               int n_space, int n_reduce, std::mt19937* rng) {
  AS_ICHECK(!plan.empty() && n_space >= 1 && n_reduce >= 1);
  TileParts out;
  out.block = PickOne(plan.family, rng);
  const RegisterBlock& b = out.block;
  const int64_t l1 = L1Bytes(ctx.task.hardware_params), l2 = L2Bytes(ctx.task.hardware_params);
  const int num_axes = static_cast<int>(st.op->axis.size());
  std::vector<int64_t> rest(num_axes);
  for (int a = 0; a < num_axes; ++a) {
    const int64_t extent = std::max<int64_t>(1, st.op->axis[a].extent);
    std::vector<int64_t> parts(n_space, 1);
    parts.back() = n_space == 1 ? 1 : BlockPart(plan, b, a);
    rest[a] = CeilDiv(extent, parts.back());
    out.spatial.push_back(parts);
  }
  if (n_space >= 3) {
    // The level above the block: an output tile that fits half of L2 and
    // leaves at least one tile per core where the extents allow.
    for (int a = 0; a < num_axes; ++a) out.spatial[a][n_space - 2] = PickOne(Divisors(rest[a]), rng);
    auto tile_bytes = [&] {
      int64_t bytes = plan.element_bytes;
      for (int a = 0; a < num_axes; ++a) bytes *= out.spatial[a][n_space - 2] * out.spatial[a][n_space - 1];
      return bytes;
    };
    auto tiles = [&] {
      int64_t n = 1;
      for (int a = 0; a < num_axes; ++a) n *= rest[a] / out.spatial[a][n_space - 2];
      return n;
    };
    const int64_t cores = std::max<int64_t>(1, ctx.task.hardware_params.num_cores);
    while (tile_bytes() > l2 / 2 || tiles() < cores) {
      int widest = 0;
      for (int a = 1; a < num_axes; ++a) {
        if (out.spatial[a][n_space - 2] > out.spatial[widest][n_space - 2]) widest = a;
      }
      int64_t& part = out.spatial[widest][n_space - 2];
      if (part == 1) break;
      std::vector<int64_t> smaller = Divisors(part);
      smaller.pop_back();
      part = PickOne(smaller, rng);
    }
    for (int a = 0; a < num_axes; ++a) rest[a] /= out.spatial[a][n_space - 2];
  }
  for (int a = 0; a < num_axes; ++a) {
    for (int p = n_space - 3; p >= 1; --p) {
      out.spatial[a][p] = PickOne(Divisors(rest[a]), rng);
      rest[a] /= out.spatial[a][p];
    }
    if (n_space > 1) out.spatial[a][0] = rest[a];
    if (n_space == 1) out.spatial[a][0] = std::max<int64_t>(1, st.op->axis[a].extent);
  }
  // The main reduction's inner part: a divisor (at most
  // max_innermost_split_factor) whose operand rows take between 1/16 and 1/2
  // of L1 (the largest below that when none does).
  int64_t kc = 1;
  std::vector<int64_t> other(st.op->reduce_axis.size(), 1);
  for (int r = 0; r < static_cast<int>(st.op->reduce_axis.size()); ++r) {
    const int64_t extent = std::max<int64_t>(1, st.op->reduce_axis[r].extent);
    std::vector<int64_t> options;
    int64_t largest = 1;
    for (int64_t d : Divisors(extent)) {
      if (r != plan.main_reduce) {
        if (d <= ctx.params.max_innermost_split_factor) options.push_back(d);
        continue;
      }
      if (b.tile) {  // whole tiles of K; the accumulators stay in tiles however long (ExpertTileParts)
        if (d % kTileGroups == 0 && d <= kMaxTileGroups) options.push_back(d);
        continue;
      }
      const int64_t bytes = d * StepBytes(plan, b);
      if (d > ctx.params.max_innermost_split_factor) break;
      if (bytes <= l1 / 2) largest = d;
      if (bytes <= l1 / 2 && bytes * 16 >= l1) options.push_back(d);
    }
    if (options.empty()) options.push_back(largest);
    (r == plan.main_reduce ? kc : other[r]) = PickOne(options, rng);
  }
  // A dot-product group stays whole in the outer part (dot_product.h).
  if (plan.dot_reduce >= 0) other[plan.dot_reduce] = 1;
  out.reduce = ReduceParts(st, plan.main_reduce, n_reduce, kc, other);
  // Middle reduce parts: random divisors of what the innermost leaves.
  for (int r = 0; r < static_cast<int>(out.reduce.size()); ++r) {
    if (r == plan.dot_reduce) continue;
    auto& parts = out.reduce[r];
    for (int p = n_reduce - 2; p >= 1; --p) {
      parts[p] = PickOne(Divisors(parts[0]), rng);
      parts[0] /= parts[p];
    }
  }
  return out;
}

std::vector<std::optional<int64_t>> SplitLengths(const std::vector<int64_t>& parts) {
  return {parts.begin() + 1, parts.end()};
}

TilingLevels CpuTilingLevels(const SearchParams& params) {
  const std::string& s = params.cpu_tiling_structure;
  return {static_cast<int>(std::count(s.begin(), s.end(), 'S')),
          static_cast<int>(std::count(s.begin(), s.end(), 'R'))};
}

bool IsTilingSplit(const State& s, const SplitStep& split, const TilingLevels& levels, bool unknown) {
  const Stage& st = s.stage(split.stage_id);
  const bool all_unknown = std::all_of(split.lengths.begin(), split.lengths.end(),
                                       [](const std::optional<int64_t>& l) { return !l.has_value(); });
  if ((unknown && !all_unknown) || !split.inner_to_outer || !NeedsMultiLevelTiling(s, split.stage_id))
    return false;
  if (split.iter_id < 0 || split.iter_id >= st.num_iters()) return false;
  const int node = st.leaves[split.iter_id];
  if (node >= st.num_root) return false;
  const bool spatial = node < static_cast<int>(st.op->axis.size());
  return static_cast<int>(split.lengths.size()) + 1 == (spatial ? levels.space : levels.reduce);
}

std::map<int, TilingSplitRole> TilingSplitRoles(const State& state, const TilingLevels& levels) {
  std::map<int, TilingSplitRole> roles;
  State s(state.init_dag());
  const std::vector<Step>& steps = state.steps();
  for (int i = 0; i < static_cast<int>(steps.size()); ++i) {
    const auto* split = std::get_if<SplitStep>(&steps[i]);
    if (split != nullptr && !IsRfactorSplit(steps, i) && IsTilingSplit(s, *split, levels, false)) {
      const Stage& st = s.stage(split->stage_id);
      roles[i] = {st.name(), st.leaves[split->iter_id]};
    }
    s = s.Apply(steps[i]);
  }
  return roles;
}

int InnermostLeafOf(const Stage& st, int root) {
  for (int i = st.num_iters() - 1; i >= 0; --i) {
    int node = st.leaves[i];
    while (node >= st.num_root) {
      const IterRelation* from = nullptr;
      for (const IterRelation& r : st.relations) {
        if (std::find(r.children.begin(), r.children.end(), node) != r.children.end()) from = &r;
      }
      if (from == nullptr || from->kind != IterRelation::Kind::Split) break;
      node = from->parents[0];
    }
    if (node == root) return i;
  }
  return -1;
}

bool InFamily(const RegisterBlockPlan& plan, int64_t rows, int64_t vec_length, int64_t cols) {
  return std::any_of(plan.family.begin(), plan.family.end(), [&](const RegisterBlock& b) {
    return b.rows == rows && b.vec_length == vec_length && b.cols == cols;
  });
}

int64_t BlockPart(const RegisterBlockPlan& plan, const RegisterBlock& block, int axis) {
  if (axis == plan.vec_axis) return block.vec_length;
  if (axis == plan.row_axis) return block.rows;
  if (axis == plan.col_axis) return block.cols;
  return 1;
}

}  // namespace autosched
