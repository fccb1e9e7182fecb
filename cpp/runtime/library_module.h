// Modules loaded from a shared library of exported kernels
// (codegen/export.h writes its object code): dlopen and the runtime, no
// compiler. A KernelLibrary is one opened library; LoadLibraryModule makes
// the Module of one of its kernels, with the argument specs and sources the
// exporter recorded beside it. The library stays open while a module of it
// lives.
//
// Opening checks the library's version and points its runtime slots at this
// process's thread pool and allocator. That the library's code suits this
// CPU is the caller's check (the exporter records the features it uses).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/module.h"

namespace autosched {

constexpr int32_t kKernelLibraryVersion = 1;
constexpr const char* kKernelLibraryVersionSymbol = "autosched_library_version";
// The runtime entry points of generated code, each reached in a library
// through the exported pointer kLibraryRuntimePrefix + name.
constexpr const char* kLibraryRuntimePrefix = "autosched_runtime_slot_";
constexpr const char* kLibraryRuntimeEntryPoints[] = {"autosched_parallel_for", "autosched_alloc",
                                                      "autosched_free"};

// Where a private copy of a library lives while dlopen maps it.
enum class LibraryCopy {
  kAuto,        // a memory file, else a temporary file
  kMemoryFile,  // memfd_create, opened through /proc/self/fd
  kTempFile,    // a file in the temporary directory, unlinked after dlopen
};

class KernelLibrary {
 public:
  // The library whose bytes are `image` (the head of an artifact), named
  // `name` in messages. Throws Error naming it when it cannot be loaded or is
  // not a kernel library of this version.
  static std::shared_ptr<KernelLibrary> Load(const std::string& image, const std::string& name,
                                             LibraryCopy copy = LibraryCopy::kAuto);
  // Load of the bytes of the file at `path`.
  static std::shared_ptr<KernelLibrary> Open(const std::string& path);
  ~KernelLibrary();
  KernelLibrary(const KernelLibrary&) = delete;
  KernelLibrary& operator=(const KernelLibrary&) = delete;

  // The name given to Load (the artifact's path).
  const std::string& path() const { return path_; }
  // The kernel exported as `symbol`; Error when there is none.
  PackedKernel Lookup(const std::string& symbol) const;

 private:
  KernelLibrary(std::string path, void* handle, int memory_file)
      : path_(std::move(path)), handle_(handle), memory_file_(memory_file) {}
  std::string path_;
  void* handle_;
  // The memory file dlopen mapped (-1 for a temporary file), kept open while
  // the library is: its /proc/self/fd name then names no other library.
  int memory_file_;
};

Module LoadLibraryModule(const std::shared_ptr<KernelLibrary>& library, const std::string& symbol,
                         std::string name, std::vector<ArgSpec> args, ModuleSources sources);

}  // namespace autosched
