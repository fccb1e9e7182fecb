// autosched_alloc: aligned blocks for generated code; large blocks are reused
// after their free instead of being mapped (and page-faulted) afresh.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "runtime/aligned_alloc.h"

namespace autosched {
namespace {

bool Aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % kBufferAlignment == 0; }

TEST(RuntimeAlloc, BlocksAreAlignedAndWritable) {
  for (int64_t bytes : {0, 1, 63, 64, 65, 4096, 65535, 65536, 1 << 20, (1 << 20) + 7}) {
    void* p = autosched_alloc(bytes);
    ASSERT_NE(p, nullptr) << bytes;
    EXPECT_TRUE(Aligned(p)) << bytes;
    std::memset(p, 0x5a, static_cast<size_t>(bytes));
    autosched_free(p);
  }
  EXPECT_EQ(autosched_alloc(-1), nullptr);
  autosched_free(nullptr);
}

TEST(RuntimeAlloc, ALargeBlockIsReusedForTheSameSize) {
  const int64_t bytes = 3 << 20;
  void* first = autosched_alloc(bytes);
  ASSERT_NE(first, nullptr);
  autosched_free(first);
  void* second = autosched_alloc(bytes);
  EXPECT_EQ(second, first);
  // A block in use is never handed out twice.
  void* third = autosched_alloc(bytes);
  EXPECT_NE(third, second);
  autosched_free(second);
  autosched_free(third);
}

}  // namespace
}  // namespace autosched
