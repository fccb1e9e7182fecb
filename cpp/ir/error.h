// Errors raised by the core. Every user-facing failure is an autosched::Error
// carrying a message that names the problem; the Python bindings translate it
// into a Python exception (ValueError or TypeError), so bad input never crashes
// the process.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace autosched {

// A problem with what the user asked for (shape, index, definition, option).
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A problem with the types involved (dtype mismatch, unsupported dtype).
class TypeError : public Error {
 public:
  using Error::Error;
};

}  // namespace autosched

// AS_CHECK(cond, "message " << value): throws autosched::Error when cond fails.
#define AS_CHECK(cond, msg)                             \
  do {                                                  \
    if (!(cond)) {                                      \
      std::ostringstream as_check_stream_;              \
      as_check_stream_ << msg;                          \
      throw ::autosched::Error(as_check_stream_.str()); \
    }                                                   \
  } while (0)

#define AS_TYPE_CHECK(cond, msg)                            \
  do {                                                      \
    if (!(cond)) {                                          \
      std::ostringstream as_check_stream_;                  \
      as_check_stream_ << msg;                              \
      throw ::autosched::TypeError(as_check_stream_.str()); \
    }                                                       \
  } while (0)

// An internal invariant; failing it is a bug in autosched, still reported as an
// exception rather than an abort.
#define AS_ICHECK(cond) AS_CHECK(cond, "internal error: " #cond " at " __FILE__ ":" << __LINE__)
