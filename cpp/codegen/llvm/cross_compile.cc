#include "codegen/llvm/cross_compile.h"

#include <llvm/IR/Module.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>

#include "codegen/llvm/target_machine.h"
#include "support/error.h"

namespace autosched {

std::string EmitObjectFile(const std::string& ir_text, const Target& target) {
  // Target::Parse registered every backend for a foreign triple; the host's
  // own is registered by every build.
  std::unique_ptr<llvm::TargetMachine> tm = MakeTargetMachine(target, /*jit=*/false);
  AS_CHECK(tm != nullptr,
           "LLVM cannot make a target machine for " << target.cpu.triple << " (" << target.cpu.name << ")");
  llvm::LLVMContext ctx;
  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> module = llvm::parseIR(llvm::MemoryBufferRef(ir_text, "kernel"), diag, ctx);
  AS_CHECK(module != nullptr, "cannot re-read generated LLVM IR: " << diag.getMessage().str());
  module->setTargetTriple(target.cpu.triple);
  module->setDataLayout(tm->createDataLayout());
  return EmitObjectFile(*module, *tm);
}

}  // namespace autosched
