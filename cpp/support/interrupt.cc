#include "support/interrupt.h"

#include <chrono>

namespace autosched {
namespace {

using Clock = std::chrono::steady_clock;

thread_local std::function<void()> tls_check;
thread_local Clock::time_point tls_last_poll;

}  // namespace

InterruptScope::InterruptScope(std::function<void()> check) : previous_(std::move(tls_check)) {
  tls_check = std::move(check);
  tls_last_poll = Clock::now();
}

InterruptScope::~InterruptScope() { tls_check = std::move(previous_); }

void PollInterrupt() {
  if (!tls_check) return;
  const Clock::time_point now = Clock::now();
  if (std::chrono::duration<double>(now - tls_last_poll).count() < kInterruptPollSeconds) return;
  tls_last_poll = now;
  tls_check();
}

}  // namespace autosched
