#include "task/target.h"

#include <algorithm>
#include <iterator>
#include <sstream>
#include <vector>

#include "support/error.h"

namespace autosched {

const char* TargetKindName(TargetKind kind) {
  switch (kind) {
    case TargetKind::LLVM: return "llvm";
    case TargetKind::OpenCL: return "opencl";
  }
  return "?";
}

namespace {

enum class OptionValue : uint8_t { Flag, Text, PositiveInt, OptLevel, OnOff };

struct OptionSpec {
  const char* name;
  OptionValue value;
  bool llvm, opencl;  // kinds that accept it
};

// Options each kind accepts; anything else is reported, so that a typo such as
// "-numcores=2" is not silently ignored.
constexpr OptionSpec kOptions[] = {
    {"mcpu", OptionValue::Text, true, false},     // LLVM CPU name
    {"mtriple", OptionValue::Text, true, false},  // another architecture: cross-compiled (IsForeignTriple)
    {"mattr", OptionValue::Text, true, false},    // +feature,-feature
    {"opt-level", OptionValue::OptLevel, true, false},  // LLVM's O0..O3
    {"no-host-check", OptionValue::Flag, true, false},  // keep features this host lacks (no runs here)
    {"device", OptionValue::Text, false, true},         // index or name (runtime/opencl/opencl_device.h)
    {"platform", OptionValue::Text, false, true},       // OpenCL platform name
    {"num-cores", OptionValue::PositiveInt, true, true},
    {"fast-math", OptionValue::Flag, true, true},
    {"fp-contract", OptionValue::OnOff, true, false},  // a * b + c as one FMA (default on)
    {"prefetch", OptionValue::OnOff, true, false},     // software prefetch of streamed slices (default on)
};

const OptionSpec* FindOption(const std::string& name, TargetKind kind) {
  for (const OptionSpec& spec : kOptions) {
    if (name == spec.name && (kind == TargetKind::LLVM ? spec.llvm : spec.opencl)) return &spec;
  }
  return nullptr;
}

std::string KnownOptions(TargetKind kind) {
  std::string list;
  for (const OptionSpec& spec : kOptions) {
    if (kind == TargetKind::LLVM ? spec.llvm : spec.opencl)
      list += (list.empty() ? "-" : ", -") + std::string(spec.name);
  }
  return list;
}

int ParseInt(const std::string& option, const std::string& value, long long low, long long high,
             const char* expected) {
  size_t used = 0;
  long long n = 0;
  try {
    n = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  AS_CHECK(used == value.size() && !value.empty() && n >= low && n <= high,
           "target option -" << option << " needs " << expected << ", got '" << value << "'");
  return static_cast<int>(n);
}

int ParsePositiveInt(const std::string& option, const std::string& value) {
  return ParseInt(option, value, 1, (1LL << 31) - 1, "a positive integer");
}

int ParseOptLevel(const std::string& value) { return ParseInt("opt-level", value, 0, 3, "0, 1, 2 or 3"); }

void ApplyOption(Target* target, const std::string& word) {
  AS_CHECK(word.size() > 1 && word[0] == '-',
           "malformed target option '" << word << "': expected -name or -name=value");
  size_t eq = word.find('=');
  std::string name = word.substr(1, eq == std::string::npos ? std::string::npos : eq - 1);
  bool has_value = eq != std::string::npos;
  std::string value = has_value ? word.substr(eq + 1) : "";
  const OptionSpec* spec = FindOption(name, target->kind);
  AS_CHECK(spec != nullptr, "unknown target option '-" << name << "' for " << TargetKindName(target->kind)
                                                       << " (known: " << KnownOptions(target->kind) << ")");
  AS_CHECK(!target->HasOption(name), "target option -" << name << " given twice");
  if (spec->value == OptionValue::Flag) {
    AS_CHECK(!has_value, "target option -" << name << " is a flag and takes no value, got '" << word << "'");
  } else {
    AS_CHECK(has_value && !value.empty(),
             "target option -" << name << " needs a value (-" << name << "=...)");
  }
  if (spec->value == OptionValue::PositiveInt) ParsePositiveInt(name, value);
  if (spec->value == OptionValue::OptLevel) ParseOptLevel(value);
  AS_CHECK(spec->value != OptionValue::OnOff || value == "on" || value == "off",
           "target option -" << name << " needs on or off, got '" << value << "'");
  target->options[name] = value;
}

int VectorUnitBytes(const CpuSpec& cpu) {
  if (cpu.Has("avx512f")) return 64;
  if (cpu.Has("avx2") || cpu.Has("avx")) return 32;
  return 16;
}

// SIMD registers the target's code can use: AArch64 has 32 (v0-v31);
// x86-64 has 32 with AVX-512 (zmm0-31), else 16 (xmm/ymm 0-15).
int VectorRegisters(const CpuSpec& cpu) {
  if (cpu.triple.rfind("aarch64", 0) == 0 || cpu.triple.rfind("arm64", 0) == 0) return 32;
  return cpu.Has("avx512f") ? 32 : 16;
}

// Full-width vector FMAs that can issue per cycle. AVX-512 client cores run
// 512-bit FMAs on one fused pipe; a CPU with AMX is a server part whatever
// LLVM names it (hypervisors make it guess client names).
int FmaUnits(const CpuSpec& cpu) {
  if (cpu.triple.rfind("aarch64", 0) == 0 || cpu.triple.rfind("arm64", 0) == 0) return 2;
  if (cpu.Has("avx512f")) {
    static const char* const kClientAvx512[] = {"cannonlake", "icelake-client", "tigerlake", "rocketlake"};
    const bool client =
        std::find(std::begin(kClientAvx512), std::end(kClientAvx512), cpu.name) != std::end(kClientAvx512);
    return client && !cpu.Has("amx-tile") ? 1 : 2;
  }
  return cpu.Has("fma") || cpu.Has("fma4") ? 2 : 1;
}

// A Target that was not made by Parse (a default-constructed one) has no
// resolved CPU: resolve it from its options.
Target Resolved(const Target& target) {
  if (target.kind != TargetKind::LLVM || !target.cpu.name.empty()) return target;
  return Target::Parse(target.str());
}

// "a, b, c" of at most `most` names, then "... (N in all)".
std::string NameList(const std::vector<std::string>& names, size_t most) {
  std::string text;
  for (size_t i = 0; i < names.size() && i < most; ++i) text += (i ? ", " : "") + names[i];
  if (names.size() > most) text += ", ... (" + std::to_string(names.size()) + " in all)";
  return text;
}

// Vector instruction sets worth naming first, widest first.
constexpr const char* kNotableFeatures[] = {"avx512f",  "avx512bw", "avx512vnni", "avx512bf16", "avx512fp16",
                                            "amx-tile", "avx2",     "avx",        "fma",        "f16c",
                                            "sse4.2",   "neon",     "sve",        "sve2"};

// Those of kNotableFeatures that the CPU has.
std::string VectorIsaSummary(const CpuSpec& cpu) {
  std::vector<std::string> present;
  for (const char* f : kNotableFeatures) {
    if (cpu.Has(f)) present.push_back(f);
  }
  return present.empty() ? "no vector extensions" : NameList(present, present.size());
}

// `names` with the notable features first, in kNotableFeatures' order.
std::vector<std::string> NotableFirst(const std::vector<std::string>& names) {
  std::vector<std::string> ordered;
  for (const char* f : kNotableFeatures) {
    if (std::find(names.begin(), names.end(), f) != names.end()) ordered.push_back(f);
  }
  for (const std::string& f : names) {
    if (std::find(ordered.begin(), ordered.end(), f) == ordered.end()) ordered.push_back(f);
  }
  return ordered;
}

HardwareParams OpenCLDefaults(const std::string& device) {
  HardwareParams p;
  p.vector_unit_bytes = 16;
  p.cache_line_bytes = 64;
  p.max_local_memory_per_block = kGpuPrivateBytesPerWorkItem;
  if (device == "nvidia") {
    p.num_cores = 132;
    p.warp_size = 32;
    p.max_threads_per_block = 1024;
    p.max_shared_memory_per_block = 48 * 1024;
    p.max_vthread_extent = 8;
    p.max_registers_per_thread = 255;  // the most a CUDA thread may address since Kepler
    return p;
  }
  p.num_cores = device == "mali" ? 4 : device == "pocl" ? HostCores() : 16;
  p.warp_size = 1;
  p.max_threads_per_block = 256;
  p.max_shared_memory_per_block = 32 * 1024;
  p.max_vthread_extent = 4;
  // Bifrost and Valhall give a work item 64 registers at full occupancy; a
  // CPU device (PoCL) or an unnamed one: unknown.
  p.max_registers_per_thread = device == "mali" ? 64 : 0;
  return p;
}

}  // namespace

Target Target::Parse(const std::string& full_text) {
  const std::string text = full_text.substr(0, full_text.find('#'));
  std::istringstream words(text);
  std::string kind_word;
  AS_CHECK(static_cast<bool>(words >> kind_word), "empty target string: expected 'llvm ...' or 'opencl ...'");
  Target target;
  if (kind_word == "llvm") {
    target.kind = TargetKind::LLVM;
  } else if (kind_word == "opencl") {
    target.kind = TargetKind::OpenCL;
  } else {
    AS_CHECK(false, "unknown target kind '" << kind_word << "' in '" << text << "': expected llvm or opencl");
  }
  for (std::string word; words >> word;) ApplyOption(&target, word);
  auto option = [&](const char* name) { return target.HasOption(name) ? target.options.at(name) : ""; };
  target.mcpu = option("mcpu");
  target.mattr = option("mattr");
  target.mtriple = option("mtriple");
  target.device = option("device");
  target.platform = option("platform");
  target.fast_math = target.HasOption("fast-math");
  target.fp_contract = option("fp-contract") != "off";
  target.prefetch = option("prefetch") != "off";
  target.host_check = !target.HasOption("no-host-check");
  if (target.HasOption("opt-level")) target.opt_level = ParseOptLevel(option("opt-level"));
  if (target.HasOption("num-cores")) target.num_cores = ParsePositiveInt("num-cores", option("num-cores"));
  if (target.kind == TargetKind::LLVM) {
    if (!target.mtriple.empty() && IsForeignTriple(target.mtriple))
      target.cpu = ResolveForeignCpu(target.mtriple, target.mcpu, target.mattr);
    else
      target.cpu = ResolveCpu(target.mcpu, target.mattr, target.host_check);
    if (target.num_cores == 0) target.num_cores = HostCores();
  }
  return target;
}

Target Target::Host() { return Parse("llvm"); }

std::string Target::str() const {
  std::string text = TargetKindName(kind);
  for (const auto& [name, value] : options) text += " -" + name + (value.empty() ? "" : "=" + value);
  return text;
}

std::string Target::Describe() const {
  const HardwareParams params = DefaultHardwareParams(*this);
  std::ostringstream os;
  if (kind == TargetKind::OpenCL) {
    os << "OpenCL " << (device.empty() ? "generic GPU" : "device " + device);
    if (!platform.empty()) os << " on platform " << platform;
    os << ", " << params.num_cores << " compute units";
  } else {
    const Target t = Resolved(*this);
    os << (t.cpu.is_host && t.mattr.empty() ? "host CPU " : "CPU ") << t.cpu.name << " ("
       << VectorIsaSummary(t.cpu) << ")";
    if (!t.cpu.dropped.empty())
      os << " without " << t.cpu.dropped.size() << " of its features this host lacks ("
         << NameList(NotableFirst(t.cpu.dropped), 6) << ")";
    if (!t.cpu.missing.empty())
      os << " with " << t.cpu.missing.size() << " features this host lacks ("
         << NameList(NotableFirst(t.cpu.missing), 6) << "): built code cannot run here";
    if (t.cpu.foreign) os << ", cross-compiled for " << t.cpu.triple << " (not run here)";
    os << ", " << params.num_cores << (params.num_cores == 1 ? " core" : " cores");
  }
  os << ", vector_unit_bytes=" << params.vector_unit_bytes;
  return os.str();
}

namespace {
OpenCLDeviceQuery opencl_device_query = nullptr;
OpenCLDeviceOnCpuQuery opencl_device_on_cpu_query = nullptr;
}  // namespace

void SetOpenCLDeviceQuery(OpenCLDeviceQuery query) { opencl_device_query = query; }
void SetOpenCLDeviceOnCpuQuery(OpenCLDeviceOnCpuQuery query) { opencl_device_on_cpu_query = query; }
OpenCLDeviceQuery InstalledOpenCLDeviceQuery() { return opencl_device_query; }
OpenCLDeviceOnCpuQuery InstalledOpenCLDeviceOnCpuQuery() { return opencl_device_on_cpu_query; }

HardwareParams DefaultHardwareParams(const Target& target) {
  if (target.kind == TargetKind::OpenCL) {
    const std::string& d = target.device;
    HardwareParams p = OpenCLDefaults(d);
    // A device named by index or by other text than the three families is one
    // of this machine's: its own parameters (Error when none matches).
    if (!d.empty() && d != "nvidia" && d != "mali" && d != "pocl") {
      AS_CHECK(opencl_device_query != nullptr,
               "target '" << target.str()
                          << "' names an OpenCL device of this machine, but autosched was built "
                          << "without OpenCL (install ocl-icd-opencl-dev and opencl-headers, then rebuild)");
      p = opencl_device_query(target);
    }
    if (target.num_cores > 0) p.num_cores = target.num_cores;
    return p;
  }
  const Target t = Resolved(target);
  HardwareParams p;
  p.num_cores = t.num_cores;
  p.vector_unit_bytes = VectorUnitBytes(t.cpu);
  p.num_vector_registers = VectorRegisters(t.cpu);
  p.fma_units = FmaUnits(t.cpu);
  p.cache_line_bytes = 64;
  // The OS describes the host's caches, which are those of the target's CPU
  // only when that CPU is the host's.
  if (t.cpu.is_host || t.cpu.name == HostCpu().name) {
    const HostCaches& caches = HostCacheSizes();
    if (caches.line_bytes > 0) p.cache_line_bytes = caches.line_bytes;
    p.l1_cache_bytes = caches.l1_bytes;
    p.l2_cache_bytes = caches.l2_bytes;
    p.l3_cache_bytes = caches.l3_bytes;
  }
  return p;
}

}  // namespace autosched
