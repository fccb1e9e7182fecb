// BuildLLVM: emit, optimise (-opt-level, new pass manager), JIT-compile with ORC.
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/DiagnosticHandler.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <unordered_set>

#include "codegen/llvm/codegen_llvm.h"
#include "codegen/llvm/cross_compile.h"
#include "codegen/llvm/ir_emitter.h"
#include "codegen/llvm/target_machine.h"
#include "lower/stmt_functor.h"
#include "lower/stmt_printer.h"
#include "runtime/aligned_alloc.h"
#include "runtime/thread_pool.h"
#include "support/error.h"
#include "task/target_kind.h"

namespace autosched {
namespace {

std::atomic<int64_t> jit_compilations{0};

const llvm::Target* LookupTarget(const std::string& triple) {
  std::string error;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(triple, error);
  AS_CHECK(t != nullptr, "LLVM has no target for '" << triple << "': " << error);
  return t;
}

llvm::CodeGenOptLevel CodeGenLevel(int opt_level) {
  static const llvm::CodeGenOptLevel kLevels[] = {llvm::CodeGenOptLevel::None, llvm::CodeGenOptLevel::Less,
                                                  llvm::CodeGenOptLevel::Default,
                                                  llvm::CodeGenOptLevel::Aggressive};
  return kLevels[std::clamp(opt_level, 0, 3)];
}

void Optimize(llvm::Module& module, llvm::TargetMachine* tm, int opt_level) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  // Unrolling is the schedule's decision (unroll annotations, auto_unroll_max_step):
  // LLVM's own full unrolling of constant-trip loops can blow a candidate's code
  // up to minutes of compile time, so it only unrolls what it is told to.
  tuning.LoopUnrolling = false;
  llvm::PassBuilder pb(tm, tuning);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  static const llvm::OptimizationLevel kLevels[] = {llvm::OptimizationLevel::O0, llvm::OptimizationLevel::O1,
                                                    llvm::OptimizationLevel::O2, llvm::OptimizationLevel::O3};
  llvm::OptimizationLevel level = kLevels[std::clamp(opt_level, 0, 3)];
  llvm::ModulePassManager mpm = level == llvm::OptimizationLevel::O0
                                    ? pb.buildO0DefaultPipeline(level)
                                    : pb.buildPerModuleDefaultPipeline(level);
  mpm.run(module, mam);
}

std::string ModuleText(const llvm::Module& module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os, nullptr);
  return os.str();
}

// Collects LLVM's error diagnostics (a register allocator that runs out of
// registers, ...): LLVM's default handler would end the process.
class ErrorCollector final : public llvm::DiagnosticHandler {
 public:
  explicit ErrorCollector(std::shared_ptr<std::string> errors) : errors_(std::move(errors)) {}
  bool handleDiagnostics(const llvm::DiagnosticInfo& info) override {
    if (info.getSeverity() != llvm::DS_Error) return false;  // LLVM prints warnings as it would
    std::string text;
    llvm::raw_string_ostream os(text);
    llvm::DiagnosticPrinterRawOStream printer(os);
    info.print(printer);
    *errors_ += (errors_->empty() ? "" : "; ") + os.str();
    return true;
  }

 private:
  std::shared_ptr<std::string> errors_;
};

// The errors LLVM reports while compiling in `ctx`, from now on.
std::shared_ptr<std::string> CollectErrors(llvm::LLVMContext& ctx) {
  auto errors = std::make_shared<std::string>();
  ctx.setDiagnosticHandler(std::make_unique<ErrorCollector>(errors));
  return errors;
}

void CheckNoErrors(const std::string& errors, const std::string& name, const Target& target) {
  AS_CHECK(errors.empty(),
           "LLVM could not compile '" << name << "' for " << target.cpu.name << ": " << errors);
}

// Assembly of LLVM IR text, compiled again for the same CPU.
std::string AssemblyOf(const std::string& ir_text, const Target& target) {
  llvm::LLVMContext ctx;
  const auto errors = CollectErrors(ctx);
  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> module = llvm::parseIR(llvm::MemoryBufferRef(ir_text, "kernel"), diag, ctx);
  AS_CHECK(module != nullptr, "cannot re-read generated LLVM IR: " << diag.getMessage().str());
  auto tm = MakeTargetMachine(target);
  llvm::SmallString<0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  AS_CHECK(!tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile),
           "LLVM cannot print assembly for " << target.cpu.name);
  pm.run(*module);
  CheckNoErrors(*errors, module->getName().str(), target);
  return std::string(buffer.str());
}

template <typename T>
T Unwrap(llvm::Expected<T> value, const char* what) {
  if (!value) {
    std::string message = llvm::toString(value.takeError());
    AS_CHECK(false, "JIT failed to " << what << ": " << message);
  }
  return std::move(*value);
}

void Check(llvm::Error error, const char* what) {
  if (error) {
    std::string message = llvm::toString(std::move(error));
    AS_CHECK(false, "JIT failed to " << what << ": " << message);
  }
}

// A symbol name for the kernel: the function name with characters other
// than [A-Za-z0-9_] replaced.
std::string KernelSymbol(const std::string& name) {
  std::string s = name.empty() ? "kernel" : name;
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  }
  if (std::isdigit(static_cast<unsigned char>(s[0]))) s = "k_" + s;
  return s;
}

// The LLVM backend's Kernel: a function compiled by an ORC JIT, which owns
// its code. It runs to the end in the calling thread (parallel loops wait for
// their chunks), so there is nothing to synchronize.
class JitKernel final : public Kernel {
 public:
  JitKernel(std::unique_ptr<llvm::orc::LLJIT> jit, PackedKernel fn) : jit_(std::move(jit)), fn_(fn) {}
  int32_t Run(void** args) override { return fn_(args); }
  int32_t Synchronize() override { return kKernelOk; }

 private:
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  PackedKernel fn_;
};

std::shared_ptr<Kernel> JitCompile(std::unique_ptr<llvm::Module> module,
                                   std::unique_ptr<llvm::LLVMContext> ctx, const std::string& symbol,
                                   const Target& target, llvm::TargetMachine* tm) {
  llvm::orc::JITTargetMachineBuilder jtmb{llvm::Triple(target.cpu.triple)};
  jtmb.setCPU(target.cpu.name);
  jtmb.addFeatures(std::vector<std::string>{target.cpu.llvm_features});
  jtmb.setCodeGenOptLevel(CodeGenLevel(target.opt_level));
  jtmb.getOptions() = tm->Options;
  auto jit = Unwrap(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(jtmb)).create(), "start");
  llvm::orc::JITDylib& lib = jit->getMainJITDylib();
  lib.addGenerator(Unwrap(
      llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(jit->getDataLayout().getGlobalPrefix()),
      "open the process's libraries"));
  llvm::orc::SymbolMap runtime;
  auto add = [&](const char* name, void* address) {
    runtime[jit->mangleAndIntern(name)] =
        llvm::orc::ExecutorSymbolDef(llvm::orc::ExecutorAddr::fromPtr(address),
                                     llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable);
  };
  add("autosched_parallel_for", reinterpret_cast<void*>(&autosched_parallel_for));
  add("autosched_alloc", reinterpret_cast<void*>(&autosched_alloc));
  add("autosched_free", reinterpret_cast<void*>(&autosched_free));
  Check(lib.define(llvm::orc::absoluteSymbols(std::move(runtime))), "define runtime symbols");
  Check(jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(module), std::move(ctx))), "add the module");
  auto fn = Unwrap(jit->lookup(symbol), "compile the kernel").toPtr<PackedKernel>();
  jit_compilations.fetch_add(1);
  return std::make_shared<JitKernel>(std::move(jit), fn);
}

std::vector<ArgSpec> ArgSpecs(const LoweredFunc& f) {
  std::unordered_set<const BufferNode*> stored;
  PostOrderVisitStmt(f.body, [&](const Stmt& s) {
    if (const auto* store = s.as<BufferStoreNode>()) stored.insert(store->buffer.get());
  });
  std::vector<ArgSpec> args;
  for (const Buffer& b : f.args) args.push_back({b->name, b->dtype, b->shape, stored.count(b.get()) > 0});
  return args;
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& n : names) text += (text.empty() ? "" : ", ") + n;
  return text;
}

}  // namespace

std::unique_ptr<llvm::TargetMachine> MakeTargetMachine(const Target& target, bool jit) {
  const CpuSpec& spec = target.cpu;
  const llvm::Target* t = LookupTarget(spec.triple);
  llvm::TargetOptions options;
  if (target.fast_math) {
    options.AllowFPOpFusion = llvm::FPOpFusion::Fast;
    options.UnsafeFPMath = true;
    options.NoInfsFPMath = true;
    options.NoNaNsFPMath = true;
    options.NoSignedZerosFPMath = true;
  }
  return std::unique_ptr<llvm::TargetMachine>(
      t->createTargetMachine(spec.triple, spec.name, spec.llvm_features, options, llvm::Reloc::PIC_,
                             std::nullopt, CodeGenLevel(target.opt_level), jit && !spec.foreign));
}

int64_t JitCompilations() { return jit_compilations.load(); }

Module BuildLLVM(const LoweredFunc& f, const Target& target) {
  InitializeLLVMNativeTarget();
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<llvm::TargetMachine> tm = MakeTargetMachine(target);

  auto ctx = std::make_unique<llvm::LLVMContext>();
  const auto errors = CollectErrors(*ctx);
  auto module = std::make_unique<llvm::Module>(f.name, *ctx);
  module->setTargetTriple(target.cpu.triple);
  module->setDataLayout(tm->createDataLayout());
  std::string symbol = KernelSymbol(f.name);
  IREmitter(module.get(), target).EmitKernel(f, symbol);
  std::string verify_errors;
  llvm::raw_string_ostream verify_os(verify_errors);
  AS_CHECK(!llvm::verifyModule(*module, &verify_os),
           "internal error: invalid LLVM IR generated for '" << f.name << "': " << verify_os.str());
  Optimize(*module, tm.get(), target.opt_level);
  std::string ir_text = ModuleText(*module);

  ModuleSources sources;
  sources.Add("lowered", ToString(f));
  sources.Add("ll", ir_text);
  sources.AddLazy("asm", [ir_text, target] { return AssemblyOf(ir_text, target); });
  sources.AddAlias("llvm", "ll");
  sources.AddAlias("s", "asm");
  // Code using features this host lacks is never JIT-compiled here: it could
  // only be run, and would fault (SIGILL).
  std::shared_ptr<Kernel> kernel;
  std::string cannot_run;
  if (target.cpu.foreign) {
    // Another architecture: an object file for a machine of it (cross_compile.h).
    sources.AddLazy("obj", [ir_text, target] { return EmitObjectFile(ir_text, target); });
    cannot_run = "it was cross-compiled for " + target.cpu.triple + " (" + target.cpu.name +
                 "): it runs on a machine of that architecture (measure it there with RayRunner; "
                 "export_object() writes its object file)";
  } else if (target.cpu.missing.empty()) {
    kernel = JitCompile(std::move(module), std::move(ctx), symbol, target, tm.get());
    CheckNoErrors(*errors, f.name, target);
  } else {
    cannot_run = "it was built with -no-host-check for " + target.cpu.name +
                 " and uses CPU features this host lacks: " + JoinNames(target.cpu.missing) +
                 " (its code can still be read with get_source('asm') or get_source('ll'))";
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return Module(f.name, ArgSpecs(f), std::move(kernel), std::move(sources), seconds, std::move(cannot_run));
}

namespace {

// The llvm kind's builder (task/target_kind.h). A Target made without Parse
// has no resolved CPU yet.
Module BuildForLLVMKind(const LoweredFunc& f, const Target& target, const DeviceLimits&) {
  return BuildLLVM(f, target.cpu.name.empty() ? Target::Parse(target.str()) : target);
}

const bool kBuilderRegistered = [] {
  SetTargetKindBuilder("llvm", &BuildForLLVMKind);
  return true;
}();

}  // namespace

}  // namespace autosched
