#include "task/target.h"

#include <algorithm>
#include <iterator>
#include <sstream>
#include <vector>

#include "support/error.h"

namespace autosched {

namespace {

const TargetOption* FindOption(const std::string& name, const TargetKind& kind) {
  for (const TargetOption& option : kind.options) {
    if (name == option.name) return &option;
  }
  return nullptr;
}

std::string KnownOptions(const TargetKind& kind) {
  std::string list;
  for (const TargetOption& option : kind.options) list += (list.empty() ? "-" : ", -") + option.name;
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
  const TargetOption* spec = FindOption(name, *target->kind);
  AS_CHECK(spec != nullptr, "unknown target option '-" << name << "' for " << target->kind->name
                                                       << " (known: " << KnownOptions(*target->kind) << ")");
  AS_CHECK(!target->HasOption(name), "target option -" << name << " given twice");
  if (spec->value == TargetOptionValue::kFlag) {
    AS_CHECK(!has_value, "target option -" << name << " is a flag and takes no value, got '" << word << "'");
  } else {
    AS_CHECK(has_value && !value.empty(),
             "target option -" << name << " needs a value (-" << name << "=...)");
  }
  if (spec->value == TargetOptionValue::kPositiveInt) ParsePositiveInt(name, value);
  if (spec->value == TargetOptionValue::kOptLevel) ParseOptLevel(value);
  AS_CHECK(spec->value != TargetOptionValue::kOnOff || value == "on" || value == "off",
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
  if (!target.cpu.name.empty()) return target;
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

// llvm: the CPU -mcpu / -mattr / -mtriple resolve to, and the machine's cores.
void ResolveLLVM(Target* target) {
  if (!target->mtriple.empty() && IsForeignTriple(target->mtriple))
    target->cpu = ResolveForeignCpu(target->mtriple, target->mcpu, target->mattr);
  else
    target->cpu = ResolveCpu(target->mcpu, target->mattr, target->host_check);
  if (target->num_cores == 0) target->num_cores = HostCores();
}

std::string DescribeLLVM(const Target& target) {
  const HardwareParams params = DefaultHardwareParams(target);
  std::ostringstream os;
  const Target t = Resolved(target);
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
  os << ", vector_unit_bytes=" << params.vector_unit_bytes;
  return os.str();
}

HardwareParams LLVMDefaults(const Target& target) {
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

PeakModel LLVMPeakModel(const Target&) { return PeakModel{}; }

}  // namespace

TargetKind LLVMTargetKind() {
  TargetKind kind;
  kind.name = "llvm";
  kind.cpu_guard_transforms = true;
  kind.summary = "CPU code through LLVM";
  kind.options = {
      {"mcpu", TargetOptionValue::kText},           // LLVM CPU name
      {"mtriple", TargetOptionValue::kText},        // another architecture: cross-compiled (IsForeignTriple)
      {"mattr", TargetOptionValue::kText},          // +feature,-feature
      {"opt-level", TargetOptionValue::kOptLevel},  // LLVM's O0..O3
      {"no-host-check", TargetOptionValue::kFlag},  // keep features this host lacks (no runs here)
      {"num-cores", TargetOptionValue::kPositiveInt},
      {"fast-math", TargetOptionValue::kFlag},
      {"fp-contract", TargetOptionValue::kOnOff},  // a * b + c as one FMA (default on)
      {"prefetch", TargetOptionValue::kOnOff},     // software prefetch of streamed slices (default on)
  };
  kind.resolve = &ResolveLLVM;
  kind.default_hardware_params = &LLVMDefaults;
  kind.peak_model = &LLVMPeakModel;
  kind.describe = &DescribeLLVM;
  kind.missing_backend = "this autosched was built without LLVM 19 (the CPU backend)";
  return kind;
}

Target Target::Parse(const std::string& full_text) {
  const std::string text = full_text.substr(0, full_text.find('#'));
  std::istringstream words(text);
  std::string kind_word;
  AS_CHECK(static_cast<bool>(words >> kind_word), "empty target string: expected a target kind (registered: "
                                                      << NameList(RegisteredTargetKindNames(), 100)
                                                      << ") and its options, e.g. 'llvm -num-cores=2'");
  Target target;
  const TargetKind* kind = LookupTargetKind(kind_word);
  AS_CHECK(kind != nullptr, "unknown target kind '" << kind_word << "' in '" << text << "': expected one of "
                                                    << NameList(RegisteredTargetKindNames(), 100));
  target.kind = kind;
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
  if (kind->resolve != nullptr) kind->resolve(&target);
  return target;
}

Target Target::Host() { return Parse("llvm"); }

std::string Target::str() const {
  std::string text = kind->name;
  for (const auto& [name, value] : options) text += " -" + name + (value.empty() ? "" : "=" + value);
  return text;
}

std::string Target::Describe() const { return kind->describe != nullptr ? kind->describe(*this) : str(); }

HardwareParams DefaultHardwareParams(const Target& target) {
  AS_CHECK(target.kind->default_hardware_params != nullptr,
           "target kind '" << target.kind->name << "' gives no default hardware parameters");
  return target.kind->default_hardware_params(target);
}

}  // namespace autosched
