// Cooperative interruption of long work (sketch generation, sampling, the
// evolutionary search, cost model training and prediction).
//
// The thread that starts the work installs a check with an InterruptScope;
// loops call PollInterrupt() between their items. PollInterrupt runs the check
// of the calling thread at most every kInterruptPollSeconds, and the check
// throws Interrupted to abandon the work. Other threads (the workers of a
// parallel loop) have no check, so a check may do what only its own thread may
// (the bindings' one asks the Python interpreter for pending signals).
//
// Interrupted is deliberately not a std::exception: the many places that turn
// a candidate's failure into a recorded error (catch (const std::exception&))
// let it pass, and the whole call unwinds.
#pragma once

#include <functional>

namespace autosched {

struct Interrupted {};

constexpr double kInterruptPollSeconds = 0.05;

class InterruptScope {
 public:
  // Installs `check` on the calling thread until the scope ends (the check
  // installed before is restored then).
  explicit InterruptScope(std::function<void()> check);
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  std::function<void()> previous_;
};

// Runs the calling thread's check when one is installed and the last poll is
// kInterruptPollSeconds old; what the check throws propagates.
void PollInterrupt();

}  // namespace autosched
