// Parameters of the cost models, one typed field each with its default and
// what it does. The structs, their JSON form (saved with a model) and the
// Python keywords all come from these lists: X(type, name, default, doc).
#pragma once

#include <nlohmann/json.hpp>

namespace autosched {

#define AUTOSCHED_XGB_MODEL_PARAMS_FIELDS(X)                                                                 \
  X(int, max_depth, 10, "deepest level of a tree")                                                           \
  X(double, eta, 0.2, "learning rate: the shrinkage of every new tree")                                      \
  X(double, gamma, 0.001, "least loss reduction that splits a leaf")                                         \
  X(double, min_child_weight, 0.0, "least sum of row weights (hessians) in a leaf")                          \
  X(double, reg_lambda, 1.0, "L2 regularisation of leaf values")                                             \
  X(double, subsample, 1.0, "share of rows each tree sees")                                                  \
  X(double, colsample_bytree, 1.0, "share of features each tree sees")                                       \
  X(int, max_rounds, 300, "most boosting rounds (trees) of one training")                                    \
  X(int, early_stopping_rounds, 30, "stop when the metric has not improved for this many rounds")            \
  X(double, validation_fraction, 0.0,                                                                        \
    "share of programs held out to measure the metric (0: the metric is measured on the training data)")     \
  X(int, weight_by_label, 1, "1: a program's gradient is weighted by its label (fast programs matter more)") \
  X(double, min_label_weight, 0.05, "weight floor of a program when weighting by label (failed ones too)")   \
  X(int, num_warmup_samples, 100, "random scores until this many programs have been measured")               \
  X(int, seed, 43, "seed of the held-out split, row sampling and warm-up scores")                            \
  X(int, num_threads, 0, "threads for features and XGBoost (0: one per hardware thread)")

struct XGBModelParams {
#define AUTOSCHED_DECLARE_FIELD(type, name, default_value, doc) type name = default_value;
  AUTOSCHED_XGB_MODEL_PARAMS_FIELDS(AUTOSCHED_DECLARE_FIELD)
#undef AUTOSCHED_DECLARE_FIELD
};

// Throws Error naming the first field out of range.
void CheckParams(const XGBModelParams& params);
nlohmann::json ParamsToJson(const XGBModelParams& params);
// Missing fields keep their defaults; unknown ones are an Error naming them.
XGBModelParams XGBModelParamsFromJson(const nlohmann::json& doc);

}  // namespace autosched
