// Measurement and records: LocalMeasurer (the supervisor of worker processes),
// MeasureResult, the record writer and loader. python/autosched/measure.py and
// records.py add the Pythonic layer (LocalBuilder, LocalRunner, measure,
// load_records, RecordToFile).
#include <pybind11/stl.h>

#include <chrono>
#include <string>

#include "bind.h"
#include "bind_options.h"
#include "measure/records.h"
#include "measure/runner.h"
#include "measure/worker_process.h"
#include "support/error.h"

namespace py = pybind11;

namespace autosched::bindings {
namespace {

nlohmann::json ParseJson(const std::string& text, const char* what) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string(what) + ": not valid JSON: " + e.what());
  }
}

std::string ResultRepr(const MeasureResult& r) {
  std::ostringstream ss;
  ss.precision(4);
  ss << "MeasureResult(error=" << MeasureErrorName(r.error) << ", costs=[";
  for (size_t i = 0; i < r.costs.size(); ++i) ss << (i ? ", " : "") << r.costs[i];
  ss << "]";
  if (!r.error_msg.empty()) ss << ", error_msg='" << r.error_msg.substr(0, 200) << "'";
  return ss.str() + ")";
}

void BindResult(py::module_& m) {
  py::enum_<MeasureError> kinds(m, "MeasureErrorNo", "Why a candidate has no valid time.");
  // Upper-case forms of the names; pybind11 keeps the pointers, so they live
  // as long as the process.
  static const std::vector<std::string> upper = [] {
    std::vector<std::string> names;
    for (int i = 0; i < kNumMeasureErrors; ++i) {
      std::string name = MeasureErrorName(static_cast<MeasureError>(i));
      for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      names.push_back(name);
    }
    return names;
  }();
  for (int i = 0; i < kNumMeasureErrors; ++i) kinds.value(upper[i].c_str(), static_cast<MeasureError>(i));
  m.def("parse_measure_error", &ParseMeasureError, py::arg("name"));

  py::class_<MeasureResult>(m, "MeasureResult", "The outcome of measuring one candidate.")
      .def(py::init([](std::vector<double> costs, const std::string& error, std::string error_msg,
                       double all_cost, double timestamp) {
             MeasureResult r;
             r.costs = std::move(costs);
             r.error = ParseMeasureError(error);
             r.error_msg = std::move(error_msg);
             r.all_cost = all_cost;
             r.timestamp = timestamp;
             return r;
           }),
           py::arg("costs") = std::vector<double>{}, py::arg("error") = "none", py::arg("error_msg") = "",
           py::arg("all_cost") = 0.0, py::arg("timestamp") = 0.0)
      .def_readonly("costs", &MeasureResult::costs, "seconds per run, one per repeat")
      .def_readonly("error_no", &MeasureResult::error)
      .def_property_readonly("error", [](const MeasureResult& r) { return MeasureErrorName(r.error); })
      .def_readonly("error_msg", &MeasureResult::error_msg)
      .def_readonly("all_cost", &MeasureResult::all_cost, "wall seconds to build and run it")
      .def_readonly("timestamp", &MeasureResult::timestamp)
      .def_property_readonly("ok", &MeasureResult::ok)
      .def_property_readonly("mean_cost", &MeasureResult::mean_cost)
      .def("to_json", [](const MeasureResult& r) { return MeasureResultToJson(r).dump(); })
      .def_static(
          "from_json",
          [](const std::string& text) { return MeasureResultFromJson(ParseJson(text, "MeasureResult")); })
      .def("__repr__", &ResultRepr);
}

std::vector<MeasureResult> MeasureStates(LocalMeasurer& measurer, const SearchTask& task,
                                         const std::vector<State>& states) {
  // Ctrl-C reaches Python only between bytecodes: poll for it while waiting.
  measurer.interrupt = [] {
    py::gil_scoped_acquire gil;
    return PyErr_CheckSignals() != 0;
  };
  std::vector<MeasureResult> results;
  bool interrupted = false;
  {
    py::gil_scoped_release release;
    try {
      results = measurer.Measure(task, states);
    } catch (const MeasureInterrupted&) {
      interrupted = true;
    }
  }
  measurer.interrupt = nullptr;
  if (interrupted) throw py::error_already_set();
  return results;
}

// A Measurer written in Python (RayRunner's, a test's): its
// measure(task, states, deadline_s) returns one MeasureResult per state.
// Tuning rounds run with the GIL released, so the call takes it; what the
// method raises propagates out of the round before anything is recorded.
class PyMeasurer : public Measurer {
 public:
  std::vector<MeasureResult> Measure(const SearchTask& task, const std::vector<State>& states,
                                     SteadyClock::time_point deadline, std::vector<bool>* measured) override {
    py::gil_scoped_acquire gil;
    py::function method = py::get_override(static_cast<const Measurer*>(this), "measure");
    if (!method) throw py::type_error("a Measurer subclass must define measure(task, states, deadline_s)");
    py::object seconds = py::none();
    if (deadline != kNoDeadline)
      seconds = py::float_(std::chrono::duration<double>(deadline - SteadyClock::now()).count());
    py::object out = method(task, states, seconds);
    if (measured != nullptr) measured->clear();  // every state counts as measured
    try {
      return out.cast<std::vector<MeasureResult>>();
    } catch (const py::cast_error&) {
      throw py::type_error("Measurer.measure must return a list of MeasureResult, got " +
                           std::string(py::str(py::type::of(out).attr("__name__"))));
    }
  }
};

void BindMeasurer(py::module_& m) {
  BindOptions<BuilderOptions>(m, "LocalBuilder",
                              "Compiles candidates in parallel in worker processes; fields by keyword.");
  BindOptions<FaultInjection>(m, "FaultInjection", "Shares of candidates that get a fault injected (tests).");
  BindOptions<RunnerOptions>(m, "RunnerOptions",
                             "Options of verifying and timing candidates; fields by keyword.");
  py::class_<Measurer, PyMeasurer>(
      m, "Measurer",
      "What a tuning round measures with (cpp/measure/measurer.h); subclass it in "
      "Python with measure(task, states, deadline_s) -> [MeasureResult], one per "
      "state (deadline_s: seconds left of the time budget, None: no limit).")
      .def(py::init<>())
      .def_readwrite("best_seconds_hint", &Measurer::best_seconds_hint,
                     "the task's best time so far (0: none), set by the round before measuring");
  py::class_<LocalMeasurer, Measurer>(m, "LocalMeasurer",
                                      "Builds and runs candidates in supervised worker processes.")
      .def(py::init<BuilderOptions, RunnerOptions, std::string>(), py::arg("builder"), py::arg("runner"),
           py::arg("worker_path") = "")
      .def("measure", &MeasureStates, py::arg("task"), py::arg("states"),
           "One MeasureResult per state; the GIL is released while workers build and run.")
      .def_property_readonly("worker_path", &LocalMeasurer::worker_path)
      .def_property_readonly("processes_started", &LocalMeasurer::processes_started);
  m.def("default_worker_path", &DefaultWorkerPath);
}

void BindRecords(py::module_& m) {
  py::class_<RecordWriter>(m, "RecordWriter", "Appends records to a log, one line each.")
      .def(py::init<const std::string&, bool>(), py::arg("path"), py::arg("fsync") = false)
      .def(
          "write",
          [](RecordWriter& w, const std::string& task_json, const State& state, const MeasureResult& result) {
            w.Write(ParseJson(task_json, "RecordWriter.write task"), state, result);
          },
          py::arg("task_json"), py::arg("state"), py::arg("result"))
      .def_property_readonly("path", &RecordWriter::path)
      .def("take_notices", &RecordWriter::TakeNotices,
           "Messages, one per time the path no longer named the file written (removed or replaced) and was "
           "opened again, since the last call.");

  py::class_<Record>(m, "Record", "One loaded record.")
      .def_property_readonly("task", [](const Record& r) { return *r.task; })
      .def_property_readonly("task_json", [](const Record& r) { return r.task_json->dump(); })
      .def_readonly("state", &Record::state)
      .def_readonly("result", &Record::result)
      .def_readonly("line", &Record::line)
      .def_readonly("text", &Record::text);
  py::class_<LoadedRecords>(m, "LoadedRecords")
      .def_readonly("records", &LoadedRecords::records)
      .def_readonly("warnings", &LoadedRecords::warnings)
      .def(
          "best",
          [](const LoadedRecords& l, const std::string& key, const std::string& target) {
            return BestRecord(l.records, key, target);
          },
          py::arg("workload_key") = "", py::arg("target") = "")
      .def("distill", [](const LoadedRecords& l) { return DistillRecords(l.records); });
  m.attr("MAX_RECORD_LINE_BYTES") = kMaxRecordLineBytes;
  // The GIL is released while reading: a large log does not stop other Python threads.
  m.def("load_records", &LoadRecords, py::arg("path"), py::call_guard<InterruptibleRelease>());
}

}  // namespace

void bind_measure(py::module_& m) {
  BindResult(m);
  BindMeasurer(m);
  BindRecords(m);
}

}  // namespace autosched::bindings
