// One worker process as the supervisor sees it.
//
// The worker is the executable autosched_worker, started with posix_spawn
// (never a fork of the calling process, which may be a Python interpreter with
// threads), in a process group of its own (a Ctrl-C of the terminal reaches the
// supervisor only), with default signal handlers and an empty signal mask. It
// talks over one AF_UNIX stream socket, its fd 3; every other descriptor of the
// supervisor is close-on-exec on our side, so workers never hold each other's
// sockets open.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

namespace autosched {

// Where the worker executable is: $AUTOSCHED_WORKER when set, else
// autosched_worker in the folder of the binary holding this code (the
// extension module _core, where CMake and the wheel put it).
std::string DefaultWorkerPath();

class WorkerProcess {
 public:
  // Throws Error when the executable cannot be started.
  explicit WorkerProcess(const std::string& path);
  ~WorkerProcess();  // kills the worker if it still runs
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  pid_t pid() const { return pid_; }
  int fd() const { return fd_; }

  // False when the worker is gone.
  bool Send(const nlohmann::json& msg);

  enum class Status { Ok, Timeout, Closed };
  // One reply, waiting until `deadline` (steady clock). A deadline already past
  // takes only what has arrived. Closed: the worker died or closed the socket
  // (or wrote a malformed frame, after which it is killed).
  Status Receive(std::chrono::steady_clock::time_point deadline, nlohmann::json* msg);

  // SIGKILL and reap.
  void Kill();
  // After Closed or Kill: how the process ended, e.g. "was killed by signal
  // SIGSEGV (Segmentation fault)" or "exited with status 2".
  std::string ExitDescription();
  // False once the process has ended (checked without waiting).
  bool Alive();

 private:
  void Reap(bool wait);

  pid_t pid_ = -1;
  int fd_ = -1;
  std::string inbox_;
  bool reaped_ = false;
  int wait_status_ = 0;
};

}  // namespace autosched
