// BuildLLVM: emit, optimise (O3, new pass manager), JIT-compile with ORC.
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

#include <chrono>
#include <mutex>
#include <unordered_set>

#include "codegen/llvm/codegen_llvm.h"
#include "codegen/llvm/ir_emitter.h"
#include "ir/error.h"
#include "lower/stmt_functor.h"
#include "lower/stmt_printer.h"
#include "runtime/aligned_alloc.h"
#include "runtime/thread_pool.h"

namespace autosched {
namespace {

void InitializeLLVMOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

// The CPU name and feature string that a target compiles for, and the
// features of the target that were turned off because this host lacks them.
struct CpuSpec {
  std::string triple, cpu, features;
  std::vector<std::string> dropped;
};

const llvm::Target* LookupTarget(const std::string& triple) {
  std::string error;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(triple, error);
  AS_CHECK(t != nullptr, "LLVM has no target for '" << triple << "': " << error);
  return t;
}

// Kernels run in this process, so every feature that the named CPU (with
// -mattr) has and this host lacks is turned off: AVX-512 for -mcpu=
// sapphirerapids on a Zen 3, but also GFNI, AMX, ... (LLVM uses GFNI for
// vector byte shifts). The host's features are what LLVM detects; what it
// does not report at all (tuning flags, x87) is left as the CPU has it.
void DropFeaturesHostLacks(const llvm::Target& target, CpuSpec* spec) {
  llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
  std::unique_ptr<llvm::MCSubtargetInfo> sti(
      target.createMCSubtargetInfo(spec->triple, spec->cpu, spec->features));
  for (const llvm::SubtargetFeatureKV& f : sti->getAllProcessorFeatures()) {
    auto it = host.find(f.Key);
    if (!sti->getFeatureBits().test(f.Value) || it == host.end() || it->second) continue;
    spec->dropped.push_back(f.Key);
    spec->features += std::string(spec->features.empty() ? "" : ",") + "-" + f.Key;
  }
}

CpuSpec ResolveCpu(const CodegenTarget& target) {
  CpuSpec spec;
  spec.triple = llvm::sys::getProcessTriple();
  const llvm::Target* t = LookupTarget(spec.triple);
  std::vector<std::string> features;
  if (target.mcpu.empty() || target.mcpu == "native" || target.mcpu == "host") {
    spec.cpu = llvm::sys::getHostCPUName().str();
    for (const auto& f : llvm::sys::getHostCPUFeatures()) {
      features.push_back((f.second ? "+" : "-") + f.first().str());
    }
  } else {
    spec.cpu = target.mcpu;
  }
  // Asked of a generic subtarget: one made for an unknown CPU prints a warning.
  std::unique_ptr<llvm::MCSubtargetInfo> generic(t->createMCSubtargetInfo(spec.triple, "generic", ""));
  AS_CHECK(generic && generic->isCPUStringValid(spec.cpu),
           "unknown -mcpu '" << spec.cpu << "' for " << spec.triple);
  if (!target.mattr.empty()) features.push_back(target.mattr);
  for (size_t i = 0; i < features.size(); ++i) spec.features += (i ? "," : "") + features[i];
  DropFeaturesHostLacks(*t, &spec);
  return spec;
}

std::unique_ptr<llvm::TargetMachine> MakeTargetMachine(const CpuSpec& spec, bool fast_math) {
  const llvm::Target* t = LookupTarget(spec.triple);
  llvm::TargetOptions options;
  if (fast_math) {
    options.AllowFPOpFusion = llvm::FPOpFusion::Fast;
    options.UnsafeFPMath = true;
    options.NoInfsFPMath = true;
    options.NoNaNsFPMath = true;
    options.NoSignedZerosFPMath = true;
  }
  return std::unique_ptr<llvm::TargetMachine>(
      t->createTargetMachine(spec.triple, spec.cpu, spec.features, options, llvm::Reloc::PIC_, std::nullopt,
                             llvm::CodeGenOptLevel::Aggressive, /*JIT=*/true));
}

void Optimize(llvm::Module& module, llvm::TargetMachine* tm) {
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
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(module, mam);
}

std::string ModuleText(const llvm::Module& module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os, nullptr);
  return os.str();
}

// Assembly of LLVM IR text, compiled again for the same CPU.
std::string AssemblyOf(const std::string& ir_text, const CpuSpec& spec, bool fast_math) {
  llvm::LLVMContext ctx;
  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> module = llvm::parseIR(llvm::MemoryBufferRef(ir_text, "kernel"), diag, ctx);
  AS_CHECK(module != nullptr, "cannot re-read generated LLVM IR: " << diag.getMessage().str());
  auto tm = MakeTargetMachine(spec, fast_math);
  llvm::SmallString<0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  AS_CHECK(!tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile),
           "LLVM cannot print assembly for " << spec.cpu);
  pm.run(*module);
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

}  // namespace

std::vector<std::string> DroppedFeaturesLLVM(const CodegenTarget& target) {
  InitializeLLVMOnce();
  return ResolveCpu(target).dropped;
}

Module BuildLLVM(const LoweredFunc& f, const CodegenTarget& target) {
  InitializeLLVMOnce();
  auto start = std::chrono::steady_clock::now();
  CpuSpec spec = ResolveCpu(target);
  std::unique_ptr<llvm::TargetMachine> tm = MakeTargetMachine(spec, target.fast_math);

  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto module = std::make_unique<llvm::Module>(f.name, *ctx);
  module->setTargetTriple(spec.triple);
  module->setDataLayout(tm->createDataLayout());
  std::string symbol = KernelSymbol(f.name);
  IREmitter(module.get(), target, spec.cpu, spec.features).EmitKernel(f, symbol);
  std::string verify_errors;
  llvm::raw_string_ostream verify_os(verify_errors);
  AS_CHECK(!llvm::verifyModule(*module, &verify_os),
           "internal error: invalid LLVM IR generated for '" << f.name << "': " << verify_os.str());
  Optimize(*module, tm.get());
  std::string ir_text = ModuleText(*module);

  llvm::orc::JITTargetMachineBuilder jtmb{llvm::Triple(spec.triple)};
  jtmb.setCPU(spec.cpu);
  jtmb.addFeatures(std::vector<std::string>{spec.features});
  jtmb.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
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
  auto address = Unwrap(jit->lookup(symbol), "compile the kernel");
  auto kernel = address.toPtr<PackedKernel>();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::unordered_set<const BufferNode*> stored;
  PostOrderVisitStmt(f.body, [&](const Stmt& s) {
    if (const auto* store = s.as<BufferStoreNode>()) stored.insert(store->buffer.get());
  });
  std::vector<ArgSpec> args;
  for (const Buffer& b : f.args) args.push_back({b->name, b->dtype, b->shape, stored.count(b.get()) > 0});
  ModuleSources sources;
  sources.lowered = ToString(f);
  sources.llvm_ir = ir_text;
  bool fast_math = target.fast_math;
  sources.make_asm = [ir_text, spec, fast_math] { return AssemblyOf(ir_text, spec, fast_math); };
  std::shared_ptr<void> owner(jit.release(), [](void* p) { delete static_cast<llvm::orc::LLJIT*>(p); });
  return Module(f.name, std::move(args), kernel, std::move(owner), std::move(sources), seconds);
}

}  // namespace autosched
