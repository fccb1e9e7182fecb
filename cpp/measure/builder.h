// The build phase: lowers and compiles every ToBuild candidate of a batch, in
// parallel over the pool's workers (one request per worker at a time). Each
// worker keeps the modules it built for the run phase (runner.h).
//
// Errors are the candidate's: instantiation, lower and compile as the worker
// reports them; a worker that dies while compiling gives "compile" with how it
// died; one that takes longer than BuilderOptions::timeout is killed and gives
// "build_timeout". Candidates the lost worker had built already go back to
// ToBuild and are compiled again by another worker.
//
// A worker that reports a device resource error (its driver ran out of host
// memory or resources) is replaced; the candidate is built again in the fresh
// one once, then the error is its own. No build starts after `deadline`, and
// those in progress then are abandoned (their workers killed, which is no
// candidate's fault): the candidates left stay ToBuild.
#pragma once

#include <vector>

#include "measure/supervisor.h"

namespace autosched {

void BuildBatch(WorkerPool* pool, const BuilderOptions& options, std::vector<Candidate>* batch,
                const InterruptCheck& interrupt, SteadyClock::time_point deadline = kNoDeadline);

}  // namespace autosched
