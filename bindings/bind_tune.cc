// Tuning: a round of one task in one call (search, measure, record, learn;
// cpp/tune/tuning_round.h) with its RoundParams, and the peak FLOP/s estimate the tuner's progress
// lines and summary quote (cpp/task/peak.h, the same the measurement's
// plausibility bound uses), and TuningParams (tune/tuning_params.h), the base
// of TuningOptions. python/autosched/tune/session.py drives the session.
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>

#include "bind.h"
#include "bind_options.h"
#include "measure/runner.h"
#include "task/peak.h"
#include "tune/tuning_params.h"
#include "tune/tuning_round.h"

namespace py = pybind11;

namespace autosched::bindings {
namespace {

// Sets a LocalMeasurer's interrupt check for the scope of a round, and
// restores it however the round ends (a measurer written in Python runs
// with the GIL, where Ctrl-C reaches it directly).
class MeasurerInterrupt {
 public:
  explicit MeasurerInterrupt(Measurer* m) : m_(dynamic_cast<LocalMeasurer*>(m)) {
    if (m_ == nullptr) return;
    // Measuring waits on the workers in this thread: ask Python for signals
    // meanwhile, as LocalMeasurer.measure does.
    m_->interrupt = [] {
      py::gil_scoped_acquire gil;
      return PyErr_CheckSignals() != 0;
    };
  }
  ~MeasurerInterrupt() {
    if (m_ != nullptr) m_->interrupt = nullptr;
  }
  MeasurerInterrupt(const MeasurerInterrupt&) = delete;
  MeasurerInterrupt& operator=(const MeasurerInterrupt&) = delete;

 private:
  LocalMeasurer* m_;
};

// Seconds from now as a time point (None: no deadline); clamped so that the
// time point does not overflow.
SteadyClock::time_point DeadlineIn(std::optional<double> seconds) {
  if (!seconds) return kNoDeadline;
  AS_CHECK(!std::isnan(*seconds), "RoundParams: deadline_s must be a number of seconds, got NaN");
  const double s = std::clamp(*seconds, 0.0, 1e9);
  return SteadyClock::now() +
         std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(s));
}

std::optional<double> SecondsLeft(SteadyClock::time_point deadline) {
  if (deadline == kNoDeadline) return std::nullopt;
  return std::chrono::duration<double>(deadline - SteadyClock::now()).count();
}

TuningRound Round(SketchPolicy& policy, Measurer& measurer, const std::vector<RecordWriter*>& writers,
                  const std::string& task_json, const RoundParams& params,
                  std::optional<std::vector<State>> states, std::shared_ptr<RoundTurns> turns, int64_t turn) {
  RoundIo io;
  io.measurer = &measurer;
  io.writers = writers;
  io.turns = turns.get();
  io.turn = turn;
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
      round = states ? MeasureRound(policy, std::move(*states), params, io) : SearchRound(policy, params, io);
    } catch (const MeasureInterrupted&) {
      interrupted = true;  // the signal's Python error is set: raised below, with the GIL
    }
  }
  if (interrupted) throw py::error_already_set();
  return round;
}

RoundParams MakeRoundParams(int num_measure, std::optional<int64_t> population,
                            std::optional<int64_t> generations, std::optional<bool> carry_over,
                            std::optional<std::vector<State>> transfer_seeds, int64_t max_transfer_seeds,
                            double best_seconds, std::optional<double> deadline_s) {
  RoundParams p;
  p.num_measure = num_measure;
  p.population = population;
  p.generations = generations;
  p.carry_over = carry_over;
  p.transfer_seeds = std::move(transfer_seeds);
  p.max_transfer_seeds = max_transfer_seeds;
  p.best_seconds = best_seconds;
  p.deadline = DeadlineIn(deadline_s);
  return p;
}

void BindRoundParams(py::module_& m) {
  py::class_<RoundParams>(
      m, "RoundParams",
      "What a tuning session decides for one round (cpp/tune/tuning_round.h): the states to "
      "measure, this round's search population, generations and carry-over (None: the "
      "policy's own; its SearchParams are the same after the round), the transfer seeds "
      "(None: the policy keeps its seeds), the task's best time and the deadline.")
      .def(py::init(&MakeRoundParams), py::kw_only(), py::arg("num_measure") = 0,
           py::arg("population") = py::none(), py::arg("generations") = py::none(),
           py::arg("carry_over") = py::none(), py::arg("transfer_seeds") = py::none(),
           py::arg("max_transfer_seeds") = 16, py::arg("best_seconds") = 0.0,
           py::arg("deadline_s") = py::none())
      .def_readwrite("num_measure", &RoundParams::num_measure)
      .def_readwrite("population", &RoundParams::population)
      .def_readwrite("generations", &RoundParams::generations)
      .def_readwrite("carry_over", &RoundParams::carry_over)
      .def_readwrite("transfer_seeds", &RoundParams::transfer_seeds)
      .def_readwrite("max_transfer_seeds", &RoundParams::max_transfer_seeds)
      .def_readwrite("best_seconds", &RoundParams::best_seconds)
      .def_property(
          "deadline_s", [](const RoundParams& p) { return SecondsLeft(p.deadline); },
          [](RoundParams& p, std::optional<double> s) { p.deadline = DeadlineIn(s); },
          "seconds from now to the deadline (None: none)");
  py::class_<RoundTurns, std::shared_ptr<RoundTurns>>(
      m, "RoundTurns",
      "The order in which rounds run at once in several threads search and record (their measurements "
      "overlap): take() gives the next turn, passed to tuning_round with these turns.")
      .def(py::init<>())
      .def("take", &RoundTurns::Take);
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
      .def_readonly("training_deferred", &TuningRound::training_deferred)
      .def_readonly("population", &TuningRound::population)
      .def_property_readonly(
          "transfer",
          [](const TuningRound& r) -> py::object {
            return r.transfer ? py::object(TransferReportDict(*r.transfer)) : py::none();
          },
          "SetTransferSeeds's report {given, kept, drops, messages} of the round's seeds (None: none given)");
  BindRoundParams(m);
  m.def(
      "tuning_round", &Round, py::arg("policy"), py::arg("measurer"), py::arg("writers"),
      py::arg("task_json"), py::arg("params"), py::arg("states") = py::none(), py::arg("turns") = py::none(),
      py::arg("turn") = 0,
      "One round in the core: the given states, or up to params.num_measure states the policy's search "
      "proposes (with the round's search parameters and seeds, a RoundParams), measured by the measurer (a "
      "LocalMeasurer, or a Measurer written in Python), appended to every record writer (task_json: the task "
      "as records store it) and given to the policy and its cost model. At params.deadline_s the round "
      "stops: "
      "the search is cut short (search_cut), measurements in progress are abandoned, the states not measured "
      "by then are left out of the round (counted in skipped), and an XGBModel defers its training "
      "(training_deferred). turns, turn: the round's turn (RoundTurns.take) among rounds run at once in "
      "several threads, which search and record in turn. The GIL is released; Ctrl-C raises "
      "KeyboardInterrupt.");
  m.def("estimate_peak_flops", &Peak, py::arg("task"), py::arg("use") = "estimate",
        "(FLOP/s, how it was found) of the task's hardware: 'estimate' at the clock the OS reports (0 where "
        "unknown), 'upper_bound' what no run can beat (the measurement's plausibility check).");
  m.def("reported_cpu_clock_hz", &ReportedCpuClockHz, "The CPU clock the OS reports, in Hz.");
}

}  // namespace autosched::bindings
