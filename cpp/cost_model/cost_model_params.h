// Parameters of the cost models, one typed field each with its default, the
// values it may take and what it does. The structs, their checks, their JSON
// form (saved with a model) and the Python keywords all come from these lists
// (support/fields.h): X(type, name, default, range, doc).
#pragma once

#include <string>

#include "support/fields.h"

namespace autosched {

#define AUTOSCHED_XGB_MODEL_PARAMS_FIELDS(X)                                                                \
  X(int, max_depth, 10, AtLeast(1), "deepest level of a tree")                                              \
  X(double, eta, 0.2, InRange(0, 1, true), "learning rate: the shrinkage of every new tree")                \
  X(double, gamma, 0.001, AtLeast(0), "least loss reduction that splits a leaf")                            \
  X(double, min_child_weight, 0.0, AtLeast(0), "least sum of row weights (hessians) in a leaf")             \
  X(double, reg_lambda, 1.0, AtLeast(0), "L2 regularisation of leaf values")                                \
  X(double, subsample, 1.0, InRange(0, 1, true), "share of rows each tree sees")                            \
  X(double, colsample_bytree, 1.0, InRange(0, 1, true), "share of features each tree sees")                 \
  X(int, max_rounds, 300, AtLeast(1), "most boosting rounds (trees) of one training")                       \
  X(int, early_stopping_rounds, 30, AtLeast(1),                                                             \
    "stop when the metric has not improved for this many rounds")                                           \
  X(double, validation_fraction, 0.0, InRange(0, 1, false, true),                                           \
    "share of programs held out to measure the metric (0: the metric is measured on the training data)")    \
  X(std::string, objective, "regression", AnyValue(),                                                       \
    "what the trees learn: 'regression' (each program's score fits its label: the pack-sum squared error) " \
    "or "                                                                                                   \
    "'rank' (RankNet: the logistic loss of the score difference over pairs of programs of the same task, "  \
    "each pair weighted by its label difference; a score is exp of the pack sum, the program's "            \
    "Bradley-Terry strength, whose ratios within a task are what it learnt)")                               \
  X(double, label_octaves, 8.0, FiniteAtLeast(0),                                                           \
    "regression target: 0: the throughput label (min cost / cost); > 0: max(0, 1 + log2(throughput) / "     \
    "label_octaves), a log scale on which this many halvings of speed reach 0")                             \
  X(double, label_weight_power, 1.0, Finite(),                                                              \
    "a program's gradient is weighted by max(label, min_label_weight) ^ power: 1 favours fast programs, 0 " \
    "weighs all alike, -2 makes the error relative")                                                        \
  X(double, min_label_weight, 0.05, Positive(),                                                             \
    "the label floor in that weight (failed programs have label 0)")                                        \
  X(int, num_warmup_samples, 100, AtLeast(0), "random scores until this many programs have been measured")  \
  X(int, seed, 43, AnyValue(), "seed of the held-out split, row sampling and warm-up scores")               \
  X(int, num_threads, 0, AtLeast(0), "threads extracting features (0: one per hardware thread)")            \
  X(int, xgboost_threads, 1, AtLeast(0),                                                                    \
    "threads XGBoost trains and predicts with (0: its default, all cores); its OpenMP threads spin "        \
    "while they wait, which costs far more than it gains on small data or a busy machine")

struct XGBModelParams {
  AUTOSCHED_OPTIONS_FIELDS(XGBModelParams, AUTOSCHED_XGB_MODEL_PARAMS_FIELDS)
};

}  // namespace autosched
