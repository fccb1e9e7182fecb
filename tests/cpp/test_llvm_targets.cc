// The LLVM backends autosched registers: those of the architectures it compiles
// for (x86-64, AArch64, RISC-V), and no other; a -mtriple of another
// architecture is refused with a message naming the supported ones.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codegen/build.h"
#include "task/host_cpu.h"
#include "task/llvm_targets.h"
#include "task/target.h"
#include "test_util.h"

namespace autosched {
namespace {

using test::Contains;
using test::ErrorOf;

TEST(LLVMTargets, OnlyTheSupportedArchitecturesAreRegistered) {
  if (!HasLLVMBackend()) GTEST_SKIP() << "built without LLVM";
#if !defined(__x86_64__) && !defined(__aarch64__)
  GTEST_SKIP() << "this host's own backend is registered too";
#endif
  // Every path that registers backends: the host's (the JIT), then cross-compiled targets.
  InitializeLLVMNativeTarget();
  Target::Parse("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a76");
  Target::Parse("llvm -mtriple=riscv64-linux-gnu");
  InitializeLLVMTargets();
  // X86 registers 32- and 64-bit x86, AArch64 its ILP32 and big-endian variants, RISCV both widths.
  std::vector<std::string> expected = {"aarch64", "aarch64_32", "aarch64_be", "arm64", "arm64_32",
                                       "riscv32", "riscv64",    "x86",        "x86-64"};
  EXPECT_EQ(RegisteredLLVMTargets(), expected);
}

TEST(LLVMTargets, AnotherArchitectureIsRefusedNamingTheSupportedOnes) {
  if (!HasLLVMBackend()) GTEST_SKIP() << "built without LLVM";
  for (const char* triple : {"armv7-linux-gnueabihf", "powerpc64le-linux-gnu", "riscv32-linux-gnu"}) {
    std::string message = ErrorOf([&] { Target::Parse(std::string("llvm -mtriple=") + triple); });
    EXPECT_TRUE(Contains(message, "which autosched does not compile for")) << triple << ": " << message;
    EXPECT_TRUE(Contains(message, "x86_64 (x86-64), aarch64 (AArch64) and riscv64 (RISC-V)")) << message;
  }
}

}  // namespace
}  // namespace autosched
