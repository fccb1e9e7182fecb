#include "lower/lower.h"

#include "lower/lower_state.h"
#include "lower/passes/auto_unroll.h"
#include "lower/passes/eliminate_guards.h"
#include "lower/passes/flatten_storage.h"
#include "lower/passes/inject_vthreads.h"
#include "lower/passes/partition_loops.h"
#include "lower/passes/simplify_stmt.h"
#include "lower/passes/vectorize_loops.h"
#include "lower/stmt_printer.h"
#include "support/error.h"

namespace autosched {
namespace {

void Log(const LowerOptions& options, const char* title, const LoweredFunc& f) {
  if (options.log) *options.log << "// " << title << "\n" << f << "\n";
}

// Applies a statement pass to the function body; a failure names the pass.
template <typename Pass>
LoweredFunc Apply(LoweredFunc f, Pass pass, const char* pass_name) {
  try {
    f.body = pass(f.body);
  } catch (const Error&) {
    RethrowWithContext(std::string("lowering pass ") + pass_name);
  } catch (const InternalError&) {
    RethrowWithContext(std::string("lowering pass ") + pass_name);
  }
  return f;
}

}  // namespace

LoweredFunc RunLoweringPasses(LoweredFunc f, const LowerOptions& options) {
  f = Apply(f, SimplifyStmt, "simplify_stmt");
  Log(options, "after simplify", f);
  f = Apply(f, EliminateGuards, "eliminate_guards");
  Log(options, "after guard elimination", f);
  f = Apply(f, InjectVirtualThreads, "inject_vthreads");
  Log(options, "after virtual-thread injection", f);
  f = Apply(
      f, [&](const Stmt& s) { return PartitionLoops(s, options.cpu_guard_transforms); }, "partition_loops");
  Log(options, "after loop partitioning", f);
  f = Apply(f, AutoUnroll, "auto_unroll");
  Log(options, "after auto-unroll", f);
  f = Apply(f, FlattenStorage, "flatten_storage");
  Log(options, "after storage flattening", f);
  f = Apply(
      f, [&](const Stmt& s) { return VectorizeLoops(s, options.cpu_guard_transforms); }, "vectorize_loops");
  Log(options, "after vectorization", f);
  f = Apply(f, SimplifyStmt, "simplify_stmt");
  Log(options, "after final simplify", f);
  return f;
}

LoweredFunc Lower(const State& state, const LowerOptions& options) {
  LoweredFunc f;
  try {
    f = LowerStateToStmt(state);
  } catch (const Error&) {
    RethrowWithContext("lowering the state to a loop nest");
  } catch (const InternalError&) {
    RethrowWithContext("lowering the state to a loop nest");
  }
  Log(options, "from the state", f);
  return RunLoweringPasses(std::move(f), options);
}

}  // namespace autosched
