// Writing to a file descriptor: the whole buffer, across short writes and
// interrupted calls.
#pragma once

#include <string>

namespace autosched {

// Writes all of `bytes` to `fd` with write(2), retrying short writes and
// EINTR; false when a write fails (errno says why).
bool WriteAllToFd(int fd, const std::string& bytes);

}  // namespace autosched
