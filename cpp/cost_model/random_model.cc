#include "cost_model/random_model.h"

#include "cost_model/model_file.h"
#include "ir/error.h"

namespace autosched {

std::vector<double> RandomModel::Predict(const SearchTask& task, const std::vector<State>& states) {
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<double> out(states.size());
  for (double& s : out) s = uniform(rng_);
  draws_ += states.size();
  return out;
}

void RandomModel::Save(const std::string& path) const {
  WriteModelFile(path, "random", {{"seed", seed_}, {"draws", draws_}, {"num_samples", num_samples_}});
}

void RandomModel::Load(const std::string& path) {
  nlohmann::json doc = ReadModelFile(path, "random");
  try {
    seed_ = doc.at("seed").get<uint64_t>();
    draws_ = doc.at("draws").get<uint64_t>();
    num_samples_ = doc.at("num_samples").get<size_t>();
  } catch (const nlohmann::json::exception& e) {
    throw Error("cost model file '" + path + "': " + e.what());
  }
  rng_.seed(seed_);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  for (uint64_t i = 0; i < draws_; ++i) uniform(rng_);
}

}  // namespace autosched
