#include "measure/worker_process.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "ir/error.h"
#include "measure/protocol.h"

extern char** environ;

namespace autosched {
namespace {

using Clock = std::chrono::steady_clock;

const char* SignalName(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGTRAP: return "SIGTRAP";
    case SIGINT: return "SIGINT";
    default: return "signal";
  }
}

std::string FolderOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace

std::string DefaultWorkerPath() {
  if (const char* env = std::getenv("AUTOSCHED_WORKER"); env != nullptr && *env != '\0') return env;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&DefaultWorkerPath), &info) != 0 && info.dli_fname != nullptr) {
    char resolved[PATH_MAX];
    std::string binary = realpath(info.dli_fname, resolved) != nullptr ? resolved : info.dli_fname;
    return FolderOf(binary) + "/autosched_worker";
  }
  return "autosched_worker";
}

WorkerProcess::WorkerProcess(const std::string& path) {
  AS_CHECK(access(path.c_str(), X_OK) == 0,
           "the measurement worker '" << path << "' cannot be run (" << std::strerror(errno)
                                      << "); it is built next to the extension module _core, or set "
                                      << "AUTOSCHED_WORKER to its path");
  int sv[2];
  AS_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0,
           "cannot create a socket for the measurement worker: " << std::strerror(errno));
  // dup2 onto fd 3 must clear close-on-exec, which it does not when the
  // descriptor already is 3: move the child's end out of the way first.
  int child_end = fcntl(sv[1], F_DUPFD_CLOEXEC, 10);
  close(sv[1]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, child_end, 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  sigdelset(&all, SIGKILL);
  sigdelset(&all, SIGSTOP);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  std::string parent = std::to_string(getpid());
  std::vector<char*> argv = {const_cast<char*>(path.c_str()),
                             const_cast<char*>("--fd"),
                             const_cast<char*>("3"),
                             const_cast<char*>("--parent"),
                             parent.data(),
                             nullptr};
  int rc = posix_spawn(&pid_, path.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(child_end);
  if (rc != 0) {
    close(sv[0]);
    pid_ = -1;
    throw Error("cannot start the measurement worker '" + path + "': " + std::strerror(rc));
  }
  fd_ = sv[0];
}

WorkerProcess::~WorkerProcess() { Kill(); }

bool WorkerProcess::Send(const nlohmann::json& msg) { return fd_ >= 0 && WriteAll(fd_, EncodeMessage(msg)); }

WorkerProcess::Status WorkerProcess::Receive(Clock::time_point deadline, nlohmann::json* msg) {
  if (fd_ < 0) return Status::Closed;
  while (true) {
    try {
      if (DecodeMessage(&inbox_, msg)) return Status::Ok;
    } catch (const Error&) {
      Kill();
      return Status::Closed;
    }
    auto left = std::chrono::duration<double, std::milli>(deadline - Clock::now()).count();
    int ms = left > 0 ? static_cast<int>(std::ceil(std::min(left, 1e9))) : 0;
    size_t before = inbox_.size();
    if (!ReadSome(fd_, &inbox_, ms)) return Status::Closed;
    if (inbox_.size() == before && Clock::now() >= deadline) return Status::Timeout;
  }
}

void WorkerProcess::Reap(bool wait) {
  if (pid_ <= 0 || reaped_) return;
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &status, wait ? 0 : WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid_ || (r < 0 && errno == ECHILD)) {
    reaped_ = true;
    wait_status_ = status;
  }
}

void WorkerProcess::Kill() {
  if (pid_ > 0 && !reaped_) {
    kill(pid_, SIGKILL);
    Reap(true);
  }
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

bool WorkerProcess::Alive() {
  Reap(false);
  return pid_ > 0 && !reaped_;
}

std::string WorkerProcess::ExitDescription() {
  // A worker whose socket closed is exiting; give it a moment before forcing it.
  for (int i = 0; i < 100 && Alive(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  bool was_alive = Alive();
  Kill();
  if (was_alive) return "stopped answering and was killed";
  if (WIFSIGNALED(wait_status_)) {
    int sig = WTERMSIG(wait_status_);
    return std::string("was killed by signal ") + SignalName(sig) + " (" + strsignal(sig) + ")";
  }
  if (WIFEXITED(wait_status_)) return "exited with status " + std::to_string(WEXITSTATUS(wait_status_));
  return "ended";
}

}  // namespace autosched
