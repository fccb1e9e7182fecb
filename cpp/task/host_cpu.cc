#include "task/host_cpu.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "support/error.h"
#include "task/llvm_targets.h"

#ifdef AUTOSCHED_HAS_LLVM
#include <llvm/ADT/StringMap.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

// What a backend registers for code generation: its triples and CPUs, its code generator, its machine
// code layer and its assembly printer (which writes both assembly and object files). CMake defines
// AUTOSCHED_LLVM_<ARCH> for each supported architecture whose backend this LLVM has; only those backends'
// functions are named, so only they are linked into a build with LLVM's static libraries.
#define AUTOSCHED_INITIALIZE_LLVM_BACKEND(Arch) \
  do {                                          \
    LLVMInitialize##Arch##TargetInfo();         \
    LLVMInitialize##Arch##Target();             \
    LLVMInitialize##Arch##TargetMC();           \
    LLVMInitialize##Arch##AsmPrinter();         \
  } while (false)
#endif

namespace autosched {
#ifdef AUTOSCHED_HAS_LLVM
namespace {

// Linux lets a process use AMX's tile data only after it asks (arch_prctl
// ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, Linux 5.16 and later); without
// it the first tile load faults. Asked once; children made by fork keep it.
bool TileDataPermitted() {
  static const bool permitted = [] {
#if defined(__linux__) && defined(__x86_64__) && defined(SYS_arch_prctl)
    constexpr int kArchReqXcompPerm = 0x1023;
    constexpr int kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
    return false;
#endif
  }();
  return permitted;
}

// The host's features as LLVM detects them, less AMX where the OS does not
// let this process use its tiles.
llvm::StringMap<bool> UsableHostFeatures() {
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  auto amx = features.find("amx-tile");
  if (amx != features.end() && amx->second && !TileDataPermitted()) {
    for (auto& f : features) {
      if (f.first().starts_with("amx-")) f.second = false;
    }
  }
  return features;
}

}  // namespace
#endif

bool CpuSpec::Has(const std::string& feature) const {
  return std::binary_search(features.begin(), features.end(), feature);
}

CpuSpec::ByteDotProduct CpuSpec::ByteDotProductForm() const {
  if (Has("avx512vnni") || Has("avxvnni")) return ByteDotProduct::kInstruction;
  if (Has("avx2") || Has("avx512bw")) return ByteDotProduct::kWidening;
  return ByteDotProduct::kOrdinary;
}

namespace {

std::vector<std::string> SplitComma(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

std::string JoinComma(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : ",") + item;
  return text;
}

// Every -mattr item is "+name" or "-name".
void CheckMattrSyntax(const std::string& mattr) {
  for (const std::string& item : SplitComma(mattr)) {
    AS_CHECK(item.size() > 1 && (item[0] == '+' || item[0] == '-'),
             "-mattr item '" << item << "' must be +feature or -feature");
  }
}

#ifdef AUTOSCHED_HAS_LLVM

const llvm::Target& LookupTarget(const std::string& triple) {
  std::string error;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(triple, error);
  AS_CHECK(t != nullptr, "LLVM has no target for '" << triple << "': " << error);
  return *t;
}

std::vector<std::string> EnabledFeatures(const llvm::MCSubtargetInfo& sti) {
  std::vector<std::string> enabled;
  for (const llvm::SubtargetFeatureKV& f : sti.getAllProcessorFeatures()) {
    if (sti.getFeatureBits().test(f.Value)) enabled.push_back(f.Key);
  }
  std::sort(enabled.begin(), enabled.end());
  return enabled;
}

// LLVM warns on stderr and goes on for a feature it does not know: refuse it.
void CheckMattrNames(const llvm::MCSubtargetInfo& generic, const std::string& mattr,
                     const std::string& triple) {
  for (const std::string& item : SplitComma(mattr)) {
    std::string name = item.substr(1);
    bool known = false;
    for (const llvm::SubtargetFeatureKV& f : generic.getAllProcessorFeatures()) known |= name == f.Key;
    AS_CHECK(known, "unknown CPU feature '" << name << "' in -mattr for " << triple);
  }
}

CpuSpec Resolve(const std::string& mcpu, const std::string& mattr, bool host_check) {
  InitializeLLVMNativeTarget();
  CpuSpec spec;
  spec.triple = llvm::sys::getProcessTriple();
  const llvm::Target& target = LookupTarget(spec.triple);
  llvm::StringMap<bool> host = UsableHostFeatures();
  std::vector<std::string> parts;
  spec.is_host = mcpu.empty() || mcpu == "native" || mcpu == "host";
  if (spec.is_host) {
    spec.name = llvm::sys::getHostCPUName().str();
    for (const auto& f : host) parts.push_back((f.second ? "+" : "-") + f.first().str());
    std::sort(parts.begin(), parts.end());
  } else {
    spec.name = mcpu;
  }
  // Asked of a generic subtarget: one made for an unknown CPU prints a warning.
  std::unique_ptr<llvm::MCSubtargetInfo> generic(target.createMCSubtargetInfo(spec.triple, "generic", ""));
  AS_CHECK(generic && generic->isCPUStringValid(spec.name),
           "unknown -mcpu '" << spec.name << "' for " << spec.triple);
  CheckMattrNames(*generic, mattr, spec.triple);
  if (!mattr.empty()) parts.push_back(mattr);
  spec.llvm_features = JoinComma(parts);
  // The features this CPU has that the host lacks. What LLVM's host detection
  // does not report at all (tuning flags, x87) is left as the CPU has it.
  std::unique_ptr<llvm::MCSubtargetInfo> asked(
      target.createMCSubtargetInfo(spec.triple, spec.name, spec.llvm_features));
  std::vector<std::string> lacking;
  for (const llvm::SubtargetFeatureKV& f : asked->getAllProcessorFeatures()) {
    auto it = host.find(f.Key);
    if (asked->getFeatureBits().test(f.Value) && it != host.end() && !it->second) lacking.push_back(f.Key);
  }
  if (host_check) {
    spec.dropped = lacking;
    for (const std::string& f : lacking) parts.push_back("-" + f);
    spec.llvm_features = JoinComma(parts);
  } else {
    spec.missing = lacking;
  }
  std::unique_ptr<llvm::MCSubtargetInfo> final_sti(
      target.createMCSubtargetInfo(spec.triple, spec.name, spec.llvm_features));
  spec.features = EnabledFeatures(*final_sti);
  return spec;
}

#else  // no LLVM: /proc/cpuinfo

const char* CompiledArch() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "unknown";
#endif
}

// The host's flags in LLVM's names (where they differ from the kernel's).
std::vector<std::string> ProcCpuinfoFeatures() {
  static const std::map<std::string, std::string> kRenamed = {
      {"sse4_1", "sse4.1"}, {"sse4_2", "sse4.2"}, {"pni", "sse3"}, {"bmi1", "bmi"}, {"asimd", "neon"}};
  const std::vector<std::string> flags = CpuinfoValues({"flags", "Features"});  // x86, Arm
  std::vector<std::string> features;
  if (flags.empty()) return features;
  std::stringstream words(flags.front());
  for (std::string w; words >> w;) {
    auto it = kRenamed.find(w);
    features.push_back(it == kRenamed.end() ? w : it->second);
  }
  return features;
}

CpuSpec Resolve(const std::string& mcpu, const std::string& mattr, bool host_check) {
  CpuSpec spec;
  spec.triple = std::string(CompiledArch()) + "-unknown-linux-gnu";
  spec.is_host = mcpu.empty() || mcpu == "native" || mcpu == "host";
  spec.name = spec.is_host ? "generic" : mcpu;
  spec.features = ProcCpuinfoFeatures();
  for (const std::string& item : SplitComma(mattr)) {
    std::string name = item.substr(1);
    spec.features.erase(std::remove(spec.features.begin(), spec.features.end(), name), spec.features.end());
    if (item[0] == '+') spec.features.push_back(name);
  }
  std::sort(spec.features.begin(), spec.features.end());
  spec.features.erase(std::unique(spec.features.begin(), spec.features.end()), spec.features.end());
  spec.llvm_features = mattr;
  return spec;
}

#endif

int64_t ParseCacheSize(std::string text) {
  if (text.empty()) return 0;
  int64_t scale = 1;
  char unit = text.back();
  if (unit == 'K' || unit == 'M' || unit == 'G') {
    scale = unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : int64_t{1} << 30;
    text.pop_back();
  }
  try {
    return std::stoll(text) * scale;
  } catch (const std::exception&) {
    return 0;
  }
}

std::string ReadWord(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  in >> word;
  return word;
}

#ifdef AUTOSCHED_HAS_LLVM
// The architectures of kSupportedArchitectures, as LLVM names them.
bool IsSupportedArch(llvm::Triple::ArchType arch) {
  return arch == llvm::Triple::x86_64 || arch == llvm::Triple::aarch64 || arch == llvm::Triple::riscv64;
}
#endif

}  // namespace

const char* const kSupportedArchitectures = "x86_64 (x86-64), aarch64 (AArch64) and riscv64 (RISC-V)";

void InitializeLLVMTargets() {
#ifdef AUTOSCHED_HAS_LLVM
  static std::once_flag once;
  std::call_once(once, [] {
#ifdef AUTOSCHED_LLVM_X86
    AUTOSCHED_INITIALIZE_LLVM_BACKEND(X86);
#endif
#ifdef AUTOSCHED_LLVM_AARCH64
    AUTOSCHED_INITIALIZE_LLVM_BACKEND(AArch64);
#endif
#ifdef AUTOSCHED_LLVM_RISCV
    AUTOSCHED_INITIALIZE_LLVM_BACKEND(RISCV);
#endif
  });
#endif
}

std::vector<std::string> RegisteredLLVMTargets() {
  std::vector<std::string> names;
#ifdef AUTOSCHED_HAS_LLVM
  for (const llvm::Target& target : llvm::TargetRegistry::targets()) names.push_back(target.getName());
  std::sort(names.begin(), names.end());
#endif
  return names;
}

void InitializeLLVMNativeTarget() {
#ifdef AUTOSCHED_HAS_LLVM
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
#endif
}

const CpuSpec& HostCpu() {
  static const CpuSpec host = Resolve("", "", true);
  return host;
}

std::vector<std::string> HostDetectableFeatures() {
#ifdef AUTOSCHED_HAS_LLVM
  std::vector<std::string> names;
  for (const auto& f : UsableHostFeatures()) names.push_back(f.first().str());
  std::sort(names.begin(), names.end());
  return names;
#else
  return ProcCpuinfoFeatures();
#endif
}

CpuSpec ResolveCpu(const std::string& mcpu, const std::string& mattr, bool host_check) {
  CheckMattrSyntax(mattr);
  if ((mcpu.empty() || mcpu == "native" || mcpu == "host") && mattr.empty()) return HostCpu();
  return Resolve(mcpu, mattr, host_check);
}

bool IsForeignTriple(const std::string& text) {
#ifdef AUTOSCHED_HAS_LLVM
  llvm::Triple given(llvm::Triple::normalize(text));
  llvm::Triple host(llvm::sys::getProcessTriple());
  AS_CHECK(given.getArch() != llvm::Triple::UnknownArch,
           "-mtriple=" << text << " names no architecture that LLVM knows");
  if (given.getArch() != host.getArch()) {
    AS_CHECK(IsSupportedArch(given.getArch()),
             "-mtriple=" << text << " names the architecture " << given.getArchName().str()
                         << ", which autosched does not compile for: it compiles for "
                         << kSupportedArchitectures);
    return true;
  }
  AS_CHECK(given.getOS() == host.getOS() || given.getOS() == llvm::Triple::UnknownOS,
           "-mtriple=" << text << " names the operating system " << given.getOSName().str()
                       << ", but kernels of this architecture are compiled to run in this process on "
                       << host.str());
  return false;
#else
  std::string arch = text.substr(0, text.find('-'));
  AS_CHECK(arch == CompiledArch(), "-mtriple=" << text << " names the architecture " << arch
                                               << ", but autosched was built without LLVM, which "
                                               << "cross-compiling for another architecture needs");
  return false;
#endif
}

CpuSpec ResolveForeignCpu(const std::string& text, const std::string& mcpu, const std::string& mattr) {
  CheckMattrSyntax(mattr);
  CpuSpec spec;
#ifdef AUTOSCHED_HAS_LLVM
  InitializeLLVMTargets();
  spec.triple = llvm::Triple::normalize(text);
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(spec.triple, error);
  AS_CHECK(target != nullptr, "-mtriple=" << text
                                          << ": the LLVM autosched was built with has no backend for it ("
                                          << error << "); `llvm-config --targets-built` lists those it has");
  spec.name = mcpu.empty() || mcpu == "native" || mcpu == "host" ? "generic" : mcpu;
  AS_CHECK(mcpu != "native" && mcpu != "host",
           "-mcpu=" << mcpu << " means this host's CPU, which cannot run code for " << text
                    << ": name the CPU of the device (e.g. -mcpu=cortex-a76)");
  std::unique_ptr<llvm::MCSubtargetInfo> generic(target->createMCSubtargetInfo(spec.triple, "generic", ""));
  AS_CHECK(generic && generic->isCPUStringValid(spec.name),
           "unknown -mcpu '" << spec.name << "' for " << spec.triple);
  CheckMattrNames(*generic, mattr, spec.triple);
  spec.llvm_features = mattr;
  llvm::Triple triple(spec.triple);
  if (triple.getArch() == llvm::Triple::riscv64 && triple.isOSLinux() && spec.name == "generic" &&
      mattr.empty()) {
    // RISC-V Linux is rv64gc with the lp64d ABI (what Debian's riscv64 gcc and
    // its libm assume); LLVM's generic riscv64 has no floating point and
    // aborts on some float operations.
    spec.llvm_features = "+m,+a,+f,+d,+c";
  }
  std::unique_ptr<llvm::MCSubtargetInfo> sti(
      target->createMCSubtargetInfo(spec.triple, spec.name, spec.llvm_features));
  spec.features = EnabledFeatures(*sti);
  spec.foreign = true;
#else
  AS_CHECK(false, "-mtriple=" << text << ": cross-compiling needs autosched built with LLVM"
                              << (mcpu.empty() ? "" : " (-mcpu=" + mcpu + ")"));
#endif
  return spec;
}

std::vector<std::string> CpuinfoValues(const std::vector<std::string>& keys, const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> values;
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    for (const std::string& key : keys) {
      if (line.rfind(key, 0) == 0) {
        values.push_back(line.substr(colon + 1));
        break;
      }
    }
  }
  return values;
}

int HostCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// Linux describes cpu0's caches in sysfs (index*/level, type, size); elsewhere
// glibc's sysconf may know them.
const HostCaches& HostCacheSizes() {
  static const HostCaches caches = [] {
    HostCaches c;
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index";
    for (int i = 0; i < 8; ++i) {
      std::string level = ReadWord(dir + std::to_string(i) + "/level");
      std::string type = ReadWord(dir + std::to_string(i) + "/type");
      if (level.empty() || type == "Instruction") continue;
      int64_t size = ParseCacheSize(ReadWord(dir + std::to_string(i) + "/size"));
      int64_t* slot = level == "1"   ? &c.l1_bytes
                      : level == "2" ? &c.l2_bytes
                      : level == "3" ? &c.l3_bytes
                                     : nullptr;
      if (slot != nullptr) *slot = size;
      if (level == "1")
        c.line_bytes = ParseCacheSize(ReadWord(dir + std::to_string(i) + "/coherency_line_size"));
    }
#ifdef _SC_LEVEL1_DCACHE_LINESIZE
    auto conf = [](int name) { return std::max<int64_t>(0, sysconf(name)); };
    if (c.line_bytes == 0) c.line_bytes = conf(_SC_LEVEL1_DCACHE_LINESIZE);
    if (c.l1_bytes == 0) c.l1_bytes = conf(_SC_LEVEL1_DCACHE_SIZE);
    if (c.l2_bytes == 0) c.l2_bytes = conf(_SC_LEVEL2_CACHE_SIZE);
    if (c.l3_bytes == 0) c.l3_bytes = conf(_SC_LEVEL3_CACHE_SIZE);
#endif
    return c;
  }();
  return caches;
}

}  // namespace autosched
