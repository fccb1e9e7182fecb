// RandomModel: uniform random scores in [0, 1), seeded. The baseline a learned
// model must beat, and what a search uses before it has measured anything.
#pragma once

#include <cstdint>
#include <random>

#include "cost_model/cost_model.h"

namespace autosched {

class RandomModel : public CostModel {
 public:
  explicit RandomModel(uint64_t seed = 0) : seed_(seed), rng_(seed) {}
  void Update(const std::vector<MeasuredProgram>& programs) override { num_samples_ += programs.size(); }
  std::vector<double> Predict(const SearchTask& task, const std::vector<State>& states) override;
  void Save(const std::string& path) const override;
  void Load(const std::string& path) override;
  size_t num_samples() const override { return num_samples_; }

 private:
  uint64_t seed_;
  uint64_t draws_ = 0;  // scores drawn so far: a loaded model continues the sequence
  std::mt19937_64 rng_;
  size_t num_samples_ = 0;
};

}  // namespace autosched
