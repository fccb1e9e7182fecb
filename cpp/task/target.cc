#include "task/target.h"

#include <algorithm>
#include <sstream>
#include <thread>
#include <vector>

#include "ir/error.h"

namespace autosched {

const char* TargetKindName(TargetKind kind) {
  switch (kind) {
    case TargetKind::LLVM: return "llvm";
    case TargetKind::OpenCL: return "opencl";
  }
  return "?";
}

namespace {

enum class OptionValue : uint8_t { Flag, Text, PositiveInt };

struct OptionSpec {
  const char* name;
  OptionValue value;
  bool llvm, opencl;  // kinds that accept it
};

// Options each kind accepts; anything else is reported, so that a typo such as
// "-numcores=2" is not silently ignored.
constexpr OptionSpec kOptions[] = {
    {"mcpu", OptionValue::Text, true, false},
    {"mtriple", OptionValue::Text, true, false},
    {"mattr", OptionValue::Text, true, false},
    {"opt-level", OptionValue::PositiveInt, true, false},
    {"device", OptionValue::Text, false, true},
    {"platform", OptionValue::Text, false, true},
    {"num-cores", OptionValue::PositiveInt, true, true},
    {"fast-math", OptionValue::Flag, true, true},
};

constexpr const char* kOpenCLDevices[] = {"nvidia", "mali", "pocl"};

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

int ParsePositiveInt(const std::string& option, const std::string& value) {
  size_t used = 0;
  long long n = 0;
  try {
    n = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  AS_CHECK(used == value.size() && !value.empty() && n > 0 && n < (1LL << 31),
           "target option -" << option << " needs a positive integer, got '" << value << "'");
  return static_cast<int>(n);
}

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
  target->options[name] = value;
}

int HostThreads() { return std::max(1u, std::thread::hardware_concurrency()); }

bool HostHasAvx512() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  return __builtin_cpu_supports("avx512f");
#else
  return false;
#endif
}

bool CpuHasAvx512(const std::string& mcpu) {
  if (mcpu.empty() || mcpu == "native") return HostHasAvx512();
  static const char* kAvx512Cpus[] = {"sapphirerapids",
                                      "graniterapids",
                                      "emeraldrapids",
                                      "skylake-avx512",
                                      "cascadelake",
                                      "cooperlake",
                                      "icelake-server",
                                      "icelake-client",
                                      "tigerlake",
                                      "rocketlake",
                                      "znver4",
                                      "znver5",
                                      "knl",
                                      "knm"};
  return std::find(std::begin(kAvx512Cpus), std::end(kAvx512Cpus), mcpu) != std::end(kAvx512Cpus);
}

HardwareParams OpenCLDefaults(const std::string& device) {
  HardwareParams p;
  p.vector_unit_bytes = 16;
  p.cache_line_bytes = 64;
  p.max_local_memory_per_block = 64 * 1024;
  if (device == "nvidia") {
    p.num_cores = 132;
    p.warp_size = 32;
    p.max_threads_per_block = 1024;
    p.max_shared_memory_per_block = 48 * 1024;
    p.max_vthread_extent = 8;
    return p;
  }
  p.num_cores = device == "mali" ? 4 : device == "pocl" ? HostThreads() : 16;
  p.warp_size = 1;
  p.max_threads_per_block = 256;
  p.max_shared_memory_per_block = 32 * 1024;
  p.max_vthread_extent = 4;
  return p;
}

}  // namespace

Target Target::Parse(const std::string& text) {
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
  if (target.HasOption("mcpu")) target.mcpu = target.options["mcpu"];
  if (target.HasOption("device")) {
    target.device = target.options["device"];
    bool known = std::find(std::begin(kOpenCLDevices), std::end(kOpenCLDevices), target.device) !=
                 std::end(kOpenCLDevices);
    AS_CHECK(known, "unknown OpenCL device '" << target.device << "': expected nvidia, mali or pocl "
                                              << "(or no -device for a generic GPU)");
  }
  if (target.HasOption("num-cores"))
    target.num_cores = ParsePositiveInt("num-cores", target.options["num-cores"]);
  return target;
}

std::string Target::str() const {
  std::string text = TargetKindName(kind);
  for (const auto& [name, value] : options) text += " -" + name + (value.empty() ? "" : "=" + value);
  return text;
}

bool HardwareParams::operator==(const HardwareParams& o) const {
#define AUTOSCHED_COMPARE_FIELD(name, default_value, doc) \
  if (name != o.name) return false;
  AUTOSCHED_HARDWARE_PARAMS_FIELDS(AUTOSCHED_COMPARE_FIELD)
#undef AUTOSCHED_COMPARE_FIELD
  return true;
}

HardwareParams DefaultHardwareParams(const Target& target) {
  HardwareParams p;
  if (target.kind == TargetKind::OpenCL) {
    p = OpenCLDefaults(target.device);
  } else {
    p.num_cores = HostThreads();
    p.vector_unit_bytes = CpuHasAvx512(target.mcpu) ? 64 : 32;
    p.cache_line_bytes = 64;
  }
  if (target.num_cores > 0) p.num_cores = target.num_cores;
  return p;
}

}  // namespace autosched
