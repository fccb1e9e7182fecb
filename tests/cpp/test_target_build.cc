// Target resolution on this host, Build's dispatch on the target's kind, and
// the backend-neutral Module: its timing loop checks every run of a kernel.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <thread>

#include "codegen/build.h"
#include "runtime/module.h"
#include "support/error.h"
#include "task/host_cpu.h"
#include "task/target.h"
#include "test_util.h"

namespace autosched {
namespace {

DataType f32 = DataType::Float(32);

// Returns `fail_with` on run number `fail_on` (1-based), kKernelOk otherwise.
class FakeKernel : public Kernel {
 public:
  FakeKernel(int fail_on, int32_t fail_with, bool fail_sync = false)
      : fail_on_(fail_on), fail_with_(fail_with), fail_sync_(fail_sync) {}
  int32_t Run(void** args) override {
    static_cast<float*>(args[0])[0] += 1.0f;
    return ++runs == fail_on_ ? fail_with_ : kKernelOk;
  }
  int32_t Synchronize() override {
    ++syncs;
    return fail_sync_ ? -7 : kKernelOk;
  }
  int runs = 0, syncs = 0;

 private:
  int fail_on_;
  int32_t fail_with_;
  bool fail_sync_;
};

Module FakeModule(std::shared_ptr<Kernel> kernel) {
  ModuleSources sources;
  sources.Add("lowered", "for (i, 0, 1) ...");
  return Module("fake", {{"x", f32, {1}, true}}, std::move(kernel), std::move(sources), 0.0);
}

using test::ErrorOf;

TEST(ModuleTimeEvaluator, EvictsConstantsBeforeEachRunAndKeepsThem) {
  // An odd length at an odd address: the first and last partial lines are
  // evicted too, and what the memory holds is written back, not dropped.
  std::vector<uint8_t> weights(100003);
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<uint8_t>(i * 7 + 3);
  const std::vector<uint8_t> before = weights;
  EvictFromCaches(weights.data() + 1, weights.size() - 1);
  EXPECT_EQ(weights, before);

  float x = 0;
  std::vector<CallArg> args = {CallArg{&x, f32, {1}, true}};
  auto kernel = std::make_shared<FakeKernel>(0, kKernelOk);
  TimeOptions options{4, 3, 0, false};
  options.evict_before_run = {{weights.data(), weights.size()}, {&x, sizeof x}};
  std::vector<double> times = FakeModule(kernel).TimeEvaluate(args, options);
  ASSERT_EQ(times.size(), 3u);
  for (double t : times) EXPECT_GE(t, 0.0);
  EXPECT_EQ(kernel->runs, 1 + 4 * 3);
  EXPECT_EQ(x, 13.0f);  // every run saw the value the run before stored
  EXPECT_EQ(weights, before);

  // A failing run still names its number.
  auto third = std::make_shared<FakeKernel>(3, kKernelOutOfMemory);
  std::string message = ErrorOf([&] { FakeModule(third).TimeEvaluate(args, options); });
  EXPECT_NE(message.find("run 3 of the time evaluator"), std::string::npos) << message;
}

TEST(ModuleTimeEvaluator, SetsUpNetworkCachesBeforeEachRunAndKeepsTheInputs) {
  // An input of an odd size, rewritten in shares by the pool's threads before
  // each run: its contents stay what they were.
  std::vector<uint8_t> input(100003);
  for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<uint8_t>(i * 5 + 1);
  const std::vector<uint8_t> before = input;
  float x = 0;
  std::vector<CallArg> args = {CallArg{&x, f32, {1}, true}};
  auto kernel = std::make_shared<FakeKernel>(0, kKernelOk);
  TimeOptions options{4, 3, 0, false};
  options.refill_private_caches_bytes = 1 << 20;
  options.produce_before_run = {{input.data(), input.size()}, {&x, sizeof x}};
  std::vector<double> times = FakeModule(kernel).TimeEvaluate(args, options);
  ASSERT_EQ(times.size(), 3u);
  for (double t : times) EXPECT_GE(t, 0.0);
  EXPECT_EQ(kernel->runs, 1 + 4 * 3);
  EXPECT_EQ(x, 13.0f);  // every run saw the value the run before stored
  EXPECT_EQ(input, before);
}

TEST(ModuleTimeEvaluator, ChecksTheStatusOfEveryRun) {
  float x = 0;
  std::vector<CallArg> args = {CallArg{&x, f32, {1}, true}};
  auto ok = std::make_shared<FakeKernel>(0, kKernelOk);
  std::vector<double> times = FakeModule(ok).TimeEvaluate(args, {4, 3, 0, false});
  EXPECT_EQ(times.size(), 3u);
  EXPECT_EQ(ok->runs, 1 + 4 * 3);  // the warm-up, then number * repeat
  EXPECT_EQ(x, 13.0f);

  // The third run is the second timed one: an error, not a time.
  auto third = std::make_shared<FakeKernel>(3, kKernelOutOfMemory);
  std::string message = ErrorOf([&] { FakeModule(third).TimeEvaluate(args, {5, 2, 0, false}); });
  EXPECT_NE(message.find("could not allocate"), std::string::npos) << message;
  EXPECT_NE(message.find("run 3 of the time evaluator"), std::string::npos) << message;
  EXPECT_EQ(third->runs, 3);  // stopped at the failing run

  auto warmup = std::make_shared<FakeKernel>(1, -42);
  message = ErrorOf([&] { FakeModule(warmup).TimeEvaluate(args, {5, 2, 0, false}); });
  EXPECT_NE(message.find("status -42 (run 1 of"), std::string::npos) << message;

  // A failure while growing `number` to min_repeat_ms counts too.
  auto growing = std::make_shared<FakeKernel>(40, kKernelOutOfMemory);
  message = ErrorOf([&] { FakeModule(growing).TimeEvaluate(args, {1, 1, 1e6, false}); });
  EXPECT_NE(message.find("could not allocate"), std::string::npos) << message;

  auto sync = std::make_shared<FakeKernel>(0, kKernelOk, /*fail_sync=*/true);
  EXPECT_NE(ErrorOf([&] {
              FakeModule(sync).TimeEvaluate(args, {2, 2, 0, false});
            }).find("status -7"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { FakeModule(sync).Call(args); }).find("status -7"), std::string::npos);
}

TEST(ModuleSources, NamedLazyAndRefusingUnknownFormats) {
  std::atomic<int> made{0};
  ModuleSources sources;
  sources.Add("ll", "define i32 @f");
  sources.AddLazy("asm", [&] {
    ++made;
    return std::string("vaddps");
  });
  sources.AddAlias("s", "asm");
  Module m("m", {}, std::make_shared<FakeKernel>(0, kKernelOk), sources, 0.0);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back([&] { EXPECT_EQ(m.GetSource("asm"), "vaddps"); });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(m.GetSource("s"), "vaddps");
  EXPECT_EQ(made.load(), 1);
  EXPECT_EQ(m.sources().Formats(), (std::vector<std::string>{"asm", "ll"}));
  std::string message = ErrorOf([&] { m.GetSource("cl"); });
  EXPECT_NE(message.find("unknown source format 'cl' (this module has 'asm', 'll')"), std::string::npos)
      << message;
}

TEST(Module, WithoutKernelReadsButRefusesToRun) {
  ModuleSources sources;
  sources.Add("asm", "vaddps zmm0");
  Module m("export", {{"x", f32, {1}, true}}, nullptr, sources, 0.0, "it uses avx512f");
  float x = 0;
  EXPECT_EQ(m.GetSource("asm"), "vaddps zmm0");
  std::string message = ErrorOf([&] { m.Call({CallArg{&x, f32, {1}, true}}); });
  EXPECT_NE(message.find("cannot run on this host: it uses avx512f"), std::string::npos) << message;
  EXPECT_FALSE(ErrorOf([&] { m.TimeEvaluate({CallArg{&x, f32, {1}, true}}, {}); }).empty());
}

TEST(TargetResolution, HostCpuAsLLVMSeesIt) {
  Target host = Target::Host();
  EXPECT_EQ(host, Target::Parse("llvm"));
  EXPECT_TRUE(host.cpu.is_host);
  EXPECT_FALSE(host.cpu.name.empty());
  EXPECT_TRUE(host.cpu.dropped.empty() && host.cpu.missing.empty());
  EXPECT_EQ(host.num_cores, HostCores());
  EXPECT_EQ(DefaultHardwareParams(host).num_cores, host.num_cores);
#if defined(__x86_64__)
  EXPECT_EQ(host.cpu.Has("avx2"), __builtin_cpu_supports("avx2") != 0);
  EXPECT_EQ(host.cpu.Has("avx512f"), __builtin_cpu_supports("avx512f") != 0);
  int64_t want = host.cpu.Has("avx512f") ? 64 : host.cpu.Has("avx2") ? 32 : 16;
  EXPECT_EQ(DefaultHardwareParams(host).vector_unit_bytes, want);
#endif
  std::string text = host.Describe();
  EXPECT_NE(text.find("host CPU " + host.cpu.name), std::string::npos) << text;
  EXPECT_NE(text.find("vector_unit_bytes="), std::string::npos) << text;
  EXPECT_EQ(Target::Parse("llvm -num-cores=3  # a comment"), Target::Parse("llvm -num-cores=3"));
}

// The one reader of /proc/cpuinfo: the feature flags without LLVM, the clock
// of the peak FLOP/s estimate.
TEST(TargetResolution, CpuinfoValuesAreTheTextAfterTheColonOfTheKeysLines) {
  const std::string path = testing::TempDir() + "/cpuinfo_" + std::to_string(getpid());
  {
    std::ofstream f(path);
    f << "processor\t: 0\ncpu MHz\t\t: 2400.000\nflags\t\t: fpu sse4_1 avx2\n\n"
      << "processor\t: 1\ncpu MHz\t\t: 3100.5\nflags\t\t: fpu\nno colon on this line\n";
  }
  EXPECT_EQ(CpuinfoValues({"cpu MHz"}, path), (std::vector<std::string>{" 2400.000", " 3100.5"}));
  EXPECT_EQ(CpuinfoValues({"flags", "Features"}, path),
            (std::vector<std::string>{" fpu sse4_1 avx2", " fpu"}));
  EXPECT_TRUE(CpuinfoValues({"bogomips"}, path).empty());
  std::remove(path.c_str());
  EXPECT_TRUE(CpuinfoValues({"flags"}, path).empty());  // no such file
#if defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__))
  EXPECT_FALSE(CpuinfoValues({"flags", "Features"}).empty());  // this machine's
#endif
}

TEST(TargetResolution, ForeignCpuLosesWhatTheHostLacksUnlessNoHostCheck) {
  if (!HasLLVMBackend()) GTEST_SKIP() << "built without LLVM";
  Target narrowed = Target::Parse("llvm -mcpu=sapphirerapids");
  Target full = Target::Parse("llvm -mcpu=sapphirerapids -no-host-check");
  EXPECT_TRUE(full.cpu.Has("avx512f"));
  EXPECT_TRUE(full.cpu.dropped.empty());
  EXPECT_EQ(full.cpu.missing, narrowed.cpu.dropped);
  EXPECT_EQ(DefaultHardwareParams(full).vector_unit_bytes, 64);
  bool host_has_avx512 = HostCpu().Has("avx512f");
  EXPECT_EQ(narrowed.cpu.Has("avx512f"), host_has_avx512);
  EXPECT_EQ(DefaultHardwareParams(narrowed).vector_unit_bytes, host_has_avx512 ? 64 : 32);
  for (const std::string& f : narrowed.cpu.dropped) EXPECT_FALSE(narrowed.cpu.Has(f)) << f;
}

TEST(TargetResolution, RefusesOptionsItCannotHonour) {
  std::string triple = ErrorOf([] { Target::Parse("llvm -mtriple=nosucharch-linux-gnu"); });
  EXPECT_NE(triple.find("names no architecture"), std::string::npos) << triple;
#if defined(__x86_64__)
  EXPECT_NO_THROW(Target::Parse("llvm -mtriple=x86_64-linux-gnu"));
  if (HasLLVMBackend()) {
    // Another architecture is cross-compiled; its -mcpu must be a CPU of it.
    EXPECT_TRUE(Target::Parse("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a76").cpu.foreign);
    std::string cpu = ErrorOf([] { Target::Parse("llvm -mtriple=aarch64-linux-gnu -mcpu=znver3"); });
    EXPECT_NE(cpu.find("unknown -mcpu 'znver3'"), std::string::npos) << cpu;
  }
#endif
  EXPECT_NE(ErrorOf([] { Target::Parse("llvm -opt-level=4"); }).find("0, 1, 2 or 3"), std::string::npos);
  EXPECT_EQ(Target::Parse("llvm -opt-level=0").opt_level, 0);
  EXPECT_NE(ErrorOf([] { Target::Parse("llvm -mattr=avx2"); }).find("+feature or -feature"),
            std::string::npos);
  if (HasLLVMBackend()) {
    EXPECT_NE(ErrorOf([] { Target::Parse("llvm -mattr=+avx9000"); }).find("unknown CPU feature 'avx9000'"),
              std::string::npos);
  }
}

LoweredFunc Doubler(int64_t n) {
  Buffer a = MakeBuffer("A", f32, {n}), c = MakeBuffer("C", f32, {n});
  Expr i = VarNode::make("i");
  Stmt body = BufferStoreNode::make(c, BufferLoadNode::make(a, {i}) * Expr(2.0f), {i});
  return {"doubler", {a, c}, ForNode::make(i, 0, static_cast<int>(n), ForKind::Vectorized, body)};
}

TEST(Build, DispatchesOnTheTargetKind) {
  std::vector<float> a(16), c(16);
  for (int k = 0; k < 16; ++k) a[k] = static_cast<float>(k);
  // opencl: runs where PoCL (or another driver) is installed, else a clear error.
  std::string message = ErrorOf([&] {
    Module m = Build(Doubler(16), Target::Parse("opencl -device=pocl"));
    m.Call({CallArg{a.data(), f32, {16}, true}, CallArg{c.data(), f32, {16}, true}});
  });
  if (message.empty()) {
    for (int k = 0; k < 16; ++k) EXPECT_EQ(c[k], 2.0f * k) << "opencl";
  } else {
    EXPECT_NE(message.find("OpenCL"), std::string::npos) << message;
  }
  if (!HasLLVMBackend()) GTEST_SKIP() << "built without LLVM";
  for (int level = 0; level <= 3; ++level) {
    std::fill(c.begin(), c.end(), 0.0f);
    Module m = Build(Doubler(16), Target::Parse("llvm -opt-level=" + std::to_string(level)));
    m.Call({CallArg{a.data(), f32, {16}, true}, CallArg{c.data(), f32, {16}, true}});
    for (int k = 0; k < 16; ++k) EXPECT_EQ(c[k], 2.0f * k) << "opt-level " << level;
  }
}

TEST(Build, NoHostCheckGivesReadableCodeThatRefusesToRunWhereFeaturesLack) {
  if (!HasLLVMBackend()) GTEST_SKIP() << "built without LLVM";
  Target target = Target::Parse("llvm -mcpu=sapphirerapids -no-host-check");
  Module m = Build(Doubler(64), target);
  EXPECT_NE(m.GetSource("asm").find("zmm"), std::string::npos);
  std::vector<float> a(64, 1.0f), c(64, 0.0f);
  std::vector<CallArg> args = {CallArg{a.data(), f32, {64}, true}, CallArg{c.data(), f32, {64}, true}};
  if (target.cpu.missing.empty()) {
    m.Call(args);  // this host is a Sapphire Rapids or better
    EXPECT_EQ(c[63], 2.0f);
    return;
  }
  std::string message = ErrorOf([&] { m.Call(args); });
  EXPECT_NE(message.find("cannot run on this host"), std::string::npos) << message;
  // The message names what this host lacks, whichever features those are.
  for (const std::string& feature : target.cpu.missing) {
    EXPECT_NE(message.find(feature), std::string::npos) << feature << " not in: " << message;
  }
  EXPECT_EQ(c[0], 0.0f);
}

// ELF's e_machine (little-endian), 0 when `bytes` is no ELF file.
int ElfMachine(const std::string& bytes) {
  if (bytes.size() < 20 || bytes.compare(0, 4,
                                         "\x7f"
                                         "ELF") != 0)
    return 0;
  return static_cast<unsigned char>(bytes[18]) | static_cast<unsigned char>(bytes[19]) << 8;
}

TEST(Build, AnotherArchitectureIsCrossCompiledToItsObjectFile) {
  if (!HasLLVMBackend()) GTEST_SKIP() << "built without LLVM";
  Target target = Target::Parse("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a76");
  EXPECT_TRUE(target.cpu.foreign);
  EXPECT_TRUE(target.cpu.Has("neon")) << target.Describe();
  EXPECT_EQ(DefaultHardwareParams(target).vector_unit_bytes, 16);
  EXPECT_EQ(DefaultHardwareParams(target).num_vector_registers, 32);
  Module m = Build(Doubler(64), target);
  const std::string object = m.GetSource("obj");
  EXPECT_EQ(ElfMachine(object), 183);  // EM_AARCH64
  EXPECT_EQ(object[16], 1);            // ET_REL: an object file
  EXPECT_NE(m.GetSource("asm").find("fadd"), std::string::npos);
  std::vector<float> a(64, 1.0f), c(64, 0.0f);
  std::string message = ErrorOf([&] {
    m.Call({CallArg{a.data(), f32, {64}, true}, CallArg{c.data(), f32, {64}, true}});
  });
  EXPECT_NE(message.find("cross-compiled for aarch64"), std::string::npos) << message;
  // Another backend LLVM has: RISC-V (EM_RISCV).
  EXPECT_EQ(ElfMachine(Build(Doubler(16), Target::Parse("llvm -mtriple=riscv64-linux-gnu")).GetSource("obj")),
            243);
}

}  // namespace
}  // namespace autosched
