#include <gtest/gtest.h>

#include "dag/compute_dag.h"
#include "support/error.h"
#include "task/search_task.h"
#include "task/target.h"
#include "test_util.h"

namespace autosched {
namespace {

TEST(Target, ParsesKindAndOptions) {
  Target t = Target::Parse("llvm -mcpu=sapphirerapids -num-cores=2 -fast-math");
  EXPECT_EQ(t.kind, &FindTargetKind("llvm"));
  EXPECT_EQ(t.mcpu, "sapphirerapids");
  EXPECT_EQ(t.num_cores, 2);
  EXPECT_TRUE(t.HasOption("fast-math"));
  EXPECT_EQ(Target::Parse(t.str()), t);

  Target gpu = Target::Parse("  opencl   -device=mali ");
  EXPECT_EQ(gpu.kind, &FindTargetKind("opencl"));
  EXPECT_EQ(gpu.device, "mali");
  EXPECT_EQ(gpu.str(), "opencl -device=mali");
}

void ExpectErrorMentions(const std::string& text, const std::string& needle) {
  const std::string message = test::ErrorOf([&] { Target::Parse(text); });
  EXPECT_TRUE(test::Contains(message, needle)) << "'" << text << "': " << message;
}

TEST(Target, RejectsMalformedInput) {
  ExpectErrorMentions("cuda", "unknown target kind 'cuda'");
  ExpectErrorMentions("", "empty target");
  ExpectErrorMentions("llvm mcpu=x", "malformed target option 'mcpu=x'");
  ExpectErrorMentions("llvm -numcores=2", "'-numcores'");
  ExpectErrorMentions("llvm -num-cores=two", "-num-cores needs a positive integer, got 'two'");
  ExpectErrorMentions("llvm -num-cores=0", "positive integer");
  ExpectErrorMentions("llvm -mcpu", "-mcpu needs a value");
  ExpectErrorMentions("llvm -fast-math=1", "flag");
  ExpectErrorMentions("llvm -device=mali", "'-device' for llvm");
  ExpectErrorMentions("opencl -device", "-device needs a value");
  ExpectErrorMentions("llvm -mcpu=a -mcpu=b", "given twice");
}

TEST(HardwareParams, DefaultsPerTarget) {
  // Vector width from the features the target keeps: a Sapphire Rapids keeps AVX-512 only where this host
  // has it, or with -no-host-check.
  Target spr = Target::Parse("llvm -mcpu=sapphirerapids -num-cores=2");
  HardwareParams cpu = DefaultHardwareParams(spr);
  EXPECT_EQ(cpu.num_cores, 2);
  EXPECT_EQ(cpu.vector_unit_bytes, spr.cpu.Has("avx512f") ? 64 : 32);
  EXPECT_EQ(cpu.cache_line_bytes, 64);
  EXPECT_EQ(cpu.max_threads_per_block, 0);
#ifdef AUTOSCHED_HAS_LLVM
  EXPECT_EQ(
      DefaultHardwareParams(Target::Parse("llvm -mcpu=sapphirerapids -no-host-check")).vector_unit_bytes, 64);
  EXPECT_EQ(DefaultHardwareParams(Target::Parse("llvm -mcpu=haswell -no-host-check")).vector_unit_bytes, 32);
  EXPECT_EQ(DefaultHardwareParams(Target::Parse("llvm -mcpu=nehalem")).vector_unit_bytes, 16);
#endif
  EXPECT_GE(DefaultHardwareParams(Target::Parse("llvm")).num_cores, 1);

  HardwareParams nvidia = DefaultHardwareParams(Target::Parse("opencl -device=nvidia"));
  EXPECT_EQ(nvidia.warp_size, 32);
  EXPECT_EQ(nvidia.max_threads_per_block, 1024);
  EXPECT_EQ(nvidia.max_shared_memory_per_block, 48 * 1024);
  HardwareParams mali = DefaultHardwareParams(Target::Parse("opencl -device=mali -num-cores=10"));
  EXPECT_EQ(mali.num_cores, 10);
  EXPECT_EQ(mali.warp_size, 1);
  EXPECT_EQ(mali.max_threads_per_block, 256);
}

TEST(HardwareParams, RegistersAndFmaUnitsFromTheFeatures) {
  // The register file follows the features kept, never a fixed vector width.
  const Target host = Target::Parse("llvm");
  const HardwareParams params = DefaultHardwareParams(host);
  EXPECT_EQ(params.num_vector_registers, host.cpu.Has("avx512f") ? 32 : 16);
  EXPECT_GE(params.fma_units, 1);
#ifdef AUTOSCHED_HAS_LLVM
  const HardwareParams spr = DefaultHardwareParams(Target::Parse("llvm -mcpu=sapphirerapids -no-host-check"));
  EXPECT_EQ(spr.num_vector_registers, 32);
  EXPECT_EQ(spr.fma_units, 2);
  const HardwareParams rkl = DefaultHardwareParams(Target::Parse("llvm -mcpu=rocketlake -no-host-check"));
  EXPECT_EQ(rkl.num_vector_registers, 32);
  EXPECT_EQ(rkl.fma_units, 1);  // one 512-bit FMA pipe on client parts
  const HardwareParams zen4 = DefaultHardwareParams(Target::Parse("llvm -mcpu=znver4 -no-host-check"));
  EXPECT_EQ(zen4.num_vector_registers, 32);
  EXPECT_EQ(zen4.fma_units, 2);
  const HardwareParams hsw = DefaultHardwareParams(Target::Parse("llvm -mcpu=haswell -no-host-check"));
  EXPECT_EQ(hsw.num_vector_registers, 16);
  EXPECT_EQ(hsw.fma_units, 2);
  // The same CPU without AVX-512: its 16 ymm registers.
  const HardwareParams narrowed =
      DefaultHardwareParams(Target::Parse("llvm -mcpu=sapphirerapids -mattr=-avx512f -no-host-check"));
  EXPECT_EQ(narrowed.num_vector_registers, 16);
  const HardwareParams nhm = DefaultHardwareParams(Target::Parse("llvm -mcpu=nehalem"));
  EXPECT_EQ(nhm.num_vector_registers, 16);
  EXPECT_EQ(nhm.fma_units, 1);
#endif
  const HardwareParams gpu = DefaultHardwareParams(Target::Parse("opencl -device=nvidia"));
  EXPECT_EQ(gpu.num_vector_registers, 0);
  EXPECT_EQ(gpu.fma_units, 0);
  // -1 takes them from the target, like every other field; JSON carries them.
  HardwareParams partial;
  partial.num_vector_registers = kHardwareParamFromTarget;
  partial.fma_units = kHardwareParamFromTarget;
  const HardwareParams resolved = ResolveHardwareParams(partial, host);
  EXPECT_EQ(resolved.num_vector_registers, params.num_vector_registers);
  EXPECT_EQ(resolved.fma_units, params.fma_units);
  EXPECT_EQ(FieldsFromJson<HardwareParams>(FieldsToJson(params)), params);
  EXPECT_EQ(FieldsToJson(params).at("num_vector_registers"), params.num_vector_registers);
}

ComputeDAG SmallMatmul(int64_t n) {
  Tensor a = placeholder({n, 8}, DataType::Float(32), "A");
  Tensor b = placeholder({8, n}, DataType::Float(32), "B");
  IterVar k = MakeReduceAxis(0, 8, "k");
  IterVar i{VarNode::make("i"), 0, n, IterKind::Spatial};
  IterVar j{VarNode::make("j"), 0, n, IterKind::Spatial};
  Tensor c =
      compute("C", {i, j}, ReduceNode::make(Combiner::Sum, a({i.var, k.var}) * b({k.var, j.var}), {k}));
  return ComputeDAG({a, b, c});
}

TEST(SearchTask, JsonRoundTrip) {
  Target target = Target::Parse("opencl -device=mali");
  HardwareParams params = DefaultHardwareParams(target);
  params.max_threads_per_block = 128;
  SearchTask task(SmallMatmul(16), "", target, params, "matmul");
  EXPECT_EQ(task.workload_key, task.compute_dag.workload_key());

  SearchTask back = SearchTask::FromJson(nlohmann::json::parse(task.ToJson().dump()));
  EXPECT_EQ(back.workload_key, task.workload_key);
  EXPECT_EQ(back.compute_dag.workload_key(), task.compute_dag.workload_key());
  EXPECT_EQ(back.target, task.target);
  EXPECT_EQ(back.hardware_params, task.hardware_params);
  EXPECT_EQ(back.desc, "matmul");
}

TEST(SearchTask, ColdConstantsRoundTrip) {
  SearchTask task(SmallMatmul(8), Target::Parse("llvm"));
  EXPECT_FALSE(task.ToJson().contains("cold_constants"));  // older records read as before
  task.SetConstantArgs({1});
  task.cold_constants = true;
  SearchTask back = SearchTask::FromJson(nlohmann::json::parse(task.ToJson().dump()));
  EXPECT_TRUE(back.cold_constants);
  EXPECT_EQ(back.constant_args, std::vector<int>{1});
  EXPECT_FALSE(
      SearchTask::FromJson(SearchTask(SmallMatmul(8), Target::Parse("llvm")).ToJson()).cold_constants);

  nlohmann::json bad = task.ToJson();
  bad["cold_constants"] = 1;
  const std::string message = test::ErrorOf([&] { SearchTask::FromJson(bad); });
  EXPECT_NE(message.find("'cold_constants' must be true or false"), std::string::npos) << message;
}

TEST(SearchTask, NetworkCachesRoundTrip) {
  SearchTask task(SmallMatmul(8), Target::Parse("llvm"));
  EXPECT_FALSE(task.ToJson().contains("network_caches"));  // older records read as before
  task.network_caches = true;
  SearchTask back = SearchTask::FromJson(nlohmann::json::parse(task.ToJson().dump()));
  EXPECT_TRUE(back.network_caches);
  EXPECT_FALSE(back.cold_constants);

  nlohmann::json bad = task.ToJson();
  bad["network_caches"] = "yes";
  const std::string message = test::ErrorOf([&] { SearchTask::FromJson(bad); });
  EXPECT_NE(message.find("'network_caches' must be true or false"), std::string::npos) << message;
}

TEST(SearchTask, RejectsBadJson) {
  nlohmann::json doc = SearchTask(SmallMatmul(4), Target::Parse("llvm")).ToJson();
  nlohmann::json future = doc;
  future["version"] = 99;
  EXPECT_THROW(SearchTask::FromJson(future), Error);
  nlohmann::json missing = doc;
  missing.erase("target");
  const std::string message = test::ErrorOf([&] { SearchTask::FromJson(missing); });
  EXPECT_TRUE(test::Contains(message, "'target'")) << message;
  nlohmann::json unknown = doc;
  unknown["hardware_params"]["num_warps"] = 3;
  EXPECT_THROW(SearchTask::FromJson(unknown), Error);
}

}  // namespace
}  // namespace autosched
