#include "lower/lower.h"

#include "lower/lower_state.h"
#include "lower/passes/auto_unroll.h"
#include "lower/passes/eliminate_guards.h"
#include "lower/passes/flatten_storage.h"
#include "lower/passes/partition_loops.h"
#include "lower/passes/simplify_stmt.h"
#include "lower/passes/vectorize_loops.h"
#include "lower/stmt_printer.h"

namespace autosched {
namespace {

void Log(const LowerOptions& options, const char* title, const LoweredFunc& f) {
  if (options.log) *options.log << "// " << title << "\n" << f << "\n";
}

// Applies a statement pass to the function body.
template <typename Pass>
LoweredFunc Apply(LoweredFunc f, Pass pass) {
  f.body = pass(f.body);
  return f;
}

}  // namespace

LoweredFunc RunLoweringPasses(LoweredFunc f, const LowerOptions& options) {
  f = Apply(f, SimplifyStmt);
  Log(options, "after simplify", f);
  f = Apply(f, EliminateGuards);
  Log(options, "after guard elimination", f);
  f = Apply(f, PartitionLoops);
  Log(options, "after loop partitioning", f);
  f = Apply(f, AutoUnroll);
  Log(options, "after auto-unroll", f);
  f = Apply(f, FlattenStorage);
  Log(options, "after storage flattening", f);
  f = Apply(f, VectorizeLoops);
  Log(options, "after vectorization", f);
  f = Apply(f, SimplifyStmt);
  Log(options, "after final simplify", f);
  return f;
}

LoweredFunc Lower(const State& state, const LowerOptions& options) {
  LoweredFunc f = LowerStateToStmt(state);
  Log(options, "from the state", f);
  return RunLoweringPasses(std::move(f), options);
}

}  // namespace autosched
