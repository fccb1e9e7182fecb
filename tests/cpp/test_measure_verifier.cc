// The verifier (inputs, reference, tolerance, plausibility), the worker
// protocol's framing, and LowerAndBuild.
#include <gtest/gtest.h>

#include <cmath>

#include "codegen/build.h"
#include "measure/build_state.h"
#include "measure/protocol.h"
#include "measure/verifier.h"
#include "schedule_test_util.h"

namespace autosched {
namespace {

using sched_test::MatmulRelu;

// A tiled, parallel schedule of MatmulRelu: the candidate kernel.
State TiledMatmul(const ComputeDAG& dag) {
  State s(dag);
  int c = s.StageIndex("C");
  s = s.Split(c, 0, {std::optional<int64_t>(4)});
  s = s.Annotate(c, 0, IteratorAnnotation::Parallel);
  return s;
}

VerifyOptions Options(double whole_output_work) {
  VerifyOptions o;
  o.seed = 7;
  o.whole_output_work = whole_output_work;
  o.num_points = 40;
  return o;
}

TEST(MeasureVerifier, GoodKernelMatchesWholeAndSampledReference) {
  if (!HasLLVMBackend()) GTEST_SKIP() << "built without LLVM";
  ComputeDAG dag = MatmulRelu(12, 10, 9);
  BuiltCandidate built = LowerAndBuild(TiledMatmul(dag), Target::Parse("llvm"));
  ASSERT_EQ(built.error, MeasureError::None) << built.error_msg;
  for (double work : {1e9, 0.0}) {
    TestData data(dag, Options(work));
    EXPECT_EQ(data.whole(), work > 0);
    data.PoisonOutputs();
    EXPECT_NE(data.Compare(false), "");  // NaN everywhere: nothing was written
    built.module->Call(data.CallArgs());
    EXPECT_EQ(data.Compare(false), "");
    data.PerturbOutputs();
    std::string msg = data.Compare(false);
    EXPECT_NE(msg.find("output 'D' differs from the reference at (0, 0)"), std::string::npos) << msg;
  }
}

TEST(MeasureVerifier, InputsAreTheSameForTheSameSeed) {
  ComputeDAG dag = MatmulRelu(5, 6, 7);
  TestData a(dag, Options(1e9)), b(dag, Options(1e9));
  std::vector<CallArg> x = a.CallArgs(), y = b.CallArgs();
  for (int i = 0; i < 2; ++i) EXPECT_EQ(std::memcmp(x[i].data, y[i].data, 5 * 7 * 4), 0);
  VerifyOptions other = Options(1e9);
  other.seed = 8;
  TestData c(dag, other);
  EXPECT_NE(std::memcmp(x[0].data, c.CallArgs()[0].data, 5 * 7 * 4), 0);
}

TEST(MeasureVerifier, PlausibilityFlagsZeroNegativeNaNAndTooFast) {
  SearchTask task(MatmulRelu(64, 64, 64), Target::Parse("llvm -num-cores=2"));
  PlausibilityBound b = DerivePlausibilityBound(task);
  EXPECT_GT(b.peak_flops, 1e9);
  EXPECT_GE(b.peak_bandwidth, 1e12);
  EXPECT_EQ(b.min_bytes, 3 * 64 * 64 * 4);
  EXPECT_EQ(CheckPlausible({1e-3}, b), "");
  EXPECT_NE(CheckPlausible({0.0}, b).find("not a positive finite"), std::string::npos);
  EXPECT_NE(CheckPlausible({-1.0}, b), "");
  EXPECT_NE(CheckPlausible({NAN}, b), "");
  EXPECT_NE(CheckPlausible({}, b), "");
  EXPECT_NE(CheckPlausible({1e-12}, b).find("faster than the hardware allows"), std::string::npos);
  // Overrides replace the derived peaks.
  PlausibilityBound slow = DerivePlausibilityBound(task, 1e6, 1e6);
  EXPECT_NE(CheckPlausible({1e-3}, slow), "");
}

TEST(MeasureVerifier, AGatherNeedsOnlyTheRowsItReads) {
  // out[i, j] = table[ids[i], j]: an embedding lookup reads 8 of the table's 1000 rows, so the table's
  // bytes are no floor on its time (an untuned BERT's embedding was refused as "implausible").
  Tensor table = placeholder({1000, 64}, DataType::Float(32), "table");
  Tensor ids = placeholder({8}, DataType::Int(32), "ids");
  IterVar i = sched_test::Axis("i", 8), j = sched_test::Axis("j", 64);
  Tensor out = compute("out", {i, j}, table({ids({i.var}), j.var}));
  const double bytes = MinTouchedBytes(ComputeDAG({table, ids, out}));
  EXPECT_DOUBLE_EQ(bytes, 8 * 64 * 4 + 8 * 4);
  // A matmul reads all of both operands.
  EXPECT_DOUBLE_EQ(MinTouchedBytes(MatmulRelu(16, 8, 4)), (16 * 4 + 4 * 8 + 16 * 8) * 4);
}

TEST(MeasureVerifier, GpuPeaksComeFromUnitsAndClockAndCanBeGiven) {
  HardwareParams hw = DefaultHardwareParams(Target::Parse("opencl -device=nvidia"));
  hw.num_cores = 100;
  hw.clock_mhz = 2000;
  SearchTask task(MatmulRelu(64, 64, 64), "", Target::Parse("opencl -device=nvidia"), hw);
  PlausibilityBound b = DerivePlausibilityBound(task);
  EXPECT_DOUBLE_EQ(b.peak_flops, 100 * 128 * 2 * 2e9);  // units x lanes x FMA x clock
  EXPECT_DOUBLE_EQ(b.peak_bandwidth, 100 * 256 * 2e9);
  EXPECT_DOUBLE_EQ(b.min_seconds(),
                   std::max(b.flop_ct / b.peak_flops, b.min_bytes / b.peak_bandwidth) / kPeakMargin);
  EXPECT_NE(b.origin.find("100 compute units at 2000 MHz"), std::string::npos) << b.origin;
  // Without a clock the family's assumed one (3 GHz) is used.
  hw.clock_mhz = 0;
  EXPECT_DOUBLE_EQ(DerivePlausibilityBound(SearchTask(task.compute_dag, "", task.target, hw)).peak_flops,
                   100 * 128 * 2 * 3e9);
  // The task's peak_gflops / peak_bandwidth_gbs replace the derived peaks, the
  // runner's options replace both.
  hw.peak_gflops = 5;
  hw.peak_bandwidth_gbs = 7;
  SearchTask given(task.compute_dag, "", task.target, hw);
  PlausibilityBound g = DerivePlausibilityBound(given);
  EXPECT_DOUBLE_EQ(g.peak_flops, 5e9);
  EXPECT_DOUBLE_EQ(g.peak_bandwidth, 7e9);
  EXPECT_NE(CheckPlausible({g.flop_ct / 5e9 / 2}, g).find("task's hardware parameters"), std::string::npos);
  EXPECT_EQ(CheckPlausible({g.flop_ct / 5e9}, g), "");  // at the peak: within the margin
  PlausibilityBound r = DerivePlausibilityBound(given, 1e12, 1e13);
  EXPECT_DOUBLE_EQ(r.peak_flops, 1e12);
  EXPECT_DOUBLE_EQ(r.peak_bandwidth, 1e13);
  EXPECT_EQ(r.origin.rfind("the runner's options", 0), 0u) << r.origin;
}

TEST(MeasureProtocol, FramesSplitAnywhereDecodeWhole) {
  std::string wire = EncodeMessage({{"cmd", "run"}, {"id", 3}}) + EncodeMessage({{"cmd", "exit"}});
  std::string buffer;
  std::vector<nlohmann::json> got;
  for (char ch : wire) {
    buffer.push_back(ch);
    nlohmann::json msg;
    while (DecodeMessage(&buffer, &msg)) got.push_back(msg);
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0]["id"], 3);
  EXPECT_EQ(got[1]["cmd"], "exit");
  std::string garbage = std::string("\x05\0\0\0", 4) + "{nope";
  nlohmann::json msg;
  EXPECT_THROW(DecodeMessage(&garbage, &msg), Error);
}

TEST(MeasureBuildState, ErrorsAreTyped) {
  ComputeDAG dag = MatmulRelu(4, 4, 4);
  BuiltCandidate gpu = LowerAndBuild(State(dag), Target::Parse("opencl"));
  if (gpu.error != MeasureError::None) EXPECT_EQ(gpu.error, MeasureError::Compile) << gpu.error_msg;
  EXPECT_STREQ(MeasureErrorName(MeasureError::WrongAnswer), "wrong_answer");
  EXPECT_EQ(ParseMeasureError("run_timeout"), MeasureError::RunTimeout);
  EXPECT_THROW(ParseMeasureError("bogus"), Error);
}

}  // namespace
}  // namespace autosched
