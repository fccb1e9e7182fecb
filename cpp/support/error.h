// Errors raised by the core, in two families that callers must tell apart:
//
//  - Error (and its TypeError): a problem with what the user asked for (a
//    shape, an index, an invalid schedule step, an option). The bindings turn
//    them into ValueError / TypeError. Raised with AS_CHECK / AS_TYPE_CHECK.
//  - InternalError: an invariant of autosched itself failed, i.e. a bug. It
//    carries the C++ location and reaches Python as autosched.InternalError,
//    so that the measurement layer and users do not mistake it for bad input.
//    Raised with AS_ICHECK.
//
// Both carry the context they passed through: State::Apply prefixes the step
// ("step 3 (compute_at): ..."), lowering the pass ("lowering pass X: ...").
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

// A failed invariant of autosched: a bug, not bad input. what() names the
// condition and the C++ location (file:line).
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// The same error, of the same family, with `context + ": "` in front of its
// message (unless the message already starts with it).
[[noreturn]] inline void RethrowWithContext(const std::string& context) {
  auto prefixed = [&](const std::exception& e) {
    const std::string msg = e.what();
    return msg.rfind(context, 0) == 0 ? msg : context + ": " + msg;
  };
  try {
    throw;
  } catch (const TypeError& e) {
    throw TypeError(prefixed(e));
  } catch (const Error& e) {
    throw Error(prefixed(e));
  } catch (const InternalError& e) {
    throw InternalError(prefixed(e));
  }
}

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

// AS_ICHECK(cond) or AS_ICHECK(cond, "detail " << value): an invariant of
// autosched; throws autosched::InternalError naming the condition and location.
#define AS_ICHECK_IMPL(cond, msg)                                                                       \
  do {                                                                                                  \
    if (!(cond)) {                                                                                      \
      std::ostringstream as_check_stream_;                                                              \
      as_check_stream_ << "internal error: check '" #cond "' failed at " << __FILE__ << ":" << __LINE__ \
                       << msg;                                                                          \
      throw ::autosched::InternalError(as_check_stream_.str());                                         \
    }                                                                                                   \
  } while (0)
#define AS_ICHECK_SELECT(_1, _2, NAME, ...) NAME
#define AS_ICHECK_1(cond) AS_ICHECK_IMPL(cond, "")
#define AS_ICHECK_2(cond, msg) AS_ICHECK_IMPL(cond, ": " << msg)
#define AS_ICHECK(...) AS_ICHECK_SELECT(__VA_ARGS__, AS_ICHECK_2, AS_ICHECK_1, )(__VA_ARGS__)
