// The measurement worker: what the executable autosched_worker (worker_main.cc)
// does. It serves one supervisor (runner.h) over a socket, one request at a
// time, each answered by one reply (framing: protocol.h):
//
//   {"cmd": "init", "task": <SearchTask JSON>, "verify": {"seed", "whole_output_work", "num_points"}}
//       -> {"ok": true, "whole": bool, "seconds": s}
//        | {"ok": false, "error": "<error name>", "msg": "..."}
//       Parses the task, generates the inputs and computes the reference
//       (verifier.h). Drops every module of a previous task.
//   {"cmd": "build", "id": n, "state": <State::ToJson steps>}
//       -> {"id": n, "error": "none" | "instantiation" | "lower" | "compile", "msg": "...", "seconds": s}
//       Replays the steps, lowers and compiles; keeps the module under id n.
//   {"cmd": "run", "id": n, "fault": "none" | a FaultInjection kind ("wrong_result", "crash", "hang",
//    "zero_time", "near_zero_time", "launch_error"), "number": k, "repeat": r, "min_repeat_ms": ms,
//    "max_repeat": m, "max_device_runs": d, "flush_cache": bool, "cut_short_seconds": c}
//       -> {"id": n, "error": "none" | "runtime" | "wrong_answer", "msg": "...", "costs": [s, ...],
//           "restart": true (only after a failed OpenCL run: replace this worker)}
//       Fills the outputs with NaN, runs module n once, compares with the
//       reference; only a matching candidate is timed (OpenCL: at most
//       max_device_runs runs in all; CPU: when that first run took more than
//       c > 0 seconds, its time is the one cost). Drops module n.
//   {"cmd": "exit"}  -> no reply; the worker exits.
//
// A worker exits when the supervisor's end of the socket closes, and when the
// supervisor's process ends (whichever of its threads started the worker).
#pragma once

namespace autosched {

// Serves requests on `fd` until "exit" or end of file. Returns the exit code.
int RunWorker(int fd);

// main() of autosched_worker: `autosched_worker --fd N --parent PID`.
int WorkerMain(int argc, char** argv);

}  // namespace autosched
