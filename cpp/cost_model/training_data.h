// What a learned cost model trains on, independent of the learner: measured
// programs grouped by task with their feature rows, throughput labels, and
// the pack-sum objective and metrics.
//
// Labels: per task, the throughput min cost / cost, so the task's fastest
// program has 1 and a failed measurement 0; they are recomputed from all
// programs at each training, as a new best changes every label of its task.
// With label_octaves > 0 the regression target is that throughput on a log
// scale, max(0, 1 + log2(throughput) / label_octaves): still 1 for the best
// and 0 for a failure, and a program label_octaves halvings slower than the
// best also reaches 0. Pairs of slow programs then differ as much as pairs of
// fast ones, which ranks the whole population better.
//
// Pack-sum: a program's prediction is the sum of its rows' predictions (one
// row per buffer store). The squared error (sum - label)^2 / 2 of a program
// gives every one of its rows grad = w * (sum - label), hess = w, with w the
// program's weight: max(label, min_label_weight) ^ weight_power.
//
// Rank (XGBModelParams::objective "rank"): the same pack sums, trained to
// order the programs of each task instead of fitting their labels (RankNet's
// pairwise logistic loss), so that tasks whose programs differ in scale or
// noise teach the trees only which program is faster.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "cost_model/features.h"

namespace autosched {

// Rows of several programs in one matrix.
struct PackedRows {
  std::vector<float> values;  // num_rows x NumFeatures()
  std::vector<int> program;   // per row: its program (0-based within this matrix)
  std::vector<float> labels;  // per program
  std::vector<int> task;      // per program: task index (for per-task metrics)
  size_t num_rows() const { return program.size(); }
  size_t num_programs() const { return labels.size(); }
};

class TrainingSet {
 public:
  // Adds one measured program of the task named task_key. cost: mean seconds,
  // ignored unless ok. A program without rows (it failed to lower) counts
  // for its task's best cost but gives no training rows.
  void Add(const std::string& task_key, ProgramFeatures features, double cost, bool ok);
  size_t num_programs() const { return programs_.size(); }
  size_t num_tasks() const { return task_keys_.size(); }
  // Indices of the programs that have rows.
  std::vector<size_t> TrainablePrograms() const;
  // The given programs' rows with their current labels (see label_octaves
  // at the top of this file).
  PackedRows Pack(const std::vector<size_t>& programs, double label_octaves = 0) const;

 private:
  struct Program {
    int task;
    ProgramFeatures features;
    double cost;
    bool ok;
  };
  std::vector<Program> programs_;
  std::map<std::string, int> task_ids_;
  std::vector<std::string> task_keys_;
};

// Per program: the sum of its rows' predictions.
std::vector<double> PackSum(const std::vector<float>& row_predictions, const std::vector<int>& row_program,
                            size_t num_programs);
// Per-row gradient and hessian of the pack-sum squared error.
void PackSumGradients(const std::vector<double>& program_predictions, const PackedRows& rows,
                      double weight_power, double min_label_weight, std::vector<float>* grad,
                      std::vector<float>* hess);
// The rank objective's pairs: programs of the same task with different
// labels, the better one first. A task of n programs gives all its pairs
// while n - 1 <= max_partners, else each program max_partners random
// others (seeded). A pair's weight is its label difference times the
// better label's weight (max(label, min_label_weight) ^ weight_power, as the
// regression weighs a program), over n - 1, so that a program's pairs weigh
// about as much as its regression row whatever the size of its task.
struct RankPairs {
  std::vector<int> better, worse;  // program indices of PackedRows
  std::vector<float> weight;
  size_t size() const { return weight.size(); }
};
RankPairs MakeRankPairs(const PackedRows& rows, double weight_power, double min_label_weight,
                        size_t max_partners, unsigned seed);
// Per-row gradient and hessian of the pairs' logistic loss
// w * log(1 + exp(-(s_better - s_worse))), s a program's pack sum: every row
// of a program gets the program's sums.
void RankGradients(const std::vector<double>& program_predictions, const PackedRows& rows,
                   const RankPairs& pairs, std::vector<float>* grad, std::vector<float>* hess);
// The pairs' weighted mean logistic loss (0 without pairs).
double RankLoss(const std::vector<double>& program_predictions, const RankPairs& pairs);
// Root mean squared error of program predictions against labels.
double PackSumRmse(const std::vector<double>& program_predictions, const std::vector<float>& labels);
// Share of pairs of programs of the same group, with different labels, that
// the scores order like the labels (higher label = higher score); 0.5 on ties
// of scores. 0.5 when there is no such pair.
double PairwiseAccuracy(const std::vector<double>& scores, const std::vector<double>& labels,
                        const std::vector<int>& groups);

}  // namespace autosched
