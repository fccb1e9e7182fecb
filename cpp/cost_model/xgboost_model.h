// XGBModel: gradient-boosted trees (XGBoost) over the program features.
//
// A program's score is the sum of its statements' predictions (one feature
// row per buffer store), trained with the pack-sum objective of
// training_data.h on throughput labels normalised per task (best = 1, failed
// = 0), put on a log scale (params.label_octaves). Each Update adds the programs and retrains from scratch on
// all of them; until params.num_warmup_samples programs have been measured the model gives uniform random
// scores. Early stopping watches the pack-sum RMSE on the training data, or on a held-out share of the
// programs (validation_fraction), and prediction uses the trees up to the best round. With params.objective
// "rank" the trees learn to order each task's programs (pairwise logistic loss, training_data.h) and early
// stopping watches that loss.
//
// A base model (SetBase: a model file trained before, e.g. the pretrained
// model shipped in the package) keeps its trees fixed: it scores alone until
// the warm-up ends, and from then on each training boosts the session's own
// trees on top of it (continued boosting: the gradients start from the base's
// predictions), so a program scores base + own trees. The own trees take the
// base's objective (SetBase sets params().objective): rank scores have no
// scale for a regression to start from.
//
// XGBoost is an optional dependency: without it (AUTOSCHED_HAS_XGBOOST unset)
// the constructor throws Error saying so. This header does not include
// XGBoost; xgboost_model.cc is the only file that does.
#pragma once

#include <chrono>
#include <memory>
#include <random>

#include "cost_model/cost_model.h"
#include "cost_model/cost_model_params.h"
#include "cost_model/features.h"

namespace autosched {

// True when autosched was built with XGBoost.
bool HasXGBoost();

// What the last training did.
struct TrainingReport {
  int rounds = 0;       // boosting rounds run
  int best_round = -1;  // the round whose trees prediction uses (-1: none trained)
  double metric = 0;    // pack-sum RMSE at best_round (held-out when validation_fraction > 0)
  size_t programs = 0;  // programs trained on
  size_t rows = 0;      // their feature rows
  double seconds = 0;   // wall time of the training
  // Boosting stopped at TrainPending's deadline: the trees of `rounds` rounds
  // serve until the next training, which the programs still wait for.
  bool cut_at_deadline = false;
};

class XGBModel : public CostModel {
 public:
  explicit XGBModel(XGBModelParams params = {});
  ~XGBModel() override;
  XGBModel(const XGBModel&) = delete;
  XGBModel& operator=(const XGBModel&) = delete;

  void Update(const std::vector<MeasuredProgram>& programs) override;
  std::vector<double> Predict(const SearchTask& task, const std::vector<State>& states) override;
  std::vector<double> PredictLowered(const SearchTask& task, const std::vector<State>& states,
                                     const std::vector<LoweredPtr>& lowered) override;
  // Scores of programs whose features are extracted already (with the same
  // hardware parameters as the training data); no rows: kInvalidScore.
  std::vector<double> PredictFeatures(const std::vector<ProgramFeatures>& programs);
  void Save(const std::string& path) const override;
  void Load(const std::string& path) override;
  size_t num_samples() const override;

  const XGBModelParams& params() const { return params_; }
  // Whether the model's own trees are trained (false during warm-up).
  bool trained() const;
  // Makes the model in the file at `path` the base (see the top of this
  // file); Error naming the file when it cannot be read or was trained on
  // other features. Keeps the model's own data and trees.
  void SetBase(const std::string& path);
  bool has_base() const;
  const TrainingReport& last_training() const { return report_; }
  // Deferred training: Update only adds the programs, and TrainPending
  // trains when the caller decides to (a tuning session that keeps the
  // search and the cost model to a share of its time). Turning deferral
  // off trains at the next Update.
  void set_defer_training(bool defer) { defer_training_ = defer; }
  bool defer_training() const { return defer_training_; }
  // Programs added since the last training (all of them before the first).
  size_t untrained_programs() const {
    return num_samples() > trained_programs_ ? num_samples() - trained_programs_ : 0;
  }
  // Trains on all programs when some are untrained and the warm-up is over;
  // returns whether it trained. threads: XGBoost's threads for this training
  // (-1: params().xgboost_threads; 0: all cores), for a caller that knows the
  // cores are otherwise idle; predictions keep params().xgboost_threads.
  // deadline (a time budget's end): no training starts after it, and
  // boosting stops there after its first round (last_training().
  // cut_at_deadline; the programs then count as untrained still).
  bool TrainPending(int threads = -1, std::chrono::steady_clock::time_point deadline =
                                          std::chrono::steady_clock::time_point::max());

 private:
  struct Impl;  // the XGBoost booster and the training data
  void Train(int threads, std::chrono::steady_clock::time_point deadline);

  XGBModelParams params_;
  TrainingReport report_;
  bool defer_training_ = false;
  size_t trained_programs_ = 0;  // num_samples() at the last training
  std::mt19937_64 rng_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace autosched
