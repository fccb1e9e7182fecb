// The registry of target kinds (task/target_kind.h): a kind registered from
// this file alone, "testcpu" (llvm's capabilities, options and backend under
// another name), parses, has HardwareParams, is searched with the CPU rules,
// builds and computes the right result, no other file knowing its name; a
// name is registered once; an unknown kind's error lists the registered ones;
// the OpenCL device families answer from one table.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "codegen/build.h"
#include "dag/evaluator.h"
#include "measure/measure.h"
#include "schedule_test_util.h"
#include "search/rules/sketch_rules.h"
#include "search/sketch_policy.h"
#include "support/error.h"
#include "task/opencl_devices.h"
#include "task/peak.h"
#include "task/target_kind.h"

namespace autosched {
namespace {

using sched_test::Matmul;

constexpr const char* kTestKind = "testcpu";

// Registered on first use (once per process, however often the tests run).
const TargetKind& TestCpuKind() {
  static const TargetKind& kind = [&]() -> const TargetKind& {
    TargetKind copy = FindTargetKind("llvm");
    copy.name = kTestKind;
    copy.summary = "the host CPU through LLVM, registered by a test";
    return RegisterTargetKind(copy);
  }();
  return kind;
}

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::vector<std::string> Names(const SketchRuleList& rules) {
  std::vector<std::string> names;
  for (const auto& rule : rules) names.push_back(rule->name());
  return names;
}

TEST(TargetKindRegistry, HasTheKindsOfTheTaskLayer) {
  const std::vector<std::string> names = RegisteredTargetKindNames();
  ASSERT_GE(names.size(), 2u);
  EXPECT_EQ(names[0], "llvm");
  EXPECT_EQ(names[1], "opencl");
  EXPECT_EQ(&DefaultTargetKind(), &FindTargetKind("llvm"));
  EXPECT_EQ(Target().kind, &FindTargetKind("llvm"));
  EXPECT_FALSE(FindTargetKind("llvm").is_gpu);
  EXPECT_TRUE(FindTargetKind("llvm").runs_in_host_process);
  EXPECT_TRUE(FindTargetKind("opencl").is_gpu);
  EXPECT_EQ(FindTargetKind("opencl").timing, RunTiming::kDeviceEvents);
  EXPECT_TRUE(FindTargetKind("opencl").fault_restarts_worker);
  EXPECT_EQ(LookupTargetKind("cuda"), nullptr);
}

TEST(TargetKindRegistry, RefusesANameTwiceAndNamesWithoutOneWord) {
  TestCpuKind();
  TargetKind again = FindTargetKind("llvm");
  std::string message = ErrorOf([&] { RegisterTargetKind(again); });
  EXPECT_NE(message.find("target kind 'llvm' is registered already"), std::string::npos) << message;
  again.name = kTestKind;
  message = ErrorOf([&] { RegisterTargetKind(again); });
  EXPECT_NE(message.find("'testcpu' is registered already"), std::string::npos) << message;
  for (const char* bad : {"", "two words", "x#y"}) {
    again.name = bad;
    message = ErrorOf([&] { RegisterTargetKind(again); });
    EXPECT_NE(message.find("needs a name of one word"), std::string::npos) << bad << ": " << message;
  }
  const std::vector<std::string> names = RegisteredTargetKindNames();
  EXPECT_EQ(std::count(names.begin(), names.end(), kTestKind), 1);
}

TEST(TargetKindRegistry, AnUnknownKindsErrorListsTheRegisteredOnes) {
  TestCpuKind();
  const std::string message = ErrorOf([] { Target::Parse("cuda -device=0"); });
  EXPECT_NE(message.find("unknown target kind 'cuda'"), std::string::npos) << message;
  EXPECT_NE(message.find("llvm, opencl"), std::string::npos) << message;
  EXPECT_NE(message.find(kTestKind), std::string::npos) << message;
  const std::string builder = ErrorOf([] { SetTargetKindBuilder("cuda", nullptr); });
  EXPECT_NE(builder.find("unknown target kind 'cuda' (registered: llvm, opencl"), std::string::npos)
      << builder;
}

TEST(TargetKindRegistry, ATestKindParsesAndHasTheHardwareParamsOfItsCapabilities) {
  const TargetKind& kind = TestCpuKind();
  const Target target = Target::Parse("testcpu -num-cores=2 -fast-math");
  EXPECT_EQ(target.kind, &kind);
  EXPECT_EQ(target.str(), "testcpu -fast-math -num-cores=2");
  EXPECT_EQ(Target::Parse(target.str()), target);
  EXPECT_NE(target, Target::Parse("llvm -num-cores=2 -fast-math"));  // another kind
  const std::string message = ErrorOf([] { Target::Parse("testcpu -device=0"); });
  EXPECT_NE(message.find("unknown target option '-device' for testcpu (known: -mcpu"), std::string::npos)
      << message;
  const HardwareParams hw = DefaultHardwareParams(target);
  const HardwareParams llvm = DefaultHardwareParams(Target::Parse("llvm -num-cores=2"));
  EXPECT_EQ(hw.num_cores, 2);
  EXPECT_EQ(hw.vector_unit_bytes, llvm.vector_unit_bytes);
  EXPECT_EQ(hw.l1_cache_bytes, llvm.l1_cache_bytes);
  EXPECT_EQ(hw.max_threads_per_block, 0);
  EXPECT_NE(target.Describe().find("2 cores"), std::string::npos) << target.Describe();
}

// A few rounds of the search, each candidate built for the test kind and
// timed here; the best one then computes what the reference does.
TEST(TargetKindRegistry, ATestKindIsSearchedWithTheCpuRulesBuiltAndRun) {
  TestCpuKind();
  if (!HasLLVMBackend()) GTEST_SKIP() << "built without LLVM";
  const Target target = Target::Parse("testcpu -num-cores=1");
  const ComputeDAG dag = Matmul(16, 16, 16);
  SearchParams params;
  params.evolutionary_search_population = 32;
  params.evolutionary_search_num_iters = 1;
  params.sample_init_min_population = 8;
  SketchPolicy policy(SearchTask(dag, "", target, DefaultHardwareParams(target), "matmul"), params, 1);
  EXPECT_EQ(Names(policy.sketch_rules()), Names(DefaultCpuSketchRules()));

  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<std::vector<float>> data;
  std::vector<CallArg> args;
  for (const Tensor& t : dag.tensors()) {
    data.emplace_back(t->num_elements());
    for (float& x : data.back()) x = dist(rng);
    args.push_back(CallArg{data.back().data(), t->dtype, t->shape});
  }
  std::optional<State> best;
  double best_seconds = 0;
  for (int round = 0; round < 2; ++round) {
    const std::vector<State> batch = policy.ContinueSearchOneRound(4);
    ASSERT_FALSE(batch.empty());
    std::vector<MeasureResult> results;
    for (const State& state : batch) {
      const Module module = BuildCandidate(state, target);
      TimeOptions options;
      MeasureResult result;
      result.costs = module.TimeEvaluate(args, options);
      if (best_seconds == 0 || result.costs[0] < best_seconds) best = state, best_seconds = result.costs[0];
      results.push_back(result);
    }
    policy.RecordMeasured(batch, results);
  }
  EXPECT_EQ(policy.num_measured(), 8u);

  std::vector<std::vector<float>> expected = data;
  std::vector<HostTensor> host;
  for (size_t i = 0; i < expected.size(); ++i)
    host.push_back({expected[i].data(), dag.tensors()[i]->shape, DataType::Float(32)});
  EvaluateReference(dag, host);
  std::fill(data.back().begin(), data.back().end(), 0.f);
  ASSERT_TRUE(best.has_value());
  BuildCandidate(*best, target).Call(args);
  for (size_t e = 0; e < expected.back().size(); ++e)
    ASSERT_NEAR(data.back()[e], expected.back()[e], 1e-4) << "element " << e << "\n" << best->ToString();
}

// What the search and the measurement ask of OpenCL targets comes from the
// one table of device families (task/opencl_devices.h).
TEST(OpenCLDeviceDescription, FamiliesAnswerEveryCapabilityFromOneTable) {
  const Target mali = Target::Parse("opencl -device=mali");
  const Target nvidia = Target::Parse("opencl -device=nvidia");
  EXPECT_TRUE(TargetPrefersExplicitVectors(mali));
  EXPECT_FALSE(TargetPrefersExplicitVectors(nvidia));
  EXPECT_FALSE(TargetPrefersExplicitVectors(Target::Parse("llvm")));
  const PeakModel mali_peak = TargetPeakModel(mali);
  EXPECT_FALSE(mali_peak.on_host_cpu);
  EXPECT_EQ(mali_peak.fp32_lanes_per_unit, 64);
  EXPECT_EQ(mali_peak.assumed_clock_hz, 1.5e9);
  EXPECT_EQ(TargetPeakModel(nvidia).fp32_lanes_per_unit, 128);
  EXPECT_TRUE(TargetRunsOnCpu(Target::Parse("opencl -device=pocl")));
  EXPECT_TRUE(TargetRunsOnCpu(Target::Parse("opencl -device=cpu")));
  EXPECT_FALSE(TargetRunsOnCpu(Target::Parse("opencl -device=gpu")));
  EXPECT_TRUE(TargetRunsOnCpu(Target::Parse("llvm")));
  EXPECT_EQ(DefaultHardwareParams(nvidia).num_cores, 132);
  EXPECT_EQ(DefaultHardwareParams(Target::Parse("opencl -device=mali -num-cores=12")).num_cores, 12);
  EXPECT_EQ(DefaultHardwareParams(Target::Parse("opencl")).num_cores, 16);
  // A device of this machine: its own parameters, the traits of the family its names contain.
  HardwareParams queried;
  queried.num_cores = 10;
  const OpenCLDeviceDescription g78 =
      DescribeQueriedOpenCLDevice("Mali-G78 ARM ARM Platform", queried, false);
  EXPECT_TRUE(g78.prefers_explicit_vectors);
  EXPECT_EQ(g78.fp32_lanes_per_unit, 64);
  EXPECT_EQ(g78.params.num_cores, 10);
  const OpenCLDeviceDescription h100 = DescribeQueriedOpenCLDevice("NVIDIA H100 NVIDIA CUDA", queried, false);
  EXPECT_FALSE(h100.prefers_explicit_vectors);
  EXPECT_FALSE(h100.on_host_cpu);
  EXPECT_TRUE(
      DescribeQueriedOpenCLDevice("cpu-x86 pocl Portable Computing Language", queried, true).on_host_cpu);
}

}  // namespace
}  // namespace autosched
