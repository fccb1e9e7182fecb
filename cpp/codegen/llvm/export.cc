// EmitKernelLibraryObject (codegen/export.h): the LLVM IR of built modules,
// linked into one module and written as an object file for a shared library.
#include "codegen/export.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>

#include "codegen/llvm/target_machine.h"
#include "support/error.h"

namespace autosched {

// Object code of `module` for the target machine (shared with other writers
// of object files for a TargetMachine).
std::string EmitObjectFile(llvm::Module& module, llvm::TargetMachine& tm) {
  llvm::SmallString<0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  AS_CHECK(!tm.addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile),
           "LLVM cannot write object files for " << tm.getTargetCPU().str());
  pm.run(module);
  return std::string(buffer.str());
}

namespace {

// Parses a module's optimised IR and renames its one exported function (the
// kernel) to `symbol`; the rest is made local so that kernels never clash.
std::unique_ptr<llvm::Module> KernelIR(const Module& mod, const std::string& symbol, llvm::LLVMContext& ctx) {
  std::vector<std::string> formats = mod.sources().Formats();
  AS_CHECK(std::find(formats.begin(), formats.end(), "ll") != formats.end(),
           "module '" << mod.name() << "' has no LLVM IR to export (only llvm modules can be exported as "
                      << "object code)");
  std::string text = mod.GetSource("ll");
  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> m = llvm::parseIR(llvm::MemoryBufferRef(text, mod.name()), diag, ctx);
  AS_CHECK(m != nullptr,
           "cannot re-read the LLVM IR of module '" << mod.name() << "': " << diag.getMessage().str());
  llvm::Function* entry = nullptr;
  for (llvm::Function& f : *m) {
    if (f.isDeclaration()) continue;
    if (!f.hasLocalLinkage()) {
      AS_ICHECK(entry == nullptr, "module '" << mod.name() << "' exports more than one function");
      entry = &f;
    }
  }
  AS_ICHECK(entry != nullptr, "module '" << mod.name() << "' exports no kernel function");
  for (llvm::GlobalVariable& g : m->globals()) {
    if (!g.isDeclaration()) g.setLinkage(llvm::GlobalValue::InternalLinkage);
  }
  entry->setName(symbol);
  AS_ICHECK(entry->getName() == symbol, "kernel symbol '" << symbol << "' is taken");
  return m;
}

// Gives a runtime entry point a local body that calls through the exported
// pointer the loader sets.
void AddRuntimeTrampoline(llvm::Module& m, const std::string& name) {
  llvm::LLVMContext& ctx = m.getContext();
  llvm::PointerType* ptr = llvm::PointerType::getUnqual(ctx);
  auto* slot = new llvm::GlobalVariable(m, ptr, /*isConstant=*/false, llvm::GlobalValue::ExternalLinkage,
                                        llvm::ConstantPointerNull::get(ptr), kLibraryRuntimePrefix + name);
  llvm::Function* f = m.getFunction(name);
  if (f == nullptr || !f->isDeclaration()) return;  // no kernel calls it
  f->setLinkage(llvm::GlobalValue::InternalLinkage);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", f));
  llvm::Value* callee = b.CreateLoad(ptr, slot);
  std::vector<llvm::Value*> args;
  for (llvm::Argument& a : f->args()) args.push_back(&a);
  llvm::CallInst* call = b.CreateCall(f->getFunctionType(), callee, args);
  call->setTailCall();
  if (f->getReturnType()->isVoidTy()) {
    b.CreateRetVoid();
  } else {
    b.CreateRet(call);
  }
}

}  // namespace

std::string EmitKernelLibraryObject(const std::vector<const Module*>& modules,
                                    const std::vector<std::string>& symbols, const Target& target) {
  // Object code is what kernels that run in the host process are.
  AS_CHECK(target.kind->runs_in_host_process,
           "only targets whose kernels run in this process (llvm) export object code, got '" << target.str()
                                                                                             << "'");
  AS_ICHECK(modules.size() == symbols.size(), "one symbol per module");
  InitializeLLVMNativeTarget();
  Target resolved = target.cpu.name.empty() ? Target::Parse(target.str()) : target;
  std::unique_ptr<llvm::TargetMachine> tm = MakeTargetMachine(resolved, /*jit=*/false);
  llvm::LLVMContext ctx;
  llvm::Module linked("autosched_library", ctx);
  linked.setTargetTriple(resolved.cpu.triple);
  linked.setDataLayout(tm->createDataLayout());
  llvm::Linker linker(linked);
  for (size_t i = 0; i < modules.size(); ++i) {
    std::unique_ptr<llvm::Module> m = KernelIR(*modules[i], symbols[i], ctx);
    m->setDataLayout(linked.getDataLayout());
    AS_CHECK(!linker.linkInModule(std::move(m)),
             "cannot link module '" << modules[i]->name() << "' into a library");
  }
  for (const char* name : kLibraryRuntimeEntryPoints) AddRuntimeTrampoline(linked, name);
  llvm::Type* i32 = llvm::Type::getInt32Ty(ctx);
  new llvm::GlobalVariable(linked, i32, /*isConstant=*/true, llvm::GlobalValue::ExternalLinkage,
                           llvm::ConstantInt::get(i32, kKernelLibraryVersion), kKernelLibraryVersionSymbol);
  std::string errors;
  llvm::raw_string_ostream os(errors);
  AS_CHECK(!llvm::verifyModule(linked, &os),
           "internal error: the linked library is invalid LLVM IR: " << os.str());
  return EmitObjectFile(linked, *tm);
}

}  // namespace autosched
