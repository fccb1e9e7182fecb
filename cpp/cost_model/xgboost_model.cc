// The only file that includes XGBoost (its C API). Without XGBoost the
// class exists but its constructor throws Error saying how to get it.
#include "cost_model/xgboost_model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>

#include "cost_model/model_file.h"
#include "cost_model/training_data.h"
#include "support/error.h"
#include "support/interrupt.h"

#ifdef AUTOSCHED_HAS_XGBOOST
#include <xgboost/c_api.h>
#endif

namespace autosched {

#ifdef AUTOSCHED_HAS_XGBOOST

namespace {

void Check(int status, const char* what) {
  if (status != 0) throw Error(std::string("XGBoost failed to ") + what + ": " + XGBGetLastError());
}

class DMatrix {
 public:
  DMatrix(const std::vector<float>& values, size_t rows, int threads) {
    Check(XGDMatrixCreateFromMat_omp(values.data(), rows, NumFeatures(), std::nanf(""), &handle_, threads),
          "create a feature matrix");
  }
  ~DMatrix() { XGDMatrixFree(handle_); }
  DMatrix(const DMatrix&) = delete;
  DMatrix& operator=(const DMatrix&) = delete;
  DMatrixHandle get() const { return handle_; }

 private:
  DMatrixHandle handle_ = nullptr;
};

// Predictions of the first `rounds` trees (0: all) for every row of m.
std::vector<float> PredictRows(BoosterHandle booster, const DMatrix& m, int rounds, bool training) {
  std::string config = std::string("{\"type\": 0, \"training\": ") + (training ? "true" : "false") +
                       ", \"iteration_begin\": 0, \"iteration_end\": " + std::to_string(rounds) +
                       ", \"strict_shape\": false}";
  const bst_ulong* shape = nullptr;
  bst_ulong dim = 0;
  const float* result = nullptr;
  Check(XGBoosterPredictFromDMatrix(booster, m.get(), config.c_str(), &shape, &dim, &result), "predict");
  bst_ulong n = dim > 0 ? shape[0] : 0;
  return std::vector<float>(result, result + n);
}

constexpr const char* kRankObjective = "rank";
// The rank objective pairs each program with at most this many others of its task (all, in smaller tasks).
constexpr size_t kRankPartners = 64;

// A rank model's score: exp of its pack sum, the program's Bradley-Terry strength (RankNet's loss models
// P(a before b) = e^sa / (e^sa + e^sb)). Pack sums of a rank model have an arbitrary offset per task; the
// search selects parents in proportion to their scores (SelectionWeights), and ratios of exp are free of
// the offset, where raw sums would be positive or negative by chance. Capped so that no score overflows.
double RankStrength(double sum) { return std::exp(std::min(sum, 300.0)); }

void CheckObjective(const std::string& objective, const std::string& where) {
  AS_CHECK(objective == "regression" || objective == kRankObjective,
           where << "objective must be 'regression' or 'rank', got '" << objective << "'");
}

std::string TaskKey(const SearchTask& task) { return task.workload_key + " @ " + task.target.str(); }

double MeanCost(const std::vector<double>& costs) {
  if (costs.empty()) return 0;
  return std::accumulate(costs.begin(), costs.end(), 0.0) / static_cast<double>(costs.size());
}

std::string Num(double x) {
  std::ostringstream s;
  s.precision(17);
  s << x;
  return s.str();
}

}  // namespace

struct XGBModel::Impl {
  TrainingSet data;
  BoosterHandle booster = nullptr;
  BoosterHandle base = nullptr;  // fixed trees the own ones add to (SetBase)
  int base_rounds = 0;           // trees of the base that predict

  ~Impl() {
    Reset();
    if (base) XGBoosterFree(base);
  }
  void Reset() {
    if (booster) XGBoosterFree(booster);
    booster = nullptr;
  }
  // A new booster with the model's parameters, caching the given matrices.
  void Create(const XGBModelParams& p, const std::vector<DMatrixHandle>& cache) {
    Reset();
    Check(XGBoosterCreate(cache.data(), cache.size(), &booster), "create a booster");
    std::vector<std::pair<const char*, std::string>> settings = {
        {"booster", "gbtree"},
        {"tree_method", "hist"},
        {"base_score", "0"},  // a program sums its rows: no per-row offset
        {"verbosity", "0"},
        {"disable_default_eval_metric", "1"},
        {"max_depth", std::to_string(p.max_depth)},
        {"eta", Num(p.eta)},
        {"gamma", Num(p.gamma)},
        {"min_child_weight", Num(p.min_child_weight)},
        {"lambda", Num(p.reg_lambda)},
        {"subsample", Num(p.subsample)},
        {"colsample_bytree", Num(p.colsample_bytree)},
        {"seed", std::to_string(p.seed)},
    };
    if (p.xgboost_threads > 0) settings.emplace_back("nthread", std::to_string(p.xgboost_threads));
    for (const auto& [name, value] : settings) Check(XGBoosterSetParam(booster, name, value.c_str()), name);
  }
};

namespace {

// The booster of a model file's document (nullptr when it holds none); Error
// naming the file when it was trained on other features or its trees are
// damaged (CheckXGBoostTrees). threads: XGBoost's
// threads for predictions (0: its default, all cores).
BoosterHandle LoadBooster(const nlohmann::json& doc, const std::string& path, int threads) {
  AS_CHECK(doc.at("feature_names") == nlohmann::json(FeatureNames()),
           "cost model file '" << path << "' was trained on other features ("
                               << doc.at("feature_names").size() << " features, this autosched has "
                               << NumFeatures() << "); train a new model from the records");
  if (doc.at("booster").is_null()) return nullptr;
  // XGBoost follows the indices of its trees unchecked (a damaged file makes
  // it crash or loop): they are checked first, and the rounds used of them.
  const size_t trees = CheckXGBoostTrees(doc.at("booster"), path, NumFeatures());
  const nlohmann::json& best_round = doc.at("best_round");
  AS_CHECK(best_round.is_number_integer() && best_round.get<long long>() >= 0 &&
               best_round.get<long long>() < static_cast<long long>(trees),
           "cost model file '" << path << "' is damaged (best_round " << best_round.dump() << " of " << trees
                               << " trees): train the model again, or start from another file");
  std::string text = doc.at("booster").dump();
  BoosterHandle booster = nullptr;
  Check(XGBoosterCreate(nullptr, 0, &booster), "create a booster");
  if (XGBoosterLoadModelFromBuffer(booster, text.data(), text.size()) != 0) {
    std::string why = XGBGetLastError();
    XGBoosterFree(booster);
    throw Error("XGBoost failed to load the model of '" + path + "': " + why);
  }
  if (threads > 0) Check(XGBoosterSetParam(booster, "nthread", std::to_string(threads).c_str()), "nthread");
  return booster;
}

nlohmann::json BoosterJson(BoosterHandle booster) {
  bst_ulong len = 0;
  const char* raw = nullptr;
  Check(XGBoosterSaveModelToBuffer(booster, "{\"format\": \"json\"}", &len, &raw), "save the model");
  return nlohmann::json::parse(std::string(raw, len));
}

}  // namespace

bool HasXGBoost() { return true; }

XGBModel::XGBModel(XGBModelParams params)
    : params_(params), rng_(params.seed), impl_(std::make_unique<Impl>()) {
  CheckFields(params_);
  CheckObjective(params_.objective, "XGBModelParams: ");
}

XGBModel::~XGBModel() = default;

size_t XGBModel::num_samples() const { return impl_->data.num_programs(); }

bool XGBModel::trained() const { return impl_->booster != nullptr && report_.best_round >= 0; }

bool XGBModel::has_base() const { return impl_->base != nullptr; }

void XGBModel::SetBase(const std::string& path) {
  nlohmann::json doc = ReadModelFile(path, "xgb");
  try {
    BoosterHandle base = LoadBooster(doc, path, params_.xgboost_threads);
    AS_CHECK(base, "cost model file '" << path << "' holds no trained model");
    // The own trees add to the base's scores, so they learn what the base learnt: a base trained to rank
    // (scores of no scale) under regression trees would first have to be unlearnt.
    std::string objective = "regression";
    if (doc.contains("params") && doc.at("params").contains("objective")) {
      objective = doc.at("params").at("objective").get<std::string>();
    }
    CheckObjective(objective, "cost model file '" + path + "': ");
    if (impl_->base) XGBoosterFree(impl_->base);
    impl_->base = base;
    impl_->base_rounds = doc.at("best_round").get<int>() + 1;
    params_.objective = objective;
  } catch (const nlohmann::json::exception& e) {
    throw Error("cost model file '" + path + "': " + e.what());
  }
}

void XGBModel::Update(const std::vector<MeasuredProgram>& programs) {
  std::vector<ProgramFeatures> features(programs.size());
  ParallelFor(programs.size(), params_.num_threads, [&](size_t i) {
    features[i] = ExtractFeatures(programs[i].state, programs[i].task.hardware_params);
  });
  for (size_t i = 0; i < programs.size(); ++i) {
    const MeasuredProgram& p = programs[i];
    impl_->data.Add(TaskKey(p.task), std::move(features[i]), MeanCost(p.costs), p.ok && !p.costs.empty());
  }
  if (!defer_training_) TrainPending();
}

bool XGBModel::TrainPending(int threads, std::chrono::steady_clock::time_point deadline) {
  AS_CHECK(threads >= -1,
           "XGBModel.train_pending: threads must be -1, 0 (all cores) or more, got " << threads);
  if (untrained_programs() == 0 ||
      impl_->data.num_programs() < static_cast<size_t>(params_.num_warmup_samples) ||
      std::chrono::steady_clock::now() >= deadline)
    return false;
  Train(threads, deadline);
  if (!report_.cut_at_deadline) trained_programs_ = impl_->data.num_programs();
  return true;
}

namespace {

// Boosts rounds until the metric (on `valid` when it has rows, else on
// `train`) stops improving for early_stopping_rounds, or max_rounds.
// offset: per program of train / valid, the base model's prediction the
// trees add to (empty: none).
// A round that would start after `deadline` is not run (the first always is).
TrainingReport Boost(BoosterHandle booster, const XGBModelParams& params, const DMatrix& dtrain,
                     const DMatrix* dvalid, const PackedRows& train, const PackedRows& valid,
                     const std::vector<double>& train_offset, const std::vector<double>& valid_offset,
                     std::chrono::steady_clock::time_point deadline) {
  auto add = [](std::vector<double> sums, const std::vector<double>& offset) {
    for (size_t i = 0; i < offset.size(); ++i) sums[i] += offset[i];
    return sums;
  };
  TrainingReport report;
  report.programs = train.num_programs();
  report.rows = train.num_rows();
  const bool rank = params.objective == kRankObjective;
  RankPairs train_pairs, valid_pairs;
  if (rank) {
    train_pairs = MakeRankPairs(train, params.label_weight_power, params.min_label_weight, kRankPartners,
                                static_cast<unsigned>(params.seed));
    valid_pairs = MakeRankPairs(valid, params.label_weight_power, params.min_label_weight, kRankPartners,
                                static_cast<unsigned>(params.seed) + 1);
  }
  // The metric early stopping watches: the pack-sum RMSE, or the pairs' logistic loss.
  auto metric_of = [&](const std::vector<double>& sums, const PackedRows& rows, const RankPairs& pairs) {
    return rank ? RankLoss(sums, pairs) : PackSumRmse(sums, rows.labels);
  };
  double best = std::numeric_limits<double>::infinity();
  std::vector<float> grad, hess;
  int round = 0;
  for (;; ++round) {
    PollInterrupt();
    // Predictions of the first `round` trees give both the metric of the
    // previous round and the gradients of the next.
    std::vector<double> sums = add(
        PackSum(PredictRows(booster, dtrain, 0, true), train.program, train.num_programs()), train_offset);
    if (round > 0) {
      double metric = dvalid ? metric_of(add(PackSum(PredictRows(booster, *dvalid, 0, false), valid.program,
                                                     valid.num_programs()),
                                             valid_offset),
                                         valid, valid_pairs)
                             : metric_of(sums, train, train_pairs);
      if (metric < best) {
        best = metric;
        report.best_round = round - 1;
      } else if (round - 1 - report.best_round >= params.early_stopping_rounds) {
        break;
      }
    }
    if (round == params.max_rounds) break;
    if (round > 0 && std::chrono::steady_clock::now() >= deadline) {
      report.cut_at_deadline = true;
      break;
    }
    if (rank) {
      RankGradients(sums, train, train_pairs, &grad, &hess);
    } else {
      PackSumGradients(sums, train, params.label_weight_power, params.min_label_weight, &grad, &hess);
    }
    Check(XGBoosterBoostOneIter(booster, dtrain.get(), grad.data(), hess.data(), grad.size()),
          "train a round");
  }
  report.rounds = round;
  report.metric = best;
  return report;
}

}  // namespace

void XGBModel::Train(int threads, std::chrono::steady_clock::time_point deadline) {
  auto start = std::chrono::steady_clock::now();
  XGBModelParams train_params = params_;
  if (threads >= 0) train_params.xgboost_threads = threads;
  std::vector<size_t> ids = impl_->data.TrainablePrograms();
  if (ids.empty()) return;
  std::vector<size_t> valid_ids;
  if (params_.validation_fraction > 0) {
    std::mt19937_64 split_rng(params_.seed);
    std::shuffle(ids.begin(), ids.end(), split_rng);
    auto num_valid = static_cast<size_t>(params_.validation_fraction * static_cast<double>(ids.size()));
    if (num_valid > 0 && num_valid < ids.size()) {
      valid_ids.assign(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(num_valid));
      ids.erase(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(num_valid));
    }
  }
  PackedRows train = impl_->data.Pack(ids, params_.label_octaves);
  PackedRows valid = impl_->data.Pack(valid_ids, params_.label_octaves);
  DMatrix dtrain(train.values, train.num_rows(), train_params.xgboost_threads);
  std::unique_ptr<DMatrix> dvalid;
  std::vector<DMatrixHandle> cache{dtrain.get()};
  if (valid.num_rows() > 0) {
    dvalid = std::make_unique<DMatrix>(valid.values, valid.num_rows(), train_params.xgboost_threads);
    cache.push_back(dvalid->get());
  }
  // A training that does not finish (an error, an interrupt) leaves the
  // model untrained, never with a half-built booster; the next Update trains
  // again on all the data.
  // With a base model the trees start from its predictions.
  std::vector<double> train_offset, valid_offset;
  if (impl_->base) {
    train_offset = PackSum(PredictRows(impl_->base, dtrain, impl_->base_rounds, false), train.program,
                           train.num_programs());
    if (dvalid) {
      valid_offset = PackSum(PredictRows(impl_->base, *dvalid, impl_->base_rounds, false), valid.program,
                             valid.num_programs());
    }
  }
  try {
    impl_->Create(train_params, cache);
    report_ = Boost(impl_->booster, params_, dtrain, dvalid.get(), train, valid, train_offset, valid_offset,
                    deadline);
    if (train_params.xgboost_threads != params_.xgboost_threads) {
      Check(XGBoosterSetParam(impl_->booster, "nthread", std::to_string(params_.xgboost_threads).c_str()),
            "nthread");
    }
  } catch (...) {
    impl_->Reset();
    report_ = TrainingReport();
    throw;
  }
  report_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::vector<double> XGBModel::Predict(const SearchTask& task, const std::vector<State>& states) {
  return PredictLowered(task, states, {});
}

std::vector<double> XGBModel::PredictLowered(const SearchTask& task, const std::vector<State>& states,
                                             const std::vector<LoweredPtr>& lowered) {
  if (!trained() && !has_base()) {  // warm-up
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    std::vector<double> out(states.size());
    for (double& s : out) s = uniform(rng_);
    return out;
  }
  return PredictFeatures(ExtractFeaturesParallel(states, task.hardware_params, params_.num_threads, lowered));
}

std::vector<double> XGBModel::PredictFeatures(const std::vector<ProgramFeatures>& programs) {
  AS_CHECK(trained() || has_base(), "XGBModel.predict_features: the model has not been trained yet");
  std::vector<float> values;
  std::vector<int> row_program;
  for (size_t i = 0; i < programs.size(); ++i) {
    AS_CHECK(programs[i].values.size() == static_cast<size_t>(programs[i].rows) * NumFeatures(),
             "XGBModel: program " << i << " has " << programs[i].values.size() << " feature values for "
                                  << programs[i].rows << " rows of " << NumFeatures());
    values.insert(values.end(), programs[i].values.begin(), programs[i].values.end());
    row_program.insert(row_program.end(), programs[i].rows, static_cast<int>(i));
  }
  std::vector<double> scores(programs.size(), kInvalidScore);
  if (row_program.empty()) return scores;
  DMatrix m(values, row_program.size(), params_.xgboost_threads);
  std::vector<double> sums(programs.size(), 0.0);
  for (auto [booster, rounds] : {std::pair{impl_->base, impl_->base_rounds},
                                 std::pair{trained() ? impl_->booster : nullptr, report_.best_round + 1}}) {
    if (!booster) continue;
    std::vector<double> part = PackSum(PredictRows(booster, m, rounds, false), row_program, programs.size());
    for (size_t i = 0; i < programs.size(); ++i) sums[i] += part[i];
  }
  const bool rank = params_.objective == kRankObjective;
  for (size_t i = 0; i < programs.size(); ++i) {
    if (programs[i].rows > 0) scores[i] = rank ? RankStrength(sums[i]) : sums[i];
  }
  return scores;
}

void XGBModel::Save(const std::string& path) const {
  nlohmann::json doc = {{"params", FieldsToJson(params_)},
                        {"feature_names", FeatureNames()},
                        {"best_round", report_.best_round},
                        {"booster", nullptr}};
  if (trained()) doc["booster"] = BoosterJson(impl_->booster);
  if (impl_->base) {
    doc["base"] = {{"booster", BoosterJson(impl_->base)}, {"best_round", impl_->base_rounds - 1}};
  }
  WriteModelFile(path, "xgb", doc);
}

void XGBModel::Load(const std::string& path) {
  nlohmann::json doc = ReadModelFile(path, "xgb");
  try {
    XGBModelParams params = FieldsFromJson<XGBModelParams>(doc.at("params"));
    CheckObjective(params.objective, "cost model file '" + path + "': ");
    int best_round = doc.at("best_round").get<int>();
    auto impl = std::make_unique<Impl>();
    impl->booster = LoadBooster(doc, path, params.xgboost_threads);
    if (doc.contains("base") && !doc.at("base").is_null()) {
      nlohmann::json base = doc.at("base");
      base["feature_names"] = doc.at("feature_names");
      impl->base = LoadBooster(base, path, params.xgboost_threads);
      impl->base_rounds = base.at("best_round").get<int>() + 1;
    }
    params_ = params;
    impl_ = std::move(impl);
    report_ = TrainingReport{};
    report_.best_round = impl_->booster ? best_round : -1;
    trained_programs_ = 0;  // the data is new and empty
    rng_.seed(params_.seed);
  } catch (const nlohmann::json::exception& e) {
    throw Error("cost model file '" + path + "': " + e.what());
  }
}

#else  // no XGBoost

struct XGBModel::Impl {};

namespace {
[[noreturn]] void NoXGBoost() {
  throw Error(
      "XGBModel needs XGBoost, and this autosched was built without it: install libxgboost-dev and rebuild "
      "(RandomModel works without it)");
}
}  // namespace

bool HasXGBoost() { return false; }
XGBModel::XGBModel(XGBModelParams params) : params_(params) { NoXGBoost(); }
XGBModel::~XGBModel() = default;
size_t XGBModel::num_samples() const { return 0; }
bool XGBModel::trained() const { return false; }
bool XGBModel::has_base() const { return false; }
void XGBModel::SetBase(const std::string&) { NoXGBoost(); }
void XGBModel::Update(const std::vector<MeasuredProgram>&) { NoXGBoost(); }
void XGBModel::Train(int, std::chrono::steady_clock::time_point) { NoXGBoost(); }
bool XGBModel::TrainPending(int, std::chrono::steady_clock::time_point) { NoXGBoost(); }
std::vector<double> XGBModel::Predict(const SearchTask&, const std::vector<State>&) { NoXGBoost(); }
std::vector<double> XGBModel::PredictLowered(const SearchTask&, const std::vector<State>&,
                                             const std::vector<LoweredPtr>&) {
  NoXGBoost();
}
std::vector<double> XGBModel::PredictFeatures(const std::vector<ProgramFeatures>&) { NoXGBoost(); }
void XGBModel::Save(const std::string&) const { NoXGBoost(); }
void XGBModel::Load(const std::string&) { NoXGBoost(); }

#endif

}  // namespace autosched
