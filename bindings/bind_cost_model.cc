// Python view of the cost models and program features.
// python/autosched/cost_model.py mixes its CostModel into RandomModel and
// XGBModel: update(inputs, results) over measured pairs on top of
// update(tasks, states, costs, ok), training from record logs.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include "bind.h"
#include "bind_options.h"
#include "cost_model/cost_model.h"
#include "cost_model/features.h"
#include "cost_model/random_model.h"
#include "cost_model/training_data.h"
#include "cost_model/xgboost_model.h"
#include "support/error.h"

namespace py = pybind11;

namespace autosched::bindings {
namespace {

std::vector<MeasuredProgram> MakePrograms(const std::vector<SearchTask>& tasks,
                                          const std::vector<State>& states,
                                          const std::vector<std::vector<double>>& costs,
                                          const std::vector<bool>& ok) {
  AS_CHECK(tasks.size() == states.size() && states.size() == costs.size() && costs.size() == ok.size(),
           "update: tasks, states, costs and ok must have the same length, got "
               << tasks.size() << ", " << states.size() << ", " << costs.size() << " and " << ok.size());
  std::vector<MeasuredProgram> out;
  out.reserve(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) out.push_back({tasks[i], states[i], costs[i], ok[i]});
  return out;
}

// (rows x NumFeatures() float32 array, error message) per state.
py::list ExtractFeaturesPy(const std::vector<State>& states, const HardwareParams& hardware,
                           int num_threads) {
  std::vector<ProgramFeatures> features;
  {
    InterruptibleRelease release;
    features = ExtractFeaturesParallel(states, hardware, num_threads);
  }
  py::list out;
  for (const ProgramFeatures& f : features) {
    py::array_t<float> array({static_cast<py::ssize_t>(f.rows), static_cast<py::ssize_t>(NumFeatures())});
    std::copy(f.values.begin(), f.values.end(), array.mutable_data());
    out.append(py::make_tuple(array, f.error));
  }
  return out;
}

void BindParams(py::module_& m) {
  BindOptions<XGBModelParams>(m, "XGBModelParams",
                              "Parameters of XGBModel; every field can be given by keyword.")
      .def("to_json", [](const XGBModelParams& p) { return FieldsToJson(p).dump(); });

  py::class_<TrainingReport>(m, "TrainingReport", "What the last training of an XGBModel did.")
      .def_readonly("rounds", &TrainingReport::rounds)
      .def_readonly("best_round", &TrainingReport::best_round)
      .def_readonly("metric", &TrainingReport::metric)
      .def_readonly("programs", &TrainingReport::programs)
      .def_readonly("rows", &TrainingReport::rows)
      .def_readonly("seconds", &TrainingReport::seconds)
      .def_readonly("cut_at_deadline", &TrainingReport::cut_at_deadline)
      .def("__repr__", [](const TrainingReport& r) {
        std::ostringstream text;
        text << "TrainingReport(rounds=" << r.rounds << ", best_round=" << r.best_round
             << ", metric=" << r.metric << ", programs=" << r.programs << ", rows=" << r.rows
             << ", seconds=" << r.seconds << ")";
        return text.str();
      });
}

void BindModels(py::module_& m) {
  py::class_<CostModel>(m, "CostModel", "Scores states: higher = faster (update / predict / save / load).")
      .def(
          "update",
          [](CostModel& model, const std::vector<SearchTask>& tasks, const std::vector<State>& states,
             const std::vector<std::vector<double>>& costs, const std::vector<bool>& ok) {
            std::vector<MeasuredProgram> programs = MakePrograms(tasks, states, costs, ok);
            InterruptibleRelease release;
            model.Update(programs);
          },
          py::arg("tasks"), py::arg("states"), py::arg("costs"), py::arg("ok"))
      .def("predict", &CostModel::Predict, py::arg("task"), py::arg("states"),
           py::call_guard<InterruptibleRelease>())
      .def("save", &CostModel::Save, py::arg("path"), py::call_guard<py::gil_scoped_release>())
      .def("load", &CostModel::Load, py::arg("path"), py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("num_samples", &CostModel::num_samples,
                             "measured programs given to update since construction or load");

  py::class_<RandomModel, CostModel>(m, "RandomModel", "Uniform random scores in [0, 1), seeded.")
      .def(py::init<uint64_t>(), py::arg("seed") = 0);

  py::class_<XGBModel, CostModel>(m, "XGBModel", "Gradient-boosted trees over program features (pack-sum).")
      .def(py::init<XGBModelParams>(), py::arg("params") = XGBModelParams())
      .def_property_readonly("params", &XGBModel::params)
      .def_property_readonly("trained", &XGBModel::trained,
                             "False while the model still gives warm-up (random) scores")
      .def("set_base", &XGBModel::SetBase, py::arg("path"), py::call_guard<py::gil_scoped_release>(),
           "Makes the model file at path the base whose fixed trees the model's own add to.")
      .def_property_readonly("has_base", &XGBModel::has_base)
      .def_property_readonly("last_training", &XGBModel::last_training,
                             "rounds, best round, metric, data size and seconds of the last training")
      .def_property("defer_training", &XGBModel::defer_training, &XGBModel::set_defer_training,
                    "True: update() only adds programs and train_pending() trains (a session keeping the "
                    "cost model to a share of its time decides when)")
      .def_property_readonly("untrained_programs", &XGBModel::untrained_programs,
                             "programs added since the last training")
      .def(
          "train_pending",
          [](XGBModel& model, int threads, std::optional<double> deadline_s) {
            auto deadline = std::chrono::steady_clock::time_point::max();
            if (deadline_s) {
              AS_CHECK(!std::isnan(*deadline_s), "train_pending: deadline_s must be a number, got NaN");
              // Seconds from now; clamped so that the time point does not overflow.
              deadline = std::chrono::steady_clock::now() +
                         std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                             std::chrono::duration<double>(std::clamp(*deadline_s, 0.0, 1e9)));
            }
            InterruptibleRelease release;
            return model.TrainPending(threads, deadline);
          },
          py::arg("threads") = -1, py::arg("deadline_s") = py::none(),
          "Trains on all programs when some are untrained and the warm-up is over; returns whether it did. "
          "threads: XGBoost's threads for this training (-1: xgboost_threads; 0: all cores); predictions "
          "keep xgboost_threads. deadline_s: seconds from now after which no training starts and boosting "
          "stops after its first round (last_training.cut_at_deadline; the programs stay untrained).");
}

}  // namespace

void bind_cost_model(py::module_& m) {
  m.def("feature_names", &FeatureNames, "Names of the program features, in row order.");
  m.def("extract_features", &ExtractFeaturesPy, py::arg("states"), py::arg("hardware_params"),
        py::arg("num_threads") = 0,
        "Per state: (rows x features float32 array, error); the error says why a state has no rows.");
  m.def("pairwise_accuracy", &PairwiseAccuracy, py::arg("scores"), py::arg("labels"), py::arg("groups"),
        "Share of same-group pairs with different labels that the scores order like the labels.");
  m.def("has_xgboost", &HasXGBoost, "Whether autosched was built with XGBoost (XGBModel needs it).");
  BindParams(m);
  BindModels(m);
}

}  // namespace autosched::bindings
