// The CPU that code of an llvm target is compiled for, resolved on this host.
//
// HostCpu() is the host as LLVM detects it (sys::getHostCPUName and
// sys::getHostCPUFeatures). ResolveCpu() turns a target's -mcpu and -mattr into
// an LLVM CPU name and feature list. Kernels run in this process, so by default
// every feature that the named CPU (or -mattr) has and this host lacks is
// turned off and listed in CpuSpec::dropped; with the host check off
// (-no-host-check) they stay on and are listed in CpuSpec::missing: such code
// can be read (assembly, LLVM IR) but not run here.
//
// With LLVM (AUTOSCHED_HAS_LLVM) this file and codegen/llvm/ are the places
// that include LLVM headers. Without it the host's features are the flags of
// /proc/cpuinfo and its name is "generic"; a named -mcpu is then recorded but
// its features are taken to be the host's (no CPU backend can build for it).
//
// A -mtriple of another architecture (e.g. aarch64-linux-gnu on an x86-64
// host) resolves with ResolveForeignCpu: the named CPU's own features, nothing
// dropped or checked against this host (CpuSpec::foreign). Such code is
// cross-compiled to an object file and never runs in this process.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace autosched {

struct CpuSpec {
  std::string triple;                 // LLVM triple: this process's, or a foreign -mtriple's
  std::string name;                   // LLVM CPU name, e.g. "znver3", "sapphirerapids"
  bool is_host = false;               // name is the host's CPU (no -mcpu, or -mcpu=native/host)
  std::vector<std::string> features;  // features code uses (LLVM names, sorted)
  std::vector<std::string> dropped;   // of the CPU or -mattr, turned off: this host lacks them
  std::vector<std::string> missing;   // kept although this host lacks them (host check off)
  std::string llvm_features;          // "+f1,-f2,..." as handed to LLVM
  bool foreign = false;               // another architecture: cross-compiled, never run here

  bool Has(const std::string& feature) const;

  // How code for this CPU adds 4 products of uint8 and int8 bytes into an
  // int32 lane: one VNNI instruction (vpdpbusd), two widening multiply-adds
  // on the bytes as 16-bit pairs (vpmaddwd, on AVX2 or AVX-512BW:
  // codegen/llvm/dot_product.h), or ordinary vector code.
  enum class ByteDotProduct : uint8_t { kOrdinary, kWidening, kInstruction };
  ByteDotProduct ByteDotProductForm() const;
};

// The host CPU (computed once per process).
const CpuSpec& HostCpu();

// The features whose presence LLVM's host detection reports, present or not
// (instruction sets; tuning flags are not among them). Without LLVM: the
// flags of /proc/cpuinfo.
std::vector<std::string> HostDetectableFeatures();

// The CPU for -mcpu (empty, "native" or "host": the host's) and -mattr
// ("+f1,-f2"). host_check: turn off what this host lacks (see above). Throws
// Error naming an unknown CPU or feature.
CpuSpec ResolveCpu(const std::string& mcpu, const std::string& mattr, bool host_check);

// Whether `triple` names another architecture than this host's. Throws Error
// when LLVM knows no such architecture, or when it names this architecture
// with another operating system (such kernels could neither run here nor
// be told apart from this host's).
bool IsForeignTriple(const std::string& triple);

// The CPU of a foreign triple: -mcpu (empty: "generic") and -mattr resolved
// by LLVM for that triple (its backend must be built into LLVM). Throws Error
// naming an unknown CPU or feature, or a triple LLVM cannot build for.
CpuSpec ResolveForeignCpu(const std::string& triple, const std::string& mcpu, const std::string& mattr);

// The values (the text after the colon) of the lines of /proc/cpuinfo (or
// `path`) whose key starts with one of `keys`, in file order: e.g. {"flags"}
// gives the feature flags of each core, {"cpu MHz"} each core's clock. Empty
// where the file cannot be read.
std::vector<std::string> CpuinfoValues(const std::vector<std::string>& keys,
                                       const std::string& path = "/proc/cpuinfo");

// Cores this process may run on (its CPU affinity), at least 1.
int HostCores();

// Sizes of the host's data caches in bytes as the OS reports them; 0 where it
// does not say.
struct HostCaches {
  int64_t line_bytes = 0, l1_bytes = 0, l2_bytes = 0, l3_bytes = 0;
};
const HostCaches& HostCacheSizes();

// Registers LLVM's native target, assembly printer and parser (once per
// process); a no-op without LLVM.
void InitializeLLVMNativeTarget();

}  // namespace autosched
