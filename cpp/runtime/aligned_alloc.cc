#include "runtime/aligned_alloc.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "support/error.h"

namespace autosched {

void* AlignedAlloc(size_t bytes) {
  size_t rounded = (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  void* p = std::aligned_alloc(kBufferAlignment, rounded == 0 ? kBufferAlignment : rounded);
  AS_CHECK(p != nullptr, "cannot allocate " << bytes << " bytes");
  return p;
}

void AlignedFree(void* ptr) { std::free(ptr); }

}  // namespace autosched

namespace {

// Generated kernels allocate their intermediate buffers (a fused group's
// stages that are not inlined) on every call. The C library maps a large
// block afresh each time and the kernel then page-faults over all of it: a
// convolution whose 5 MiB intermediate was page-faulted on every call ran
// 5x slower than the same kernel given the buffer. Large blocks are kept
// after their free, by size, for the next call that asks for that size.
constexpr size_t kCachedMinBytes = 64 * 1024;
constexpr size_t kCacheCapBytes = 256 * 1024 * 1024;
// Each block starts with a header of one alignment unit holding its size.
constexpr size_t kHeaderBytes = autosched::kBufferAlignment;

struct BlockCache {
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<void*>> free_blocks;  // rounded size -> block bases
  size_t cached_bytes = 0;
};

BlockCache& Cache() {
  static BlockCache* cache = new BlockCache();  // never destroyed: kernels may run during exit
  return *cache;
}

// Frees every kept block (the memory may be needed for a block of another
// size); whether there was any.
bool ReleaseCachedBlocks() {
  BlockCache& cache = Cache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  const bool any = cache.cached_bytes > 0;
  for (auto& [size, blocks] : cache.free_blocks) {
    for (void* base : blocks) std::free(base);
    blocks.clear();
  }
  cache.cached_bytes = 0;
  return any;
}

}  // namespace

extern "C" void* autosched_alloc(int64_t bytes) {
  if (bytes < 0) return nullptr;
  const size_t align = autosched::kBufferAlignment;
  const size_t rounded = std::max<size_t>(align, (static_cast<size_t>(bytes) + align - 1) / align * align);
  if (rounded >= kCachedMinBytes) {
    BlockCache& cache = Cache();
    std::lock_guard<std::mutex> lock(cache.mutex);
    auto it = cache.free_blocks.find(rounded);
    if (it != cache.free_blocks.end() && !it->second.empty()) {
      void* base = it->second.back();
      it->second.pop_back();
      cache.cached_bytes -= rounded;
      return static_cast<char*>(base) + kHeaderBytes;
    }
  }
  void* base = std::aligned_alloc(align, rounded + kHeaderBytes);
  if (base == nullptr && ReleaseCachedBlocks()) base = std::aligned_alloc(align, rounded + kHeaderBytes);
  if (base == nullptr) return nullptr;
  *static_cast<size_t*>(base) = rounded;
  return static_cast<char*>(base) + kHeaderBytes;
}

extern "C" void autosched_free(void* ptr) {
  if (ptr == nullptr) return;
  void* base = static_cast<char*>(ptr) - kHeaderBytes;
  const size_t rounded = *static_cast<size_t*>(base);
  if (rounded >= kCachedMinBytes) {
    BlockCache& cache = Cache();
    std::lock_guard<std::mutex> lock(cache.mutex);
    if (cache.cached_bytes + rounded <= kCacheCapBytes) {
      cache.free_blocks[rounded].push_back(base);
      cache.cached_bytes += rounded;
      return;
    }
  }
  std::free(base);
}
