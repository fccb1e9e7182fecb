#include "runtime/aligned_alloc.h"

#include <cstdint>
#include <cstdlib>

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

extern "C" void* autosched_alloc(int64_t bytes) {
  if (bytes < 0) return nullptr;
  size_t rounded = (static_cast<size_t>(bytes) + 63) / 64 * 64;
  return std::aligned_alloc(autosched::kBufferAlignment, rounded == 0 ? 64 : rounded);
}

extern "C" void autosched_free(void* ptr) { std::free(ptr); }
