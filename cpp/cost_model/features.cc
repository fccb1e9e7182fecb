#include "cost_model/features.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <functional>
#include <thread>

#include "cost_model/feature_analysis.h"
#include "lower/lower.h"
#include "support/error.h"
#include "support/interrupt.h"

namespace autosched {
namespace {

// ---- The feature table: {name, extractor}, in row order ----

struct FeatureDef {
  const char* name;
  double (*extract)(const StoreAnalysis&);
};

double Op(const StoreAnalysis& s, OpCountKind k) { return s.ops[static_cast<int>(k)]; }

const BufferStats* Slot(const StoreAnalysis& s, size_t slot) {
  return slot < s.buffers.size() ? &s.buffers[slot] : nullptr;
}

double CoreUsage(const StoreAnalysis& s) {
  double cores = static_cast<double>(std::max<int64_t>(s.hardware.num_cores, 1));
  double tasks = s.parallel.prod;
  if (tasks <= 0) return 1 / cores;
  return tasks / (std::ceil(tasks / cores) * cores);
}

double VectorBytes(const StoreAnalysis& s) {
  return static_cast<double>(std::max<int64_t>(s.hardware.vector_unit_bytes, 1));
}

// The share of a vector register the last vector of a store fills (0: whole registers).
double PartialVector(const StoreAnalysis& s) {
  double bytes = s.lanes * static_cast<double>(s.elem_bytes);
  return std::fmod(bytes, VectorBytes(s)) / VectorBytes(s);
}

// ---- Target-relative quantities: the loop nest against the CPU's vector
// width, register file and caches, so that what a model learns on one CPU
// carries to another (records of AVX2 and AVX-512 machines train one model).
// Unknown sizes (0) take common values; all are 0 for GPU statements.

constexpr double kDefaultL1Bytes = 32 * 1024;
constexpr double kDefaultL2Bytes = 512 * 1024;
constexpr double kDefaultVectorRegisters = 16;

double TargetLanes(const StoreAnalysis& s) { return VectorBytes(s) / std::max(s.elem_bytes, 1); }

double VectorRegisters(const StoreAnalysis& s) {
  return s.hardware.num_vector_registers > 0 ? static_cast<double>(s.hardware.num_vector_registers)
                                             : kDefaultVectorRegisters;
}

double CacheBytes(int64_t bytes, double fallback) {
  return bytes > 0 ? static_cast<double>(bytes) : fallback;
}

// Iterations of the statement inside the largest tile of innermost loops whose
// footprint fits in `cache_bytes` (0 when one execution does not fit).
double TileTripsFitting(const StoreAnalysis& s, double cache_bytes) {
  if (s.is_gpu || s.footprint.empty() || s.footprint[0] > cache_bytes) return 0;
  size_t depth = s.loops.size();
  double trips = 1;
  for (size_t k = 1; k < s.footprint.size() && k <= depth && s.footprint[k] <= cache_bytes; ++k) {
    trips *= static_cast<double>(s.loops[depth - k].extent);
  }
  return trips;
}

// Bytes the body of the innermost parallel loop touches (one parallel task),
// or the whole nest's without a parallel loop, over the L2 size.
double TaskFootprintOverL2(const StoreAnalysis& s) {
  if (s.is_gpu || s.footprint.empty()) return 0;
  size_t inner = s.parallel.pos > 0 ? static_cast<size_t>(s.parallel.pos) - 1 : s.footprint.size() - 1;
  inner = std::min(inner, s.footprint.size() - 1);
  return s.footprint[inner] / CacheBytes(s.hardware.l2_cache_bytes, kDefaultL2Bytes);
}

// ---- GPU quantities: the work group's resources against the device's limits
// (0 where a limit is unknown), so that the model learns occupancy and wave
// effects from parameters it can read on another device too.

double ThreadsPerGroup(const StoreAnalysis& s) { return s.thread_idx[0] * s.thread_idx[1] * s.thread_idx[2]; }

double GroupsPerComputeUnit(const StoreAnalysis& s) {
  double groups = s.block_idx[0] * s.block_idx[1] * s.block_idx[2];
  return groups / static_cast<double>(std::max<int64_t>(s.hardware.num_cores, 1));
}

// The share of the group's warps that work items fill.
double WarpFill(const StoreAnalysis& s) {
  double warp = s.hardware.warp_size > 0 ? static_cast<double>(s.hardware.warp_size) : 32;
  double threads = ThreadsPerGroup(s);
  return threads / (std::ceil(threads / warp) * warp);
}

// Private memory in 32-bit registers per work item.
constexpr double kGpuRegisterBytes = 4;
double RegistersPerItem(const StoreAnalysis& s) { return s.local_bytes / kGpuRegisterBytes; }

double OverLimit(double x, int64_t limit) { return limit > 0 ? x / static_cast<double>(limit) : 0; }

#define AS_OP(name, kind)                                                 \
  {                                                                       \
    name, [](const StoreAnalysis& s) { return Op(s, OpCountKind::kind); } \
  }
#define AS_FIELD(name, expr)                                      \
  {                                                               \
    name, [](const StoreAnalysis& s) -> double { return (expr); } \
  }
#define AS_ANNOTATION(prefix, field)                                              \
  AS_FIELD(prefix "_num", s.field.num), AS_FIELD(prefix "_prod", s.field.prod),   \
      AS_FIELD(prefix "_len", s.field.len), AS_FIELD(prefix "_pos", s.field.pos), \
      AS_FIELD(prefix "_over_reduce", s.field.over_reduce)
// One entry of buffer slot `slot`; 0 when the statement accesses fewer buffers.
#define AS_BUF(slot, name, expr)                               \
  {                                                            \
    "B" #slot "." name, [](const StoreAnalysis& s) -> double { \
      const BufferStats* b = Slot(s, slot);                    \
      return b ? static_cast<double>(expr) : 0.0;              \
    }                                                          \
  }
#define AS_BUFFER_SLOT(i)                                                                               \
  AS_BUF(i, "acc_read", b->access == AccessType::Read),                                                 \
      AS_BUF(i, "acc_write", b->access == AccessType::Write),                                           \
      AS_BUF(i, "acc_read_write", b->access == AccessType::ReadWrite), AS_BUF(i, "bytes", b->bytes),    \
      AS_BUF(i, "unique_bytes", b->unique_bytes), AS_BUF(i, "lines", b->lines),                         \
      AS_BUF(i, "unique_lines", b->unique_lines),                                                       \
      AS_BUF(i, "reuse_loop_read", b->reuse == ReuseType::LoopMultipleRead),                            \
      AS_BUF(i, "reuse_serial_read_write", b->reuse == ReuseType::SerialMultipleReadWrite),             \
      AS_BUF(i, "reuse_none", b->reuse == ReuseType::NoReuse),                                          \
      AS_BUF(i, "reuse_dis_iter", b->reuse_dis_iter), AS_BUF(i, "reuse_dis_bytes", b->reuse_dis_bytes), \
      AS_BUF(i, "reuse_ct", b->reuse_ct),                                                               \
      AS_BUF(i, "bytes_d_reuse_ct", b->bytes / std::max(b->reuse_ct, 1.0)),                             \
      AS_BUF(i, "unique_bytes_d_reuse_ct", b->unique_bytes / std::max(b->reuse_ct, 1.0)),               \
      AS_BUF(i, "lines_d_reuse_ct", b->lines / std::max(b->reuse_ct, 1.0)),                             \
      AS_BUF(i, "unique_lines_d_reuse_ct", b->unique_lines / std::max(b->reuse_ct, 1.0)),               \
      AS_BUF(i, "stride", b->stride)
#define AS_INTENSITY(i) AS_FIELD("intensity_" #i, s.intensity[i])

constexpr FeatureDef kFeatureTable[] = {
    // computation: operations by kind, times the trip count
    AS_OP("float_mad", FloatMad),
    AS_OP("float_addsub", FloatAddSub),
    AS_OP("float_mul", FloatMul),
    AS_OP("float_divmod", FloatDivMod),
    AS_OP("float_cmp", FloatCmp),
    AS_OP("float_math_func", FloatMathFunc),
    AS_OP("float_other_func", FloatOtherFunc),
    AS_OP("int_mad", IntMad),
    AS_OP("int_addsub", IntAddSub),
    AS_OP("int_mul", IntMul),
    AS_OP("int_divmod", IntDivMod),
    AS_OP("int_cmp", IntCmp),
    AS_OP("int_math_func", IntMathFunc),
    AS_OP("int_other_func", IntOtherFunc),
    AS_OP("bool_op", BoolOp),
    AS_OP("select_op", SelectOp),
    // loops: annotations of the enclosing loops (vector lanes count as a vectorized loop)
    AS_ANNOTATION("vec", vectorize),
    AS_ANNOTATION("unroll", unroll),
    AS_ANNOTATION("parallel", parallel),
    // machine fit: the loop nest against the hardware parameters
    AS_FIELD("vector_fill", s.lanes* static_cast<double>(s.elem_bytes) / VectorBytes(s)),
    AS_FIELD("vec_partial", PartialVector(s)),
    AS_FIELD("parallel_core_usage", CoreUsage(s)),
    AS_FIELD("work_per_parallel_task", s.outer_prod / std::max(s.parallel.prod, 1.0)),
    AS_FIELD("innermost_loop_extent", s.innermost_loop_extent),
    // gpu: thread bindings (extent 1 where not bound, all 0 on a CPU)
    AS_FIELD("is_gpu", s.is_gpu),
    AS_FIELD("blockIdx_x_len", s.is_gpu ? s.block_idx[0] : 0),
    AS_FIELD("blockIdx_y_len", s.is_gpu ? s.block_idx[1] : 0),
    AS_FIELD("blockIdx_z_len", s.is_gpu ? s.block_idx[2] : 0),
    AS_FIELD("threadIdx_x_len", s.is_gpu ? s.thread_idx[0] : 0),
    AS_FIELD("threadIdx_y_len", s.is_gpu ? s.thread_idx[1] : 0),
    AS_FIELD("threadIdx_z_len", s.is_gpu ? s.thread_idx[2] : 0),
    AS_FIELD("vthread_len", s.is_gpu ? s.vthread : 0),
    AS_FIELD("shared_bytes_per_block", s.is_gpu ? s.shared_bytes : 0),
    // gpu memory: the group's resources against the device's limits, one warp's accesses (gpu_access.h)
    AS_FIELD("gpu_threads_per_group", s.is_gpu ? ThreadsPerGroup(s) : 0),
    AS_FIELD("gpu_warp_fill", s.is_gpu ? WarpFill(s) : 0),
    AS_FIELD("gpu_groups_per_compute_unit", s.is_gpu ? GroupsPerComputeUnit(s) : 0),
    AS_FIELD("gpu_private_bytes", s.is_gpu ? s.local_bytes : 0),
    AS_FIELD("gpu_registers_over_limit",
             s.is_gpu ? OverLimit(RegistersPerItem(s), s.hardware.max_registers_per_thread) : 0),
    AS_FIELD("gpu_group_registers", s.is_gpu ? RegistersPerItem(s) * ThreadsPerGroup(s) : 0),
    AS_FIELD("gpu_shared_over_limit",
             s.is_gpu ? OverLimit(s.shared_bytes, s.hardware.max_shared_memory_per_block) : 0),
    AS_FIELD("gpu_global_access_bytes", s.gpu_access.global_access_bytes),
    AS_FIELD("gpu_global_efficiency", s.gpu_access.global_efficiency),
    AS_FIELD("gpu_global_sectors_per_warp", s.gpu_access.global_sectors),
    AS_FIELD("gpu_shared_access_bytes", s.gpu_access.shared_access_bytes),
    AS_FIELD("gpu_bank_conflict", s.gpu_access.bank_conflict),
    // statement
    AS_FIELD("is_reduction_update", s.is_reduction_update),
    AS_FIELD("guard_depth", s.guard_depth),
    AS_FIELD("num_buffers", static_cast<double>(s.buffers.size())),
    // the accumulator tile: stored elements kept across the innermost reduction loop
    AS_FIELD("acc_tile_vectors", s.acc_tile_bytes / VectorBytes(s)),
    AS_FIELD("acc_tile_unrolled", s.acc_tile_unrolled),
    AS_FIELD("acc_loop_extent", s.acc_loop_extent),
    // buffers: the kNumBufferSlots largest by bytes
    AS_BUFFER_SLOT(0),
    AS_BUFFER_SLOT(1),
    AS_BUFFER_SLOT(2),
    AS_BUFFER_SLOT(3),
    AS_BUFFER_SLOT(4),
    // arithmetic intensity: operations per byte touched, from the innermost body outwards
    AS_INTENSITY(0),
    AS_INTENSITY(1),
    AS_INTENSITY(2),
    AS_INTENSITY(3),
    AS_INTENSITY(4),
    AS_INTENSITY(5),
    AS_INTENSITY(6),
    AS_INTENSITY(7),
    AS_INTENSITY(8),
    AS_INTENSITY(9),
    // allocation of the stored buffer inside the function
    AS_FIELD("alloc_bytes", s.alloc_bytes),
    AS_FIELD("alloc_outer_prod", s.alloc_outer_prod),
    AS_FIELD("alloc_inner_prod", s.alloc_inner_prod),
    AS_FIELD("alloc_is_local", s.alloc_is_local),
    // outer scope
    AS_FIELD("outer_prod", s.outer_prod),
    AS_FIELD("num_loops", static_cast<double>(s.loops.size())),
    AS_FIELD("auto_unroll_max_step", static_cast<double>(s.auto_unroll_max_step)),
    // target-relative: vector width, register file and caches of the target
    AS_FIELD("target_lanes", TargetLanes(s)),
    AS_FIELD("target_vector_registers", s.is_gpu ? 0 : VectorRegisters(s)),
    AS_FIELD("vec_len_over_lanes", s.vectorize.len / TargetLanes(s)),
    AS_FIELD("acc_tile_over_registers",
             s.is_gpu ? 0 : s.acc_tile_bytes / VectorBytes(s) / VectorRegisters(s)),
    AS_FIELD("l1_tile_trips", TileTripsFitting(s, CacheBytes(s.hardware.l1_cache_bytes, kDefaultL1Bytes))),
    AS_FIELD("l2_tile_trips", TileTripsFitting(s, CacheBytes(s.hardware.l2_cache_bytes, kDefaultL2Bytes))),
    AS_FIELD("acc_footprint_over_l1",
             s.is_gpu ? 0 : s.acc_footprint_bytes / CacheBytes(s.hardware.l1_cache_bytes, kDefaultL1Bytes)),
    AS_FIELD("task_footprint_over_l2", TaskFootprintOverL2(s)),
};
static_assert(kIntensityCurveSamples == 10, "the table lists 10 intensity samples");

#undef AS_OP
#undef AS_FIELD
#undef AS_ANNOTATION
#undef AS_BUF
#undef AS_BUFFER_SLOT
#undef AS_INTENSITY

constexpr int kTableSize = static_cast<int>(sizeof(kFeatureTable) / sizeof(kFeatureTable[0]));

float Transform(double x) {
  if (!std::isfinite(x)) return x > 0 ? 64.0f : (x < 0 ? -64.0f : 0.0f);
  double y = std::log2(1 + std::fabs(x));
  return static_cast<float>(x < 0 ? -y : y);
}

}  // namespace

const std::vector<std::string>& FeatureNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const FeatureDef& f : kFeatureTable) out.emplace_back(f.name);
    return out;
  }();
  return names;
}

int NumFeatures() { return kTableSize; }

ProgramFeatures ExtractFeatures(const LoweredFunc& f, const HardwareParams& hardware, bool log_transform) {
  std::vector<StoreAnalysis> stores = AnalyzeStores(f, hardware);
  ProgramFeatures out;
  out.rows = static_cast<int>(stores.size());
  out.values.reserve(stores.size() * kTableSize);
  for (const StoreAnalysis& s : stores) {
    for (const FeatureDef& def : kFeatureTable) {
      double x = def.extract(s);
      out.values.push_back(log_transform ? Transform(x) : static_cast<float>(x));
    }
  }
  return out;
}

namespace {

// The features of `state`, lowered here unless `lowered` is given; failures
// become the error of the result.
ProgramFeatures ExtractFeaturesOf(const State& state, const LoweredFunc* lowered,
                                  const HardwareParams& hardware) {
  ProgramFeatures out;
  try {
    return lowered ? ExtractFeatures(*lowered, hardware) : ExtractFeatures(Lower(state), hardware);
  } catch (const Error& e) {
    out.error = std::string("lowering failed: ") + e.what();
  } catch (const std::exception& e) {
    out.error = std::string("feature extraction failed: ") + e.what();
  }
  return out;
}

}  // namespace

ProgramFeatures ExtractFeatures(const State& state, const HardwareParams& hardware) {
  return ExtractFeaturesOf(state, nullptr, hardware);
}

std::vector<ProgramFeatures> ExtractFeaturesParallel(const std::vector<State>& states,
                                                     const HardwareParams& hardware, int num_threads,
                                                     const std::vector<LoweredPtr>& lowered) {
  AS_ICHECK(lowered.empty() || lowered.size() == states.size());
  std::vector<ProgramFeatures> out(states.size());
  ParallelFor(states.size(), num_threads, [&](size_t i) {
    out[i] = ExtractFeaturesOf(states[i], lowered.empty() ? nullptr : lowered[i].get(), hardware);
  });
  return out;
}

void ParallelFor(size_t n, int num_threads, const std::function<void(size_t)>& fn) {
  size_t threads = num_threads > 0 ? static_cast<size_t>(num_threads)
                                   : std::max<size_t>(std::thread::hardware_concurrency(), 1);
  threads = std::min(threads, n);
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) {
      fn(i);
      PollInterrupt();
    }
    return;
  }
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  auto work = [&] {
    for (size_t i = next++; i < n && !stop.load(); i = next++) fn(i);
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  std::exception_ptr interrupted;
  try {
    for (size_t i = next++; i < n; i = next++) {
      fn(i);
      PollInterrupt();  // only the calling thread has a check to run
    }
  } catch (...) {
    interrupted = std::current_exception();
    stop = true;
  }
  for (std::thread& t : pool) t.join();
  if (interrupted) std::rethrow_exception(interrupted);
}

}  // namespace autosched
