#include "cost_model/training_data.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace autosched {

void TrainingSet::Add(const std::string& task_key, ProgramFeatures features, double cost, bool ok) {
  auto it = task_ids_.find(task_key);
  if (it == task_ids_.end()) {
    it = task_ids_.emplace(task_key, static_cast<int>(task_keys_.size())).first;
    task_keys_.push_back(task_key);
  }
  ok = ok && std::isfinite(cost) && cost > 0;
  programs_.push_back({it->second, std::move(features), cost, ok});
}

std::vector<size_t> TrainingSet::TrainablePrograms() const {
  std::vector<size_t> out;
  for (size_t i = 0; i < programs_.size(); ++i) {
    if (programs_[i].features.rows > 0) out.push_back(i);
  }
  return out;
}

PackedRows TrainingSet::Pack(const std::vector<size_t>& programs, double label_octaves) const {
  std::vector<double> best(task_keys_.size(), std::numeric_limits<double>::infinity());
  for (const Program& p : programs_) {
    if (p.ok) best[p.task] = std::min(best[p.task], p.cost);
  }
  PackedRows out;
  size_t total_rows = 0;
  for (size_t i : programs) total_rows += programs_[i].features.values.size();
  out.values.reserve(total_rows);
  for (size_t i : programs) {
    const Program& p = programs_[i];
    int id = static_cast<int>(out.labels.size());
    double throughput = p.ok ? best[p.task] / p.cost : 0.0;
    double label = label_octaves > 0 && throughput > 0
                       ? std::max(0.0, 1 + std::log2(throughput) / label_octaves)
                       : throughput;
    out.labels.push_back(static_cast<float>(label));
    out.task.push_back(p.task);
    out.values.insert(out.values.end(), p.features.values.begin(), p.features.values.end());
    out.program.insert(out.program.end(), p.features.rows, id);
  }
  return out;
}

std::vector<double> PackSum(const std::vector<float>& row_predictions, const std::vector<int>& row_program,
                            size_t num_programs) {
  std::vector<double> sums(num_programs, 0.0);
  for (size_t r = 0; r < row_predictions.size() && r < row_program.size(); ++r) {
    sums[row_program[r]] += row_predictions[r];
  }
  return sums;
}

void PackSumGradients(const std::vector<double>& program_predictions, const PackedRows& rows,
                      double weight_power, double min_label_weight, std::vector<float>* grad,
                      std::vector<float>* hess) {
  grad->resize(rows.num_rows());
  hess->resize(rows.num_rows());
  for (size_t r = 0; r < rows.num_rows(); ++r) {
    int p = rows.program[r];
    double label = rows.labels[p];
    double weight = weight_power == 0 ? 1.0 : std::pow(std::max(label, min_label_weight), weight_power);
    (*grad)[r] = static_cast<float>(weight * (program_predictions[p] - label));
    (*hess)[r] = static_cast<float>(weight);
  }
}

RankPairs MakeRankPairs(const PackedRows& rows, double weight_power, double min_label_weight,
                        size_t max_partners, unsigned seed) {
  std::map<int, std::vector<int>> by_task;
  for (size_t p = 0; p < rows.num_programs(); ++p) by_task[rows.task[p]].push_back(static_cast<int>(p));
  std::mt19937 rng(seed);
  RankPairs pairs;
  auto add = [&](int a, int b, double scale) {
    double la = rows.labels[a], lb = rows.labels[b];
    if (la == lb) return;
    if (la < lb) std::swap(a, b), std::swap(la, lb);
    double w = (la - lb) * (weight_power == 0 ? 1.0 : std::pow(std::max(la, min_label_weight), weight_power));
    pairs.better.push_back(a);
    pairs.worse.push_back(b);
    pairs.weight.push_back(static_cast<float>(w * scale));
  };
  for (const auto& [task, ids] : by_task) {
    size_t n = ids.size();
    if (n < 2) continue;
    if (n - 1 <= max_partners) {
      for (size_t i = 0; i < n; ++i) {
        for (size_t j = i + 1; j < n; ++j) add(ids[i], ids[j], 1.0 / static_cast<double>(n - 1));
      }
      continue;
    }
    // Sampled partners: each pair drawn counts half, as a pair of all pairs is seen from both ends.
    std::uniform_int_distribution<size_t> other(0, n - 2);
    for (size_t i = 0; i < n; ++i) {
      for (size_t k = 0; k < max_partners; ++k) {
        size_t j = other(rng);
        add(ids[i], ids[j >= i ? j + 1 : j], 0.5 / static_cast<double>(max_partners));
      }
    }
  }
  return pairs;
}

namespace {
// log(1 + exp(-d)) without overflow.
double LogisticLoss(double d) { return d > 0 ? std::log1p(std::exp(-d)) : -d + std::log1p(std::exp(d)); }
}  // namespace

void RankGradients(const std::vector<double>& program_predictions, const PackedRows& rows,
                   const RankPairs& pairs, std::vector<float>* grad, std::vector<float>* hess) {
  std::vector<double> program_grad(rows.num_programs(), 0.0), program_hess(rows.num_programs(), 0.0);
  for (size_t k = 0; k < pairs.size(); ++k) {
    int a = pairs.better[k], b = pairs.worse[k];
    double d = program_predictions[a] - program_predictions[b];
    double p = 1.0 / (1.0 + std::exp(d));  // d loss / d(-d): the chance the model orders the pair wrong
    double w = pairs.weight[k];
    program_grad[a] -= w * p;
    program_grad[b] += w * p;
    double h = w * std::max(p * (1 - p), 1e-6);
    program_hess[a] += h;
    program_hess[b] += h;
  }
  grad->resize(rows.num_rows());
  hess->resize(rows.num_rows());
  for (size_t r = 0; r < rows.num_rows(); ++r) {
    (*grad)[r] = static_cast<float>(program_grad[rows.program[r]]);
    (*hess)[r] = static_cast<float>(program_hess[rows.program[r]]);
  }
}

double RankLoss(const std::vector<double>& program_predictions, const RankPairs& pairs) {
  double loss = 0, total = 0;
  for (size_t k = 0; k < pairs.size(); ++k) {
    loss += pairs.weight[k] *
            LogisticLoss(program_predictions[pairs.better[k]] - program_predictions[pairs.worse[k]]);
    total += pairs.weight[k];
  }
  return total > 0 ? loss / total : 0;
}

double PackSumRmse(const std::vector<double>& program_predictions, const std::vector<float>& labels) {
  if (labels.empty()) return 0;
  double sum = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    double d = program_predictions[i] - labels[i];
    sum += d * d;
  }
  return std::sqrt(sum / static_cast<double>(labels.size()));
}

double PairwiseAccuracy(const std::vector<double>& scores, const std::vector<double>& labels,
                        const std::vector<int>& groups) {
  // Pairs are counted within each group after sorting it by label.
  std::map<int, std::vector<size_t>> by_group;
  for (size_t i = 0; i < scores.size(); ++i) by_group[groups[i]].push_back(i);
  double right = 0, total = 0;
  for (auto& [group, ids] : by_group) {
    for (size_t a = 0; a < ids.size(); ++a) {
      for (size_t b = a + 1; b < ids.size(); ++b) {
        size_t i = ids[a], j = ids[b];
        if (labels[i] == labels[j]) continue;
        total += 1;
        if (scores[i] == scores[j]) {
          right += 0.5;
        } else if ((scores[i] > scores[j]) == (labels[i] > labels[j])) {
          right += 1;
        }
      }
    }
  }
  return total > 0 ? right / total : 0.5;
}

}  // namespace autosched
