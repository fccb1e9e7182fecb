#include "runtime/library_module.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "runtime/aligned_alloc.h"
#include "runtime/thread_pool.h"
#include "support/error.h"
#include "support/fd_io.h"

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

std::string DlopenError() {
  const char* why = dlerror();
  return why != nullptr ? why : "dlopen failed";
}

// A private copy dlopen mapped: its handle (null when it failed, `why` says
// why) and the memory file that holds it (-1 for a temporary file).
struct MappedCopy {
  void* handle = nullptr;
  int memory_file = -1;
  std::string why;
};

MappedCopy MapMemoryFile(const std::string& image) {
  MappedCopy out;
  int fd = memfd_create("autosched_kernels", MFD_CLOEXEC);
  if (fd < 0) {
    out.why = std::string("memfd_create: ") + std::strerror(errno);
    return out;
  }
  if (!WriteAllToFd(fd, image)) {
    out.why = std::string("writing the memory file: ") + std::strerror(errno);
    close(fd);
    return out;
  }
  std::string name = "/proc/self/fd/" + std::to_string(fd);
  dlerror();
  out.handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (out.handle == nullptr) {
    out.why = DlopenError();
    close(fd);
    return out;
  }
  out.memory_file = fd;
  return out;
}

MappedCopy MapTempFile(const std::string& image) {
  // dlopen matches the names of loaded libraries before opening a file, so
  // the name is one this process never used: its id and a counter.
  static std::atomic<uint64_t> copies{0};
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::temp_directory_path(ec);
  if (ec) dir = "/tmp";
  std::string name = (dir / ("autosched_kernels_" + std::to_string(getpid()) + "_" +
                             std::to_string(copies++) + "_XXXXXX.so"))
                         .string();
  std::vector<char> path(name.begin(), name.end());
  path.push_back('\0');
  MappedCopy out;
  int fd = mkstemps(path.data(), 3);
  if (fd < 0) {
    out.why = "creating a file in " + dir.string() + ": " + std::strerror(errno);
    return out;
  }
  bool written = WriteAllToFd(fd, image);
  int write_errno = errno;
  close(fd);
  if (written) {
    dlerror();
    out.handle = dlopen(path.data(), RTLD_NOW | RTLD_LOCAL);
    if (out.handle == nullptr) out.why = DlopenError();
  } else {
    out.why = std::string("writing ") + path.data() + ": " + std::strerror(write_errno);
  }
  unlink(path.data());  // the mapping keeps the code; nothing stays on disk
  return out;
}

}  // namespace

std::shared_ptr<KernelLibrary> KernelLibrary::Load(const std::string& image, const std::string& name,
                                                   LibraryCopy copy) {
  MappedCopy mapped;
  std::string why;
  if (copy != LibraryCopy::kTempFile) {
    mapped = MapMemoryFile(image);
    if (mapped.handle == nullptr) why = "as a memory file: " + mapped.why;
  }
  if (mapped.handle == nullptr && copy != LibraryCopy::kMemoryFile) {
    mapped = MapTempFile(image);
    if (mapped.handle == nullptr)
      why += (why.empty() ? "" : "; ") + std::string("as a temporary file: ") + mapped.why;
  }
  AS_CHECK(mapped.handle != nullptr, "cannot load kernel library '" << name << "' " << why);
  std::shared_ptr<KernelLibrary> library(new KernelLibrary(name, mapped.handle, mapped.memory_file));
  void* handle = mapped.handle;
  const auto* version = static_cast<const int32_t*>(dlsym(handle, kKernelLibraryVersionSymbol));
  AS_CHECK(version != nullptr,
           "'" << name << "' is not an autosched kernel library (no " << kKernelLibraryVersionSymbol << ")");
  AS_CHECK(*version == kKernelLibraryVersion,
           "kernel library '" << name << "' has version " << *version << ", this autosched loads version "
                              << kKernelLibraryVersion << ": export it again");
  for (const char* entry : kLibraryRuntimeEntryPoints) {
    std::string slot_name = std::string(kLibraryRuntimePrefix) + entry;
    auto** slot = static_cast<void**>(dlsym(handle, slot_name.c_str()));
    AS_CHECK(slot != nullptr, "kernel library '" << name << "' lacks its runtime slot " << slot_name);
    *slot = RuntimeEntryPoint(entry);
  }
  return library;
}

std::shared_ptr<KernelLibrary> KernelLibrary::Open(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  AS_CHECK(file.good(), "cannot read kernel library '" << path << "': " << std::strerror(errno));
  std::string image((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  return Load(image, path);
}

KernelLibrary::~KernelLibrary() {
  dlclose(handle_);
  // Closed after dlclose: its name stays this library's while it is loaded.
  if (memory_file_ >= 0) close(memory_file_);
}

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
