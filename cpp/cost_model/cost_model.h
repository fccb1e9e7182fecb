// The cost model: which of thousands of candidate states are worth measuring.
//
//   model.Update(measured);                 // (task, state, costs, ok) per measured program
//   std::vector<double> s = model.Predict(task, states);   // higher = faster
//   model.Save("model.json");  other.Load("model.json");
//
// Implementations: RandomModel (random_model.h, uniform scores, the baseline)
// and XGBModel (xgboost_model.h, gradient-boosted trees over the program
// features of features.h). Measured programs come from any record loader as
// MeasuredProgram values, so the model does not depend on the record format.
// A model is not thread-safe: one caller at a time (it runs its own threads).
#pragma once

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "lower/stmt.h"
#include "schedule/state.h"
#include "task/search_task.h"

namespace autosched {

// One measured program. costs: seconds per run (one per repeat); ok: the
// measurement succeeded (a failed build, run or verification is not ok, and
// its costs are ignored).
struct MeasuredProgram {
  SearchTask task;
  State state;
  std::vector<double> costs;
  bool ok = true;
};

// The score of a state that cannot be run (it fails to lower): below every
// other score.
constexpr double kInvalidScore = -std::numeric_limits<double>::infinity();

class CostModel {
 public:
  virtual ~CostModel() = default;
  // Adds measured programs to the model's data and retrains on all of it.
  virtual void Update(const std::vector<MeasuredProgram>& programs) = 0;
  // One score per state, higher = faster; scores compare states of one task.
  virtual std::vector<double> Predict(const SearchTask& task, const std::vector<State>& states) = 0;
  // The same where lowered[i], when given and not null, is what states[i]
  // lowers to: the search lowers every candidate once, to check it, and a
  // model that reads program features takes them from there rather than
  // lowering the state again. Models that do not read the program ignore it.
  virtual std::vector<double> PredictLowered(const SearchTask& task, const std::vector<State>& states,
                                             const std::vector<LoweredPtr>& lowered) {
    (void)lowered;
    return Predict(task, states);
  }
  // Writes the model to a JSON file; Load reads one back, throwing Error
  // naming the file and the problem when it is not a model of this kind.
  virtual void Save(const std::string& path) const = 0;
  virtual void Load(const std::string& path) = 0;
  // Measured programs given to Update so far (since construction or Load).
  virtual size_t num_samples() const = 0;
};

}  // namespace autosched
