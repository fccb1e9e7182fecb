// 64-byte aligned allocation for buffers of generated code and of the
// runtime (one cache line, the width of an AVX-512 vector).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace autosched {

constexpr size_t kBufferAlignment = 64;

// Throws Error when the memory cannot be had. Zero bytes gives a valid pointer.
void* AlignedAlloc(size_t bytes);
void AlignedFree(void* ptr);

struct AlignedDeleter {
  void operator()(void* p) const { AlignedFree(p); }
};
using AlignedBuffer = std::unique_ptr<void, AlignedDeleter>;

}  // namespace autosched

extern "C" {
// For generated code: returns nullptr on failure instead of throwing. Blocks
// of 64 KiB and more are kept after autosched_free for the next allocation of
// the same size (at most 256 MiB in all), so that a kernel called again does
// not page-fault over its intermediate buffers; an allocation that fails
// frees them all and tries again.
void* autosched_alloc(int64_t bytes);
void autosched_free(void* ptr);
}
