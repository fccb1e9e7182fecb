// Tuning: a round of one task in one call (search, measure, record, learn;
// cpp/tune/tuning_round.h), and the peak FLOP/s estimate the tuner's progress
// lines and summary quote (cpp/task/peak.h, the same the measurement's
// plausibility bound uses), and TuningParams (tune/tuning_params.h), the base
// of TuningOptions. python/autosched/tuner.py drives the session.
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include "bind.h"
#include "bind_options.h"
#include "task/peak.h"
#include "tune/tuning_params.h"
#include "tune/tuning_round.h"

namespace py = pybind11;

namespace autosched::bindings {
namespace {

// Restores a measurer's interrupt check however the round ends.
class MeasurerInterrupt {
 public:
  explicit MeasurerInterrupt(LocalMeasurer* m) : m_(m) {
    // Measuring waits on the workers in this thread: ask Python for signals
    // meanwhile, as LocalMeasurer.measure does.
    m_->interrupt = [] {
      py::gil_scoped_acquire gil;
      return PyErr_CheckSignals() != 0;
    };
  }
  ~MeasurerInterrupt() { m_->interrupt = nullptr; }
  MeasurerInterrupt(const MeasurerInterrupt&) = delete;
  MeasurerInterrupt& operator=(const MeasurerInterrupt&) = delete;

 private:
  LocalMeasurer* m_;
};

TuningRound Round(SketchPolicy& policy, LocalMeasurer& measurer, const std::vector<RecordWriter*>& writers,
                  const std::string& task_json, int num_measure, std::optional<std::vector<State>> states,
                  std::optional<double> deadline_s) {
  RoundIo io;
  io.measurer = &measurer;
  io.writers = writers;
  if (deadline_s) {
    AS_CHECK(!std::isnan(*deadline_s), "tuning_round: deadline_s must be a number of seconds, got NaN");
    // Seconds from now; clamped so that the time point does not overflow.
    const double s = std::clamp(*deadline_s, 0.0, 1e9);
    io.deadline = SteadyClock::now() +
                  std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(s));
  }
  try {
    io.task_json = nlohmann::json::parse(task_json);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("tuning_round: the task is not valid JSON: ") + e.what());
  }
  for (RecordWriter* w : writers) AS_CHECK(w != nullptr, "tuning_round: a record writer is None");
  MeasurerInterrupt check(&measurer);
  TuningRound round;
  bool interrupted = false;
  {
    InterruptibleRelease release;
    try {
      round = states ? MeasureRound(policy, std::move(*states), io) : SearchRound(policy, num_measure, io);
    } catch (const MeasureInterrupted&) {
      interrupted = true;  // the signal's Python error is set: raised below, with the GIL
    }
  }
  if (interrupted) throw py::error_already_set();
  return round;
}

// RecordRound: the records and the learning of a round measured elsewhere.
TuningRound Record(SketchPolicy& policy, const std::vector<RecordWriter*>& writers,
                   const std::string& task_json, std::vector<State> states,
                   std::vector<MeasureResult> results) {
  RoundIo io;
  io.writers = writers;
  try {
    io.task_json = nlohmann::json::parse(task_json);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("record_round: the task is not valid JSON: ") + e.what());
  }
  for (RecordWriter* w : writers) AS_CHECK(w != nullptr, "record_round: a record writer is None");
  py::gil_scoped_release release;
  return RecordRound(policy, std::move(states), std::move(results), io);
}

py::tuple Peak(const SearchTask& task, const std::string& use) {
  AS_CHECK(use == "estimate" || use == "upper_bound",
           "estimate_peak_flops: use must be 'estimate' or 'upper_bound', got '" << use << "'");
  PeakFlops p = EstimatePeakFlops(task, use == "estimate" ? PeakUse::kEstimate : PeakUse::kUpperBound);
  return py::make_tuple(p.flops, p.how);
}

}  // namespace

void bind_tune(py::module_& m) {
  BindOptions<TuningParams>(
      m, "TuningParams",
      "The scalar knobs of a tuning session; autosched.TuningOptions is its subclass with "
      "the builder, runner, measure callbacks and transfer logs.");
  py::class_<TuningRound>(m, "TuningRound", "What one tuning round measured and where its time went.")
      .def_readonly("states", &TuningRound::states)
      .def_readonly("results", &TuningRound::results)
      .def_readonly("keys", &TuningRound::keys)
      .def_readonly("searched", &TuningRound::searched)
      .def_readonly("search_seconds", &TuningRound::search_seconds)
      .def_readonly("cost_model_seconds", &TuningRound::cost_model_seconds)
      .def_readonly("measure_seconds", &TuningRound::measure_seconds)
      .def_readonly("notices", &TuningRound::notices)
      .def_readonly("skipped", &TuningRound::skipped)
      .def_readonly("search_cut", &TuningRound::search_cut)
      .def_readonly("training_deferred", &TuningRound::training_deferred);
  m.def(
      "tuning_round", &Round, py::arg("policy"), py::arg("measurer"), py::arg("writers"),
      py::arg("task_json"), py::arg("num_measure") = 0, py::arg("states") = py::none(),
      py::arg("deadline_s") = py::none(),
      "One round in the core: the given states, or up to num_measure states the policy's search proposes, "
      "measured, appended to every record writer (task_json: the task as records store it) and given to the "
      "policy and its cost model. deadline_s: seconds from now at which the round stops: the search is cut "
      "short (search_cut), builds and runs in progress are abandoned, the states not measured by then are "
      "left out of the round (counted in skipped), and an XGBModel defers its training (training_deferred). "
      "The GIL is released; Ctrl-C raises KeyboardInterrupt.");
  m.def(
      "record_round", &Record, py::arg("policy"), py::arg("writers"), py::arg("task_json"), py::arg("states"),
      py::arg("results"),
      "The end of a round whose states were measured elsewhere (not by a LocalMeasurer of this process): "
      "one record per state appended to every record writer, then states and results given to the policy and "
      "its cost model. The GIL is released.");
  m.def("estimate_peak_flops", &Peak, py::arg("task"), py::arg("use") = "estimate",
        "(FLOP/s, how it was found) of the task's hardware: 'estimate' at the clock the OS reports (0 where "
        "unknown), 'upper_bound' what no run can beat (the measurement's plausibility check).");
  m.def("reported_cpu_clock_hz", &ReportedCpuClockHz, "The CPU clock the OS reports, in Hz.");
}

}  // namespace autosched::bindings
