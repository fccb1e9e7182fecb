// Buffer-access analysis of one statement for the cost model (see
// feature_analysis.h for the roadmap).
//
// Every access is summarised by its terms: for each enclosing loop, how far
// the flat index moves per iteration (stride, in elements) and over how many
// iterations; a vector access adds its lanes as the innermost term. The set of
// elements an access touches inside the innermost k loops is the sum of those
// arithmetic progressions; UniqueElements counts it (exactly for tiles and
// sliding windows, an upper bound otherwise) and UniqueLines does the same in
// cache lines.
#pragma once

#include <utility>
#include <vector>

#include "cost_model/feature_analysis.h"

namespace autosched {

// One arithmetic progression of an index: `extent` values `stride` apart.
struct IndexTerm {
  double stride = 0;
  int64_t extent = 1;
};

// Distinct values of the sum of the progressions.
double UniqueElements(std::vector<IndexTerm> terms);
// Distinct cache lines of `elems_per_line` elements the sum touches.
double UniqueLines(std::vector<IndexTerm> terms, double elems_per_line);

using LetBinding = std::pair<const VarNode*, Expr>;

// Integer value of index expressions with the enclosing loop variables set
// (all 0 unless set) and let-bound variables evaluated from their values.
// Unknown variables and unsupported nodes count as 0: the result feeds
// estimates, never code.
class IndexEvaluator {
 public:
  IndexEvaluator(const std::vector<LoopInfo>& loops, const std::vector<LetBinding>& lets)
      : loops_(loops), lets_(lets), values_(loops.size(), 0) {}
  void Set(size_t loop, int64_t value) { values_[loop] = value; }
  int64_t Eval(const Expr& e);

 private:
  int64_t EvalVar(const VarNode* v);
  int64_t EvalBinary(const BinaryNode* n);

  const std::vector<LoopInfo>& loops_;
  const std::vector<LetBinding>& lets_;
  std::vector<int64_t> values_;
  std::vector<std::pair<const VarNode*, int64_t>> expr_lets_;  // Let expressions being evaluated
  int depth_ = 0;                                              // guards against deep let chains
};

// One access of a statement: a load of the value, or the store itself.
struct RawAccess {
  Buffer buffer;
  Expr index;  // flat index; a Ramp for vector accesses
  bool is_write = false;
};

// Fills out->buffers (sorted by bytes, largest first) and out->intensity from
// the accesses of a statement that runs `flops` operations per execution
// (lanes included) inside out->loops. Returns, per enclosing loop, whether it
// moves the stored element's index.
std::vector<bool> AnalyzeAccesses(const std::vector<RawAccess>& accesses, const std::vector<LetBinding>& lets,
                                  double flops, StoreAnalysis* out);

}  // namespace autosched
