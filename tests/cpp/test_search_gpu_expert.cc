// The GPU expert schedule: on GEMM-like tasks and direct convolutions of
// awkward shapes it gives a state that lowers within the limits of the
// nvidia, mali and pocl presets and of a made-up device; its tiles follow the
// HardwareParams (group size from the warp and the thread limit, register
// tile from max_registers_per_thread, reduction tile from the shared
// memory); SearchParams.use_expert_schedule turns it off.
#include <gtest/gtest.h>

#include <map>

#include "cost_model/random_model.h"
#include "lower/lower.h"
#include "schedule/infer_bound.h"
#include "schedule_test_util.h"
#include "search/expert/expert_schedule.h"
#include "search/rules/cpu/register_block.h"
#include "search/rules/gpu/gpu_rules.h"
#include "search/sketch_policy.h"

namespace autosched {
namespace {

using sched_test::Axis;
using sched_test::Matmul;

const DataType kF32 = DataType::Float(32);

// [X, Y, Z] with Z[b, i, j] = sum_k X[b, i, k] * Y[b, k, j].
ComputeDAG BatchMatmul(int64_t batch, int64_t n, int64_t m, int64_t k) {
  Tensor x = placeholder({batch, n, k}, kF32, "X"), y = placeholder({batch, k, m}, kF32, "Y");
  IterVar b = Axis("b", batch), i = Axis("i", n), j = Axis("j", m);
  IterVar r = MakeReduceAxis(0, k, "k");
  return ComputeDAG(
      {x, y,
       compute("Z", {b, i, j},
               ReduceNode::make(Combiner::Sum, x({b.var, i.var, r.var}) * y({b.var, r.var, j.var}), {r}))});
}

// [X, W, D] with D[i, j] = sum_k X[i, k] * W[j, k] (dense: W stored by rows).
ComputeDAG Dense(int64_t n, int64_t m, int64_t k) {
  Tensor x = placeholder({n, k}, kF32, "X"), w = placeholder({m, k}, kF32, "W");
  IterVar i = Axis("i", n), j = Axis("j", m);
  IterVar r = MakeReduceAxis(0, k, "k");
  return ComputeDAG(
      {x, w,
       compute("D", {i, j}, ReduceNode::make(Combiner::Sum, x({i.var, r.var}) * w({j.var, r.var}), {r}))});
}

// A direct convolution of one image without padding, stride 1: NCHW
// (data 1 x ci x h x w, kernel co x ci x kh x kw) or NHWC (data 1 x h x w x
// ci, kernel kh x kw x ci x co); outputs of (h - kh + 1) x (w - kw + 1).
ComputeDAG Conv(bool nchw, int64_t ci, int64_t co, int64_t h, int64_t w, int64_t kh, int64_t kw) {
  const int64_t oh = h - kh + 1, ow = w - kw + 1;
  Tensor data = nchw ? placeholder({1, ci, h, w}, kF32, "data") : placeholder({1, h, w, ci}, kF32, "data");
  Tensor kernel =
      nchw ? placeholder({co, ci, kh, kw}, kF32, "kernel") : placeholder({kh, kw, ci, co}, kF32, "kernel");
  IterVar rc = MakeReduceAxis(0, ci, "rc"), ry = MakeReduceAxis(0, kh, "ry"),
          rx = MakeReduceAxis(0, kw, "rx");
  IterVar n = Axis("n", 1), c = Axis("c", co), y = Axis("y", oh), x = Axis("x", ow);
  if (nchw) {
    Expr body =
        data({n.var, rc.var, y.var + ry.var, x.var + rx.var}) * kernel({c.var, rc.var, ry.var, rx.var});
    return ComputeDAG(
        {data, kernel, compute("conv", {n, c, y, x}, ReduceNode::make(Combiner::Sum, body, {rc, ry, rx}))});
  }
  Expr body = data({n.var, y.var + ry.var, x.var + rx.var, rc.var}) * kernel({ry.var, rx.var, rc.var, c.var});
  return ComputeDAG(
      {data, kernel, compute("conv", {n, y, x, c}, ReduceNode::make(Combiner::Sum, body, {ry, rx, rc}))});
}

HardwareParams Device(const std::string& name) {
  if (name != "made-up") return DefaultHardwareParams(Target::Parse("opencl -device=" + name));
  HardwareParams hw = DefaultHardwareParams(Target::Parse("opencl"));
  hw.warp_size = 64;
  hw.max_threads_per_block = 512;
  hw.max_shared_memory_per_block = 64 * 1024;
  return hw;
}

SearchTask GpuTask(const ComputeDAG& dag, const HardwareParams& hw) {
  return SearchTask(dag, "", Target::Parse("opencl"), hw, "test");
}

// The expert's state, checked to lower and generate code within the limits.
State ValidExpert(const SearchTask& task, const SearchParams& params = {}) {
  const ExpertSchedule e = MakeExpertSchedule(task, params);
  EXPECT_TRUE(e.state.has_value()) << e.reason;
  if (!e.state) return State(task.compute_dag);
  std::string message;
  EXPECT_EQ(CheckGpuState({task, params}, *e.state, Lower(*e.state), &message), "") << message << "\n"
                                                                                    << e.note;
  EXPECT_TRUE(State::FromJson(task.compute_dag, e.state->ToJson()).SameSteps(*e.state));
  return *e.state;
}

// The tiles of the expert's tiled stage: per op axis (by name) the work
// items and the accumulators of a work item; the main reduction's tile.
struct Tiles {
  std::map<std::string, int64_t> items, tile;
  int64_t k_tile = 0, group = 1;
};
Tiles TilesOf(const State& state) {
  Tiles t;
  const TilingLevels levels{5, 3};
  for (const auto& [index, role] : TilingSplitRoles(state, levels)) {
    const auto& split = std::get<SplitStep>(state.steps()[index]);
    const Stage& st = state.stage(state.StageIndex(role.stage));
    const int num_axes = static_cast<int>(st.op->axis.size());
    if (role.node < num_axes) {
      const std::string name = st.op->axis[role.node].name();
      t.items[name] = *split.lengths[1];
      t.tile[name] = *split.lengths[0] * *split.lengths[3];
      t.group *= *split.lengths[1];
    } else if (*split.lengths[0] > 1) {
      t.k_tile = std::max(t.k_tile, *split.lengths[0]);
    }
  }
  return t;
}

const char* const kDevices[] = {"nvidia", "mali", "pocl", "made-up"};

TEST(GpuExpert, ValidOnGemmLikeTasksAndConvolutionsOfAwkwardShapes) {
  const std::vector<ComputeDAG> dags = {
      Matmul(1000, 1000, 1000),
      Matmul(13, 67, 7),
      Matmul(1, 97, 5),
      Matmul(5, 1, 1),
      Matmul(97, 89, 101),
      Dense(3, 1000, 37),
      BatchMatmul(3, 17, 23, 9),
      Conv(true, 3, 13, 9, 9, 3, 3),   // 7x7 outputs, 3 input channels, 13 filters
      Conv(false, 5, 12, 9, 9, 3, 3),  // NHWC, 7x7
      Conv(true, 64, 64, 58, 58, 3, 3),
      Conv(false, 16, 24, 7, 7, 7, 7)};
  for (const char* device : kDevices) {
    for (const ComputeDAG& dag : dags) {
      SCOPED_TRACE(std::string(device) + ": " + dag.workload_key());
      ValidExpert(GpuTask(dag, Device(device)));
    }
  }
}

TEST(GpuExpert, GroupsFollowTheWarpAndTheThreadLimit) {
  for (const char* device : kDevices) {
    const HardwareParams hw = Device(device);
    const Tiles t = TilesOf(ValidExpert(GpuTask(Matmul(4096, 4096, 1024), hw)));
    SCOPED_TRACE(device);
    EXPECT_LE(t.group, hw.max_threads_per_block);
    EXPECT_EQ(t.group % std::max<int64_t>(1, hw.warp_size), 0);
    // Eight warps where the limit allows; 64 work items without warps.
    EXPECT_EQ(t.group, std::min<int64_t>(hw.max_threads_per_block, std::max<int64_t>(8 * hw.warp_size, 64)));
  }
  // A warp of 64 and 512 work items: the group is the limit, a multiple of 64,
  // on a convolution too.
  const Tiles conv = TilesOf(ValidExpert(GpuTask(Conv(true, 64, 64, 58, 58, 3, 3), Device("made-up"))));
  EXPECT_EQ(conv.group % 64, 0);
  HardwareParams small = Device("nvidia");
  small.max_threads_per_block = 128;
  EXPECT_EQ(TilesOf(ValidExpert(GpuTask(Matmul(4096, 4096, 1024), small))).group, 128);
}

TEST(GpuExpert, RegisterTileFollowsTheRegistersOfAWorkItem) {
  HardwareParams hw = Device("nvidia");
  ASSERT_EQ(hw.max_registers_per_thread, 255);
  const Tiles big = TilesOf(ValidExpert(GpuTask(Matmul(4096, 4096, 1024), hw)));
  EXPECT_EQ(big.tile.at("i") * big.tile.at("j"), 64);  // 8 x 8 + 16 operand values within 127
  hw.max_registers_per_thread = 64;
  const Tiles small = TilesOf(ValidExpert(GpuTask(Matmul(4096, 4096, 1024), hw)));
  EXPECT_EQ(small.tile.at("i") * small.tile.at("j"), 16);  // 4 x 4 + 8 within 32
  hw.max_registers_per_thread = 0;                         // unknown: the conservative 64
  EXPECT_EQ(TilesOf(ValidExpert(GpuTask(Matmul(4096, 4096, 1024), hw))).tile, small.tile);
}

TEST(GpuExpert, ReductionTileFollowsTheSharedMemory) {
  for (const char* device : kDevices) {
    HardwareParams hw = Device(device);
    const Tiles full = TilesOf(ValidExpert(GpuTask(Matmul(4096, 4096, 1024), hw)));
    hw.max_shared_memory_per_block /= 2;
    const Tiles half = TilesOf(ValidExpert(GpuTask(Matmul(4096, 4096, 1024), hw)));
    SCOPED_TRACE(device);
    EXPECT_EQ(half.tile, full.tile);
    EXPECT_EQ(half.k_tile * 2, full.k_tile);
  }
}

TEST(GpuExpert, ExtentsTheTilesDoNotDivideGetGuardedEdgesOrDivisors) {
  // 3000 = 8 x 375: no group tile of 16 x 8 (or shortened to 16 x 4) divides
  // it, so the groups keep their shape and the last ones run guarded; 56
  // takes tiles of 7.
  const Tiles odd = TilesOf(ValidExpert(GpuTask(Matmul(3000, 3000, 1000), Device("nvidia"))));
  EXPECT_EQ(odd.group, 256);
  EXPECT_EQ(odd.tile.at("i"), 8);
  const Tiles conv = TilesOf(ValidExpert(GpuTask(Conv(true, 8, 2048, 58, 58, 3, 3), Device("nvidia"))));
  EXPECT_EQ(conv.group, 256);
  EXPECT_EQ(56 % (conv.items.at("x") * conv.tile.at("x")), 0);
}

// The groups a stage's tiles make: the extent of its blockIdx.x loop.
int64_t Groups(const State& state) {
  int64_t groups = 1;
  const State bounded = InferBound(state);
  for (const Stage& st : bounded.stages()) {
    for (int i = 0; i < st.num_iters(); ++i) {
      if (st.iter(i).annotation == IteratorAnnotation::BlockIdxX)
        groups = std::max(groups, st.iter(i).extent);
    }
  }
  return groups;
}

TEST(GpuExpert, TilesShrinkUntilTheyFillTheDevice) {
  // 1024 x 1024 outputs in 8 x 8 tiles of 256 work items make 64 groups for
  // 132 compute units: the group, then the register tile, halve in turn
  // until there are 2 groups a compute unit.
  const HardwareParams hw = Device("nvidia");
  ASSERT_EQ(hw.num_cores, 132);
  const State state = ValidExpert(GpuTask(Matmul(1024, 1024, 1024), hw));
  const Tiles t = TilesOf(state);
  EXPECT_GE(Groups(state), 2 * hw.num_cores);
  EXPECT_GE(t.group, 64);
  EXPECT_LT(t.group * t.tile.at("i") * t.tile.at("j"), 256 * 64);
  // Outputs that fill the device keep the largest tiles.
  EXPECT_EQ(TilesOf(ValidExpert(GpuTask(Matmul(4096, 4096, 1024), hw))).group, 256);
}

TEST(GpuExpert, UseExpertScheduleOffMakesNone) {
  SearchParams params;
  params.use_expert_schedule = false;
  for (const SearchTask& task :
       {GpuTask(Matmul(64, 64, 64), Device("pocl")), sched_test::MakeTask(Matmul(64))}) {
    const ExpertSchedule e = MakeExpertSchedule(task, params);
    EXPECT_FALSE(e.state.has_value());
    EXPECT_NE(e.reason.find("use_expert_schedule"), std::string::npos) << e.reason;
    SketchPolicy policy(task, std::make_shared<RandomModel>(), params, 1);
    EXPECT_FALSE(policy.Expert().state.has_value());
    EXPECT_TRUE(MakeExpertSchedule(task).state.has_value()) << MakeExpertSchedule(task).reason;
  }
}

}  // namespace
}  // namespace autosched
