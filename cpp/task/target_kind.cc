#include "task/target_kind.h"

#include <memory>
#include <mutex>

#include "support/error.h"
#include "task/opencl_devices.h"
#include "task/target.h"

namespace autosched {
namespace {

// Entries are never removed or moved: Targets hold their addresses.
struct Registry {
  std::mutex mutex;
  std::vector<std::unique_ptr<TargetKind>> kinds;

  TargetKind* Find(const std::string& name) {
    for (const auto& kind : kinds) {
      if (kind->name == name) return kind.get();
    }
    return nullptr;
  }

  std::string Names() {
    std::string list;
    for (const auto& kind : kinds) list += (list.empty() ? "" : ", ") + kind->name;
    return list;
  }

  TargetKind& Add(TargetKind kind) {
    const std::string& name = kind.name;
    AS_CHECK(!name.empty() && name.find_first_of(" \t\n#") == std::string::npos,
             "a target kind needs a name of one word without '#', got '" << name << "'");
    AS_CHECK(Find(name) == nullptr,
             "target kind '" << name << "' is registered already (registered: " << Names() << ")");
    kinds.push_back(std::make_unique<TargetKind>(std::move(kind)));
    return *kinds.back();
  }
};

// The kinds of cpp/task are there from the first use on, whatever order the
// static initialisers of the backends that complete them run in.
Registry& Kinds() {
  static Registry* registry = [] {
    auto* r = new Registry;  // never destroyed: static Targets may outlive any destructor order
    r->Add(LLVMTargetKind());
    r->Add(OpenCLTargetKind());
    return r;
  }();
  return *registry;
}

TargetKind& MutableKind(const std::string& name) {
  Registry& registry = Kinds();
  TargetKind* kind = registry.Find(name);
  AS_CHECK(kind != nullptr, "unknown target kind '" << name << "' (registered: " << registry.Names() << ")");
  return *kind;
}

}  // namespace

const TargetKind& RegisterTargetKind(TargetKind kind) {
  Registry& registry = Kinds();
  std::lock_guard<std::mutex> lock(registry.mutex);
  return registry.Add(std::move(kind));
}

const TargetKind* LookupTargetKind(const std::string& name) {
  Registry& registry = Kinds();
  std::lock_guard<std::mutex> lock(registry.mutex);
  return registry.Find(name);
}

const TargetKind& FindTargetKind(const std::string& name) {
  Registry& registry = Kinds();
  std::lock_guard<std::mutex> lock(registry.mutex);
  return MutableKind(name);
}

std::vector<std::string> RegisteredTargetKindNames() {
  Registry& registry = Kinds();
  std::lock_guard<std::mutex> lock(registry.mutex);
  std::vector<std::string> names;
  for (const auto& kind : registry.kinds) names.push_back(kind->name);
  return names;
}

const TargetKind& DefaultTargetKind() {
  static const TargetKind* const llvm = &FindTargetKind("llvm");  // owned by the registry, never freed
  return *llvm;
}

void SetTargetKindBuilder(const std::string& name, decltype(TargetKind::build) build) {
  std::lock_guard<std::mutex> lock(Kinds().mutex);
  MutableKind(name).build = build;
}

void SetTargetKindDeviceQuery(const std::string& name, decltype(TargetKind::query_device) query) {
  std::lock_guard<std::mutex> lock(Kinds().mutex);
  MutableKind(name).query_device = query;
}

bool TargetPrefersExplicitVectors(const Target& target) {
  return target.kind->prefers_explicit_vectors != nullptr && target.kind->prefers_explicit_vectors(target);
}

HardwareParams QueryTargetDevice(const Target& target) {
  AS_CHECK(target.kind->query_device != nullptr,
           "target '" << target.str() << "' has no device of this machine to query ("
                      << (target.kind->runs_in_host_process ? "its code runs in this process"
                                                            : target.kind->missing_backend)
                      << ")");
  HardwareParams p = target.kind->query_device(target);
  if (target.num_cores > 0) p.num_cores = target.num_cores;
  return p;
}

}  // namespace autosched
