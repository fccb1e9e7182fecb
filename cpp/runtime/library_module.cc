#include "runtime/library_module.h"

#include <dlfcn.h>

#include "runtime/aligned_alloc.h"
#include "runtime/thread_pool.h"
#include "support/error.h"

namespace autosched {
namespace {

void* RuntimeEntryPoint(const std::string& name) {
  if (name == "autosched_parallel_for") return reinterpret_cast<void*>(&autosched_parallel_for);
  if (name == "autosched_alloc") return reinterpret_cast<void*>(&autosched_alloc);
  if (name == "autosched_free") return reinterpret_cast<void*>(&autosched_free);
  AS_ICHECK(false, "no runtime entry point '" << name << "'");
  return nullptr;
}

// A kernel of an opened library: it runs to the end in the calling thread,
// as the JIT's do.
class LibraryKernel final : public Kernel {
 public:
  LibraryKernel(std::shared_ptr<KernelLibrary> library, PackedKernel fn)
      : library_(std::move(library)), fn_(fn) {}
  int32_t Run(void** args) override { return fn_(args); }
  int32_t Synchronize() override { return kKernelOk; }

 private:
  std::shared_ptr<KernelLibrary> library_;
  PackedKernel fn_;
};

}  // namespace

std::shared_ptr<KernelLibrary> KernelLibrary::Open(const std::string& path) {
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    AS_CHECK(false, "cannot load kernel library '" << path << "': " << (why ? why : "dlopen failed"));
  }
  std::shared_ptr<KernelLibrary> library(new KernelLibrary(path, handle));
  const auto* version = static_cast<const int32_t*>(dlsym(handle, kKernelLibraryVersionSymbol));
  AS_CHECK(version != nullptr,
           "'" << path << "' is not an autosched kernel library (no " << kKernelLibraryVersionSymbol << ")");
  AS_CHECK(*version == kKernelLibraryVersion,
           "kernel library '" << path << "' has version " << *version << ", this autosched loads version "
                              << kKernelLibraryVersion << ": export it again");
  for (const char* name : kLibraryRuntimeEntryPoints) {
    std::string slot_name = std::string(kLibraryRuntimePrefix) + name;
    auto** slot = static_cast<void**>(dlsym(handle, slot_name.c_str()));
    AS_CHECK(slot != nullptr, "kernel library '" << path << "' lacks its runtime slot " << slot_name);
    *slot = RuntimeEntryPoint(name);
  }
  return library;
}

KernelLibrary::~KernelLibrary() { dlclose(handle_); }

PackedKernel KernelLibrary::Lookup(const std::string& symbol) const {
  void* fn = dlsym(handle_, symbol.c_str());
  AS_CHECK(fn != nullptr, "kernel library '" << path_ << "' has no kernel '" << symbol << "'");
  return reinterpret_cast<PackedKernel>(fn);
}

Module LoadLibraryModule(const std::shared_ptr<KernelLibrary>& library, const std::string& symbol,
                         std::string name, std::vector<ArgSpec> args, ModuleSources sources) {
  auto kernel = std::make_shared<LibraryKernel>(library, library->Lookup(symbol));
  return Module(std::move(name), std::move(args), std::move(kernel), std::move(sources), 0.0);
}

}  // namespace autosched
