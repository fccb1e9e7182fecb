#include "codegen/llvm/cross_compile.h"

#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <algorithm>
#include <memory>

#include "support/error.h"

namespace autosched {

std::string EmitObjectFile(const std::string& ir_text, const Target& target) {
  const CpuSpec& cpu = target.cpu;
  std::string error;
  // Target::Parse registered every backend for a foreign triple; the host's
  // own is registered by every build.
  const llvm::Target* backend = llvm::TargetRegistry::lookupTarget(cpu.triple, error);
  AS_CHECK(backend != nullptr, "LLVM has no target for '" << cpu.triple << "': " << error);
  llvm::TargetOptions options;
  if (target.fast_math) {
    options.AllowFPOpFusion = llvm::FPOpFusion::Fast;
    options.UnsafeFPMath = true;
    options.NoInfsFPMath = true;
    options.NoNaNsFPMath = true;
    options.NoSignedZerosFPMath = true;
  }
  static const llvm::CodeGenOptLevel kLevels[] = {llvm::CodeGenOptLevel::None, llvm::CodeGenOptLevel::Less,
                                                  llvm::CodeGenOptLevel::Default,
                                                  llvm::CodeGenOptLevel::Aggressive};
  std::unique_ptr<llvm::TargetMachine> tm(
      backend->createTargetMachine(cpu.triple, cpu.name, cpu.llvm_features, options, llvm::Reloc::PIC_,
                                   std::nullopt, kLevels[std::clamp(target.opt_level, 0, 3)]));
  AS_CHECK(tm != nullptr, "LLVM cannot make a target machine for " << cpu.triple << " (" << cpu.name << ")");

  llvm::LLVMContext ctx;
  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> module = llvm::parseIR(llvm::MemoryBufferRef(ir_text, "kernel"), diag, ctx);
  AS_CHECK(module != nullptr, "cannot re-read generated LLVM IR: " << diag.getMessage().str());
  module->setTargetTriple(cpu.triple);
  module->setDataLayout(tm->createDataLayout());
  llvm::SmallString<0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  AS_CHECK(!tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile),
           "LLVM cannot emit an object file for " << cpu.triple << " (" << cpu.name << ")");
  pm.run(*module);
  return std::string(buffer.str());
}

}  // namespace autosched
