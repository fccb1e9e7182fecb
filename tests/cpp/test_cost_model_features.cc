// Program features of the cost model: the feature table, the access analysis
// (unique elements and lines of tiles and windows) and the values extracted
// from lowered matmuls, checked by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "cost_model/buffer_access.h"
#include "cost_model/features.h"
#include "cost_model/gpu_access.h"
#include "lower/lower.h"
#include "schedule_test_util.h"
#include "support/error.h"

namespace autosched {
namespace {

using sched_test::Axis;
using sched_test::Matmul;

constexpr int kC = 2;  // stage of C in Matmul

// i, j split by 8 and 16; loops io (parallel), jo, k, ii (unrolled), ji (vectorized).
State TiledMatmul(int64_t n) {
  State s(Matmul(n));
  s = s.Split(kC, 0, {8});   // io ii j k
  s = s.Split(kC, 2, {16});  // io ii jo ji k
  s = s.Reorder(kC, {0, 2, 4, 1, 3});
  s = s.Annotate(kC, 0, IteratorAnnotation::Parallel);
  s = s.Annotate(kC, 3, IteratorAnnotation::Unroll);
  return s.Annotate(kC, 4, IteratorAnnotation::Vectorize);
}

// Raw feature values by name, one map per row.
std::vector<std::map<std::string, double>> RawRows(const State& s, HardwareParams hw = {}) {
  ProgramFeatures f = ExtractFeatures(Lower(s), hw, /*log_transform=*/false);
  std::vector<std::map<std::string, double>> rows(f.rows);
  for (int r = 0; r < f.rows; ++r) {
    for (int k = 0; k < NumFeatures(); ++k) rows[r][FeatureNames()[k]] = f.values[r * NumFeatures() + k];
  }
  return rows;
}

const std::map<std::string, double>& UpdateRow(const std::vector<std::map<std::string, double>>& rows) {
  auto it =
      std::find_if(rows.begin(), rows.end(), [](const auto& r) { return r.at("is_reduction_update") == 1; });
  if (it == rows.end()) throw Error("no reduction update among the rows");
  return *it;
}

// The buffer slot (0..4) holding a buffer identified by its bytes.
std::string SlotWithBytes(const std::map<std::string, double>& row, double bytes) {
  for (int b = 0; b < kNumBufferSlots; ++b) {
    std::string prefix = "B" + std::to_string(b) + ".";
    if (row.at(prefix + "bytes") == bytes) return prefix;
  }
  return "none.";
}

TEST(CostModelFeatures, TableNamesAreUniqueAndComplete) {
  const std::vector<std::string>& names = FeatureNames();
  EXPECT_EQ(static_cast<int>(names.size()), NumFeatures());
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  EXPECT_EQ(names.front(), "float_mad");
  EXPECT_EQ(names.back(), "task_footprint_over_l2");
  for (const char* n : {"vec_len", "parallel_prod", "blockIdx_x_len", "B0.acc_read", "B4.stride",
                        "intensity_9", "alloc_bytes", "outer_prod", "gpu_bank_conflict"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  }
  EXPECT_EQ(NumFeatures(), 178);
}

// The target-relative features of TiledMatmul(64): loops io (8, parallel), jo (4), k (64), ii (8, unrolled)
// around a 16-lane store. Bytes touched inside the innermost loops: ii 608 (C 512, B 64, A 32), k ii 6656
// (C 512, B 4096, A 2048), jo k ii 20480 (C 2048, B 16384, A 2048), all 49152.
TEST(CostModelFeatures, TiledMatmulRelativeToTheTarget) {
  HardwareParams hw;  // 32-byte vectors; registers and caches unknown: 16 registers, L1 32 KiB, L2 512 KiB
  auto rows = RawRows(TiledMatmul(64), hw);
  const auto& r = UpdateRow(rows);
  EXPECT_EQ(r.at("target_lanes"), 8);
  EXPECT_EQ(r.at("target_vector_registers"), 16);
  EXPECT_EQ(r.at("vec_len_over_lanes"), 2);
  EXPECT_EQ(r.at("acc_tile_over_registers"), 1);  // 8 x 16 floats = 16 vectors of 32 bytes
  EXPECT_EQ(r.at("l1_tile_trips"), 4 * 64 * 8);   // jo k ii fit in 32 KiB, the nest does not
  EXPECT_EQ(r.at("l2_tile_trips"), 8 * 4 * 64 * 8);
  EXPECT_DOUBLE_EQ(r.at("acc_footprint_over_l1"), 6656.0 / 32768);
  EXPECT_DOUBLE_EQ(r.at("task_footprint_over_l2"), 20480.0 / 524288);  // the body of io

  // The same program on an AVX-512 CPU with smaller caches.
  hw.vector_unit_bytes = 64;
  hw.num_vector_registers = 32;
  hw.l1_cache_bytes = 16 * 1024;
  hw.l2_cache_bytes = 16 * 1024;
  auto wide_rows = RawRows(TiledMatmul(64), hw);
  const auto& w = UpdateRow(wide_rows);
  EXPECT_EQ(w.at("target_lanes"), 16);
  EXPECT_EQ(w.at("target_vector_registers"), 32);
  EXPECT_EQ(w.at("vec_len_over_lanes"), 1);
  EXPECT_EQ(w.at("acc_tile_over_registers"), 0.25);  // 8 vectors of 64 bytes in 32 registers
  EXPECT_EQ(w.at("l1_tile_trips"), 64 * 8);          // k ii: 6656 bytes fit, jo k ii do not
  EXPECT_EQ(w.at("l2_tile_trips"), 64 * 8);
  EXPECT_DOUBLE_EQ(w.at("task_footprint_over_l2"), 20480.0 / 16384);
}

TEST(CostModelFeatures, UniqueElementsOfTilesAndWindows) {
  EXPECT_EQ(UniqueElements({}), 1);
  EXPECT_EQ(UniqueElements({{0, 10}}), 1);           // a loop that does not move the index
  EXPECT_EQ(UniqueElements({{1, 8}, {64, 4}}), 32);  // a 4 x 8 tile of a 64-wide row-major array
  EXPECT_EQ(UniqueElements({{100, 5}}), 5);          // strided
  EXPECT_EQ(UniqueElements({{1, 3}, {1, 28}}), 30);  // 1-D window: 28 outputs of a 3-tap filter
  EXPECT_EQ(UniqueElements({{1, 3}, {1, 28}, {30, 3}, {30, 28}}), 900);  // 2-D window of a 30 x 30 input
  EXPECT_EQ(UniqueElements({{-1, 8}}), 8);                               // reversed
  EXPECT_EQ(UniqueLines({{1, 64}}, 16), 4);           // 64 contiguous floats = 4 lines of 64 bytes
  EXPECT_EQ(UniqueLines({{64, 8}}, 16), 8);           // a column: one line per element
  EXPECT_EQ(UniqueLines({{2, 8}}, 16), 1);            // every other element of one line
  EXPECT_EQ(UniqueLines({{1, 16}, {64, 4}}, 16), 4);  // a 4 x 16 tile
}

TEST(CostModelFeatures, TiledMatmulByHand) {
  const int64_t n = 64;
  auto rows = RawRows(TiledMatmul(n));
  ASSERT_EQ(rows.size(), 2u);  // C = 0 and C += A * B
  const auto& r = UpdateRow(rows);
  // One multiply-add per (i, j, k), 16 lanes at a time.
  EXPECT_EQ(r.at("float_mad"), n * n * n);
  EXPECT_EQ(r.at("float_addsub"), 0);
  EXPECT_EQ(r.at("float_mul"), 0);
  EXPECT_EQ(r.at("vec_num"), 1);
  EXPECT_EQ(r.at("vec_len"), 16);
  EXPECT_EQ(r.at("vec_pos"), 1);
  EXPECT_EQ(r.at("unroll_len"), 8);
  EXPECT_EQ(r.at("unroll_pos"), 1);  // the innermost remaining loop
  EXPECT_EQ(r.at("parallel_len"), 8);
  EXPECT_EQ(r.at("parallel_pos"), 4);  // io, jo, k, ii
  EXPECT_EQ(r.at("parallel_over_reduce"), 0);
  EXPECT_EQ(r.at("num_loops"), 4);
  EXPECT_EQ(r.at("outer_prod"), 8 * 4 * 64 * 8);
  EXPECT_EQ(r.at("is_gpu"), 0);
  EXPECT_EQ(r.at("threadIdx_x_len"), 0);
  EXPECT_EQ(r.at("num_buffers"), 3);
  EXPECT_EQ(r.at("vector_fill"), 2);  // 16 floats in a 32-byte vector unit
  EXPECT_EQ(r.at("parallel_core_usage"), 1);

  const double iters = 8 * 4 * 64 * 8;
  // C: read and written, 16 lanes each, reused across k.
  std::string c = SlotWithBytes(r, iters * 32 * 4);
  ASSERT_NE(c, "none.");
  EXPECT_EQ(r.at(c + "acc_read_write"), 1);
  EXPECT_EQ(r.at(c + "unique_bytes"), n * n * 4);
  EXPECT_EQ(r.at(c + "reuse_loop_read"), 1);
  EXPECT_EQ(r.at(c + "reuse_ct"), 64);
  EXPECT_EQ(r.at(c + "reuse_dis_iter"), 8);
  EXPECT_EQ(r.at(c + "stride"), 1);
  // B: a 16-lane row, the same for every ii.
  std::string b = SlotWithBytes(r, iters * 16 * 4);
  ASSERT_NE(b, "none.");
  EXPECT_EQ(r.at(b + "acc_read"), 1);
  EXPECT_EQ(r.at(b + "reuse_ct"), 8);
  EXPECT_EQ(r.at(b + "reuse_dis_iter"), 1);
  EXPECT_EQ(r.at(b + "stride"), 1);
  EXPECT_EQ(r.at(b + "unique_lines"), n * n * 4 / 64);
  // A: one broadcast element, moved by ii (64 apart) and k; jo reuses it.
  std::string a = SlotWithBytes(r, iters * 1 * 4);
  ASSERT_NE(a, "none.");
  EXPECT_EQ(r.at(a + "stride"), 64);
  EXPECT_EQ(r.at(a + "reuse_ct"), 4);
  EXPECT_EQ(r.at(a + "reuse_dis_iter"), 64 * 8);
  EXPECT_EQ(r.at(a + "lines"), iters);  // a new line for every ii
  EXPECT_EQ(r.at("B3.bytes"), 0);       // fewer than five buffers: zeros
  // Intensity grows from the innermost body to the whole nest.
  EXPECT_LT(r.at("intensity_0"), r.at("intensity_9"));
}

TEST(CostModelFeatures, CacheWriteAllocationAndCoreUsage) {
  State s(Matmul(32));
  s = s.Apply(CacheWriteStep{kC, "local"});  // C.local, then C copies it
  HardwareParams hw;
  hw.num_cores = 3;
  auto rows = RawRows(s, hw);
  ASSERT_EQ(rows.size(), 3u);
  const auto& update = UpdateRow(rows);
  EXPECT_EQ(update.at("alloc_bytes"), 32 * 32 * 4);
  EXPECT_EQ(update.at("alloc_outer_prod"), 1);
  EXPECT_EQ(update.at("alloc_inner_prod"), 32 * 32 * 32);
  EXPECT_EQ(update.at("parallel_num"), 0);
  EXPECT_NEAR(update.at("parallel_core_usage"), 1.0 / 3, 1e-7);  // one core of three
  EXPECT_EQ(rows.back().at("alloc_bytes"), 0);                   // the copy stores to the argument C
}

TEST(CostModelFeatures, LogTransformAndRowLayout) {
  State s = TiledMatmul(64);
  ProgramFeatures raw = ExtractFeatures(Lower(s), HardwareParams{}, false);
  ProgramFeatures f = ExtractFeatures(s, HardwareParams{});
  ASSERT_TRUE(f.ok()) << f.error;
  ASSERT_EQ(f.rows, raw.rows);
  ASSERT_EQ(f.values.size(), static_cast<size_t>(f.rows * NumFeatures()));
  for (size_t i = 0; i < f.values.size(); ++i) {
    EXPECT_NEAR(f.values[i], std::log2(1 + raw.values[i]), 1e-4 * (1 + f.values[i]))
        << FeatureNames()[i % NumFeatures()];
  }
}

TEST(CostModelFeatures, StateThatFailsToLowerGivesReasonNotRows) {
  State s(Matmul(16));
  s = s.Split(kC, 0, {std::nullopt});  // a split length never filled in
  ProgramFeatures f;
  EXPECT_NO_THROW(f = ExtractFeatures(s, HardwareParams{}));
  EXPECT_EQ(f.rows, 0);
  EXPECT_TRUE(f.values.empty());
  EXPECT_FALSE(f.ok());
  EXPECT_NE(f.error.find("lowering failed"), std::string::npos) << f.error;
}

TEST(CostModelFeatures, ParallelExtractionMatchesSerial) {
  std::vector<State> states;
  for (int64_t tile : {1, 2, 4, 8, 16, 32}) {
    State s(Matmul(32));
    s = s.Split(kC, 1, {tile});
    s = s.Annotate(kC, 0, IteratorAnnotation::Parallel);
    states.push_back(s);
    states.push_back(s.Annotate(kC, 2, IteratorAnnotation::Vectorize));
  }
  states.push_back(State(Matmul(16)).Split(kC, 0, {std::nullopt}));
  std::vector<ProgramFeatures> parallel = ExtractFeaturesParallel(states, HardwareParams{}, 4);
  ASSERT_EQ(parallel.size(), states.size());
  for (size_t i = 0; i < states.size(); ++i) {
    ProgramFeatures serial = ExtractFeatures(states[i], HardwareParams{});
    EXPECT_EQ(parallel[i].values, serial.values) << i;
    EXPECT_EQ(parallel[i].error, serial.error) << i;
  }
  EXPECT_FALSE(parallel.back().ok());
}

// The 64^3 matmul with blocks over i and j and work items over (i, j) tiles of
// 16 x 8; `x_over_rows`: threadIdx.x walks the rows of C (i) instead of its columns.
State GpuMatmul(bool x_over_rows) {
  State s(Matmul(64));
  s = s.Split(kC, 0, {16});  // io ii j k
  s = s.Split(kC, 2, {8});   // io ii jo ji k
  s = s.Reorder(kC, {0, 2, 1, 3, 4});
  s = s.Annotate(kC, 0, IteratorAnnotation::BlockIdxX);
  s = s.Annotate(kC, 1, IteratorAnnotation::BlockIdxY);
  s = s.Annotate(kC, 2, x_over_rows ? IteratorAnnotation::ThreadIdxX : IteratorAnnotation::ThreadIdxY);
  return s.Annotate(kC, 3, x_over_rows ? IteratorAnnotation::ThreadIdxY : IteratorAnnotation::ThreadIdxX);
}

TEST(CostModelFeatures, GpuBindings) {
  auto rows = RawRows(GpuMatmul(/*x_over_rows=*/true));
  const auto& r = UpdateRow(rows);
  EXPECT_EQ(r.at("is_gpu"), 1);
  EXPECT_EQ(r.at("blockIdx_x_len"), 4);
  EXPECT_EQ(r.at("blockIdx_y_len"), 8);
  EXPECT_EQ(r.at("threadIdx_x_len"), 16);
  EXPECT_EQ(r.at("threadIdx_y_len"), 8);
  EXPECT_EQ(r.at("blockIdx_z_len"), 1);
  EXPECT_EQ(r.at("vthread_len"), 1);
}

TEST(CostModelFeatures, GpuWarpCoalescingAndGroupResources) {
  HardwareParams hw;
  hw.warp_size = 32;
  hw.num_cores = 4;
  hw.max_shared_memory_per_block = 48 * 1024;
  hw.max_registers_per_thread = 255;
  // threadIdx.x over C's rows: a warp is 16 rows x 2 columns, 32 floats in 16
  // sectors where 4 would do, A 16 floats in 16 sectors; B's 2 floats are one sector.
  const auto rows = RawRows(GpuMatmul(true), hw);
  const auto& r = UpdateRow(rows);
  EXPECT_EQ(r.at("gpu_threads_per_group"), 128);
  EXPECT_EQ(r.at("gpu_warp_fill"), 1);
  EXPECT_EQ(r.at("gpu_groups_per_compute_unit"), 32.0 / 4);
  EXPECT_EQ(r.at("gpu_global_access_bytes"), 4);
  EXPECT_DOUBLE_EQ(r.at("gpu_global_efficiency"), 2.0 / 16);  // A: 64 bytes in 16 sectors
  // C (read and written: 16 sectors each), A (16 rows: 16), B (1).
  EXPECT_EQ(r.at("gpu_global_sectors_per_warp"), 16 + 16 + 16 + 1);
  EXPECT_EQ(r.at("gpu_shared_access_bytes"), 0);
  EXPECT_EQ(r.at("gpu_bank_conflict"), 0);
  EXPECT_EQ(r.at("gpu_private_bytes"), 0);
  EXPECT_EQ(r.at("gpu_shared_over_limit"), 0);
  // threadIdx.x over columns: a warp is 4 rows x 8 columns of C, 32 bytes a
  // row, so each sector is used whole; A reads 4 rows' elements (4 sectors for 16 bytes).
  const auto column_rows = RawRows(GpuMatmul(false), hw);
  const auto& c = UpdateRow(column_rows);
  EXPECT_DOUBLE_EQ(c.at("gpu_global_efficiency"), 1.0 / 4);
  EXPECT_EQ(c.at("gpu_global_sectors_per_warp"), 4 + 4 + 4 + 1);
  // A CPU statement has none of them.
  const auto cpu_rows = RawRows(TiledMatmul(64), hw);
  const auto& cpu = UpdateRow(cpu_rows);
  for (const char* name : {"gpu_threads_per_group", "gpu_warp_fill", "gpu_global_efficiency",
                           "gpu_global_sectors_per_warp", "gpu_bank_conflict", "gpu_private_bytes"}) {
    EXPECT_EQ(cpu.at(name), 0) << name;
  }
}

// Local (shared) memory read by a warp of 32 work items at `stride` floats apart,
// `lanes` floats per work item.
double SharedBankConflict(int64_t stride, int lanes) {
  Expr tx = VarNode::make("tx");
  Buffer shared = MakeBuffer("S", DataType::Float(32), {4096}, MemScope::Shared);
  Expr index = tx * make_const(DataType::Int(32), static_cast<double>(stride));
  if (lanes > 1) index = RampNode::make(index, 1, lanes);
  std::vector<LoopInfo> loops{{tx.as<VarNode>(), 32, ForKind::ThreadIdxX}};
  return AnalyzeGpuAccesses({{shared, index, false}}, loops, {}, 32).bank_conflict;
}

TEST(CostModelFeatures, GpuSharedBankConflicts) {
  EXPECT_EQ(SharedBankConflict(1, 1), 1);    // one word per bank
  EXPECT_EQ(SharedBankConflict(0, 1), 1);    // one word for all: a broadcast
  EXPECT_EQ(SharedBankConflict(2, 1), 2);    // even banks, two words each
  EXPECT_EQ(SharedBankConflict(32, 1), 32);  // every work item in bank 0
  EXPECT_EQ(SharedBankConflict(33, 1), 1);   // a padded row: back to one each
  EXPECT_EQ(SharedBankConflict(4, 4), 1);    // float4 per item: 4 requests of 32 distinct banks
  EXPECT_EQ(SharedBankConflict(8, 4), 2);    // float4 at 8-float steps: half the banks, twice
}

}  // namespace
}  // namespace autosched
