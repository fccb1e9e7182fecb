// Analysis of a lowered loop nest for the cost model: one StoreAnalysis per
// BufferStore statement, holding the raw quantities that the feature table
// (features.cc) turns into one row of features.
//
// Roadmap
//  - AnalyzeStores (feature_analysis.cc) walks the loop nest keeping the stack
//    of enclosing loops, let-bindings, allocations, guards and pragmas; at each
//    store it counts operations (weighted by the trip count), records loop
//    annotations and GPU bindings, and hands the accesses to buffer_access.cc.
//  - buffer_access.cc expresses every access as terms (stride, extent) over
//    the enclosing loops, then derives bytes, unique bytes, cache lines, reuse,
//    the footprint per loop level and the arithmetic-intensity curve.
//
// Counting conventions: a loop's trip count is its constant extent (a
// non-constant extent is evaluated with the outer loop variables at 0); a
// vector operation of n lanes counts n operations; a[i]*b + c on floats counts
// one multiply-add instead of a multiply and an add.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "lower/stmt.h"
#include "task/target.h"

namespace autosched {

// Kinds of operations counted per statement (the computation features).
enum class OpCountKind : uint8_t {
  FloatMad,
  FloatAddSub,
  FloatMul,
  FloatDivMod,
  FloatCmp,
  FloatMathFunc,   // exp, log, sqrt, rsqrt, tanh, sigmoid, erf, pow
  FloatOtherFunc,  // fabs, floor, ceil, round, casts to float
  IntMad,
  IntAddSub,
  IntMul,
  IntDivMod,
  IntCmp,  // comparisons and min / max
  IntMathFunc,
  IntOtherFunc,  // casts to integers, fabs of integers
  BoolOp,        // and, or, not
  SelectOp,      // select and if_then_else
  kCount,
};
constexpr int kNumOpKinds = static_cast<int>(OpCountKind::kCount);

// One enclosing loop of a statement.
struct LoopInfo {
  const VarNode* var = nullptr;
  int64_t extent = 1;
  ForKind kind = ForKind::Serial;
};

// Loops of one annotation kind around a statement (vectorize, unroll, parallel).
struct AnnotationStats {
  double num = 0;          // how many such loops (a vector store counts as one vectorized loop)
  double prod = 0;         // product of their extents
  double len = 0;          // extent of the innermost one
  double pos = 0;          // 1 + loop levels between the innermost one and the statement (0: none)
  double over_reduce = 0;  // 1 when the innermost one does not index the stored element
};

enum class AccessType : uint8_t { Read, Write, ReadWrite };
enum class ReuseType : uint8_t { LoopMultipleRead, SerialMultipleReadWrite, NoReuse };

// Accesses of one buffer by one statement.
struct BufferStats {
  std::string name;
  AccessType access = AccessType::Read;
  double bytes = 0;         // bytes moved by every execution of the statement
  double unique_bytes = 0;  // distinct bytes touched over the whole loop nest
  double lines = 0;         // cache lines moved, reusing only along the innermost varying loop
  double unique_lines = 0;  // distinct cache lines over the whole loop nest
  ReuseType reuse = ReuseType::NoReuse;
  double reuse_dis_iter = 0;   // iterations between two uses of the same element
  double reuse_dis_bytes = 0;  // bytes of all buffers touched between two uses
  double reuse_ct = 0;         // how many times an element is reused
  double stride = 0;           // elements between accesses of the innermost varying loop
};

constexpr int kIntensityCurveSamples = 10;

// How the first warp of a GPU work group touches memory at a statement
// (gpu_access.h); all 0 on a CPU.
struct GpuAccessStats {
  double global_access_bytes = 0;  // the widest access of one work item to global memory, bytes
  double shared_access_bytes = 0;  // the widest access of one work item to local (shared) memory, bytes
  double global_efficiency =
      0;                      // worst global access: fewest sectors for its bytes / sectors moved (0: none)
  double global_sectors = 0;  // 32-byte sectors the warp's global accesses move, summed over them
  double bank_conflict = 0;   // worst shared access: words the busiest bank serves per request (0: none)
};

struct StoreAnalysis {
  std::array<double, kNumOpKinds> ops{};  // weighted by the trip count
  std::vector<LoopInfo> loops;            // enclosing loops, outermost first
  double outer_prod = 1;                  // product of the enclosing loops' extents
  int lanes = 1;                          // lanes of the stored value
  int elem_bytes = 4;                     // bytes of one element of the stored buffer
  AnnotationStats vectorize, unroll, parallel;
  // GPU bindings of the enclosing loops (extent 1 when not bound).
  bool is_gpu = false;
  std::array<double, 3> block_idx{1, 1, 1}, thread_idx{1, 1, 1};
  double vthread = 1;
  // Bytes of the "shared" buffers allocated around the statement (per group),
  // and of the private ("local") ones (per work item: registers, or spills).
  double shared_bytes = 0;
  double local_bytes = 0;
  GpuAccessStats gpu_access;
  std::vector<BufferStats> buffers;  // sorted by bytes, largest first
  std::array<double, kIntensityCurveSamples> intensity{};
  // The stored buffer when it is allocated inside the function.
  double alloc_bytes = 0, alloc_outer_prod = 0, alloc_inner_prod = 0, alloc_is_local = 0;
  // The accumulator tile of the stored buffer (buffer_access.cc): bytes
  // written inside the innermost loop that does not move them, that loop's
  // extent, and whether every loop inside it is unrolled or vectorized.
  double acc_tile_bytes = 0, acc_loop_extent = 0;
  bool acc_tile_unrolled = false;
  // Bytes all buffers touch inside the accumulator loop (the loop included).
  double acc_footprint_bytes = 0;
  // footprint[k]: bytes all buffers of the statement touch inside its
  // innermost k loops (k = 0: one execution; k = loops.size(): the whole nest).
  std::vector<double> footprint;
  int64_t auto_unroll_max_step = 0;
  int guard_depth = 0;               // enclosing IfThenElse statements
  bool is_reduction_update = false;  // the value reads the stored element
  double innermost_loop_extent = 0;  // extent of the innermost enclosing loop (0: none)
  HardwareParams hardware;
};

// Analyses every BufferStore of f, in program order.
std::vector<StoreAnalysis> AnalyzeStores(const LoweredFunc& f, const HardwareParams& hardware);

}  // namespace autosched
