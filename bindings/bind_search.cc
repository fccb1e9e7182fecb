// Python view of the search: SearchParams, SketchPolicy (sketches, sampling,
// search rounds, sketch rules written in Python), mutation and the baseline
// states. python/autosched/search.py subclasses SketchPolicy (its Python
// arguments, the user's rules in the callables PySketchRule calls).
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include "bind.h"
#include "bind_options.h"
#include "search/evolution/transfer_seeds.h"
#include "search/expert/expert_schedule.h"
#include "search/rule_sets.h"
#include "search/rules/search_util.h"
#include "search/sketch_policy.h"
#include "support/error.h"

namespace py = pybind11;

namespace autosched::bindings {

py::dict TransferReportDict(const TransferReport& r) {
  py::dict d;
  d["given"] = r.given;
  d["kept"] = r.kept;
  d["drops"] = r.drops;
  d["messages"] = r.messages;
  return d;
}

namespace {

SearchParams ParamsOrDefault(const py::object& params) {
  return params.is_none() ? SearchParams() : params.cast<SearchParams>();
}

py::tuple PopulationTuple(const InitPopulation& pop) { return py::make_tuple(pop.states, pop.drops); }

// A sketch rule whose condition and apply are Python callables:
//   condition(state: LoopState, stage_id) -> 0 Skip, 1 Apply, 2 ApplyAndSkipRest
//   apply(state: LoopState, stage_id) -> [(LoopState, next stage id)]
// Sketch generation runs with the GIL released, so each call takes it. What
// the callables raise propagates out of generation (RecordsFailures() is
// false); so does a result of the wrong type, as a TypeError naming the rule.
class PySketchRule : public SketchRule {
 public:
  PySketchRule(std::string name, py::object condition, py::object apply)
      : name_(std::move(name)), condition_(std::move(condition)), apply_(std::move(apply)) {}
  ~PySketchRule() override {
    py::gil_scoped_acquire gil;  // the last owner may be a thread without the GIL
    condition_ = py::object();
    apply_ = py::object();
  }

  std::string name() const override { return name_; }
  bool RecordsFailures() const override { return false; }

  Condition MeetCondition(const SketchContext&, const State& state, int stage_id) const override {
    py::gil_scoped_acquire gil;
    py::object result = condition_(state, stage_id);
    int value = -1;
    if (py::isinstance<py::int_>(result) && !py::isinstance<py::bool_>(result)) value = result.cast<int>();
    AS_TYPE_CHECK(value >= 0 && value <= 2, "sketch rule '"
                                                << name_
                                                << "': its condition must return 0 (skip), 1 (apply) "
                                                   "or 2 (apply and skip the rest), got "
                                                << py::str(py::repr(result)).cast<std::string>());
    return static_cast<Condition>(value);
  }

  std::vector<std::pair<State, int>> Apply(const SketchContext&, const State& state,
                                           int stage_id) const override {
    py::gil_scoped_acquire gil;
    py::object result = apply_(state, stage_id);
    try {
      return result.cast<std::vector<std::pair<State, int>>>();
    } catch (const py::cast_error&) {
      AS_TYPE_CHECK(false, "sketch rule '" << name_
                                           << "': its apply must return a list of (LoopState, next stage id) "
                                              "pairs, got "
                                           << py::str(py::repr(result)).cast<std::string>());
    }
    return {};
  }

 private:
  std::string name_;
  py::object condition_, apply_;
};

void BindSearchParams(py::module_& m) {
  BindOptions<SearchParams>(m, "SearchParams",
                            "The knobs of the search with their defaults, by keyword; see "
                            "cpp/search/search_params.h.");
}

py::dict RoundStats(const SearchRoundStats& r) {
  const EvolutionStats& e = r.evolution;
  py::dict d;
  d["sampled"] = r.sampled;
  d["seeded_measured"] = r.seeded_measured;
  d["sample_drops"] = r.sample_drops;
  d["generations"] = e.generations;
  d["scored"] = e.scored;
  d["mutated"] = e.mutated;
  d["copied"] = e.copied;
  d["mutation_attempts"] = e.attempts;
  d["mutation_failures"] = e.failures;
  d["mutation_failure_messages"] = e.failure_messages;
  d["best_score"] = e.best_score;
  d["picked_best"] = r.picked_best;
  d["picked_random"] = r.picked_random;
  d["transfer_seeds"] = r.transfer_seeds;
  d["carried"] = r.carried;
  d["picked_transfer"] = r.picked_transfer;
  d["tries"] = r.tries;
  d["cut_at_deadline"] = r.cut_at_deadline;
  d["sample_seconds"] = r.sample_seconds;
  d["search_seconds"] = r.search_seconds();
  d["cost_model_seconds"] = r.cost_model_seconds();
  return d;
}

// (mutated state or None, failure reason, message).
py::tuple Mutate(const SearchTask& task, const State& state, uint32_t seed, const py::object& params,
                 const std::string& rule) {
  const SearchParams p = ParamsOrDefault(params);
  MutationRuleList rules = DefaultMutationRules(task);
  if (!rule.empty()) {
    auto it = std::find_if(rules.begin(), rules.end(), [&](const auto& r) { return r.rule->name() == rule; });
    AS_CHECK(it != rules.end(), "no mutation rule named '" << rule << "'");
    rules = {*it};
  }
  std::mt19937 rng(seed);
  MutationResult r;
  {
    py::gil_scoped_release release;
    r = MutateState(SketchContext{task, p}, state, rules, &rng);
  }
  return py::make_tuple(r.state ? py::cast(*r.state) : py::none(), r.failure, r.message);
}

template <typename RuleList>
std::vector<std::string> RuleNames(const RuleList& rules) {
  std::vector<std::string> names;
  for (const auto& rule : rules) names.push_back(rule->name());
  return names;
}

void BindPolicy(py::module_& m) {
  py::class_<SketchPolicy>(m, "SketchPolicy", "Sketches, sampling and rounds of the evolutionary search.")
      .def(py::init([](const SearchTask& task, const py::object& params, CostModel* model, uint64_t seed) {
             if (model == nullptr) return std::make_unique<SketchPolicy>(task, ParamsOrDefault(params), seed);
             // The Python object owns the model; keep_alive ties it to the policy.
             std::shared_ptr<CostModel> shared(model, [](CostModel*) {});
             return std::make_unique<SketchPolicy>(task, shared, ParamsOrDefault(params), seed);
           }),
           py::arg("task"), py::arg("params") = py::none(), py::arg("cost_model") = nullptr,
           py::arg("seed") = 0, py::keep_alive<1, 4>())
      .def_property_readonly("params", &SketchPolicy::params)
      .def("set_population", &SketchPolicy::SetPopulation, py::arg("population"),
           "The evolutionary search's population from the next round on (params shows it).")
      .def("set_generations", &SketchPolicy::SetGenerations, py::arg("num_iters"),
           "The generations of selection and mutation per round from the next round on.")
      .def("set_carry_over", &SketchPolicy::SetCarryOver, py::arg("carry_over"),
           "Whether the next rounds go on from the last generation of the round before "
           "(SearchParams.evolutionary_search_carry_over).")
      .def(
          "set_deadline",
          [](SketchPolicy& p, std::optional<double> seconds) {
            auto deadline = std::chrono::steady_clock::time_point::max();
            if (seconds) {
              AS_CHECK(!std::isnan(*seconds), "set_deadline: seconds must be a number, got NaN");
              // Seconds from now; clamped so that the time point does not overflow.
              deadline = std::chrono::steady_clock::now() +
                         std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                             std::chrono::duration<double>(std::clamp(*seconds, 0.0, 1e9)));
            }
            p.SetDeadline(deadline);
          },
          py::arg("seconds"),
          "Rounds stop searching `seconds` from now (None: never): sampling, breeding and scoring are cut "
          "short there, and a round cut so proposes nothing (last_round['cut_at_deadline']).")
      .def_property_readonly("sketch_rule_names",
                             [](const SketchPolicy& p) { return RuleNames(p.sketch_rules()); })
      .def(
          "add_sketch_rule",
          [](SketchPolicy& p, const std::string& name, py::object condition, py::object apply) {
            AS_CHECK(!name.empty(), "a sketch rule needs a name");
            AS_TYPE_CHECK(PyCallable_Check(condition.ptr()) && PyCallable_Check(apply.ptr()),
                          "sketch rule '" << name << "': condition and apply must be callable");
            p.PreloadSketchRule(std::make_shared<PySketchRule>(name, std::move(condition), std::move(apply)));
          },
          py::arg("name"), py::arg("condition"), py::arg("apply"),
          "Adds a rule before the built-in ones (after those added before): condition(LoopState, stage_id) "
          "-> 0/1/2 (skip, apply, apply and skip the rest), apply(LoopState, stage_id) -> [(LoopState, "
          "next stage id)]. What they raise propagates out of sketch generation.")
      .def_property_readonly("init_rule_names",
                             [](const SketchPolicy& p) { return RuleNames(p.init_rules()); })
      .def("generate_sketches", &SketchPolicy::GenerateSketches, py::call_guard<InterruptibleRelease>())
      .def_property_readonly("rule_failures", &SketchPolicy::rule_failures)
      .def(
          "sample_init_population",
          [](SketchPolicy& p, int n, uint32_t seed) {
            InitPopulation pop;
            {
              InterruptibleRelease release;
              pop = p.SampleInitPopulation(n, seed);
            }
            return PopulationTuple(pop);
          },
          py::arg("n"), py::arg("seed") = 0)
      .def_property_readonly("mutation_rule_names",
                             [](const SketchPolicy& p) {
                               std::vector<std::string> names;
                               for (const auto& r : p.mutation_rules()) names.push_back(r.rule->name());
                               return names;
                             })
      .def_property(
          "mutation_probabilities",
          [](const SketchPolicy& p) {
            std::vector<double> out;
            for (const auto& r : p.mutation_rules()) out.push_back(r.probability);
            return out;
          },
          [](SketchPolicy& p, const std::vector<double>& probs) {
            AS_CHECK(probs.size() == p.mutation_rules().size(), "mutation_probabilities needs "
                                                                    << p.mutation_rules().size()
                                                                    << " values, got " << probs.size());
            for (double x : probs) AS_CHECK(x >= 0, "mutation probabilities must be >= 0, got " << x);
            for (size_t i = 0; i < probs.size(); ++i) p.mutation_rules()[i].probability = probs[i];
          })
      .def("continue_search_one_round", &SketchPolicy::ContinueSearchOneRound, py::arg("num_measure"),
           py::call_guard<InterruptibleRelease>(),
           "The next batch of states to measure (fewer or none when the search space is exhausted).")
      .def("record_measured", &SketchPolicy::RecordMeasured, py::arg("states"), py::arg("results"),
           py::call_guard<InterruptibleRelease>())
      .def(
          "expert_schedule",
          [](SketchPolicy& p) {
            ExpertSchedule e;
            {
              py::gil_scoped_release release;
              e = p.Expert();
            }
            return py::make_tuple(e.state ? py::cast(*e.state) : py::none(), e.reason, e.note);
          },
          "The expert schedule of the policy's sketches: (state or None, why there is none, how it was "
          "made).")
      .def(
          "set_transfer_seeds",
          [](SketchPolicy& p, const std::vector<State>& sources, int64_t max_seeds) {
            TransferReport report;
            {
              InterruptibleRelease release;
              report = p.SetTransferSeeds(sources, max_seeds);
            }
            return TransferReportDict(report);
          },
          py::arg("sources"), py::arg("max_seeds") = 16,
          "Re-fits the best states of similar tasks (best first) to the policy's task; they join every "
          "round's initial population, and the first not measured are measured first. Returns {given, kept, "
          "drops (reason -> count), messages (reason -> first message)}.")
      .def_property_readonly("transfer_seeds", &SketchPolicy::transfer_seeds)
      .def("is_measured", &SketchPolicy::IsMeasured, py::arg("state"))
      .def_property_readonly("num_measured", &SketchPolicy::num_measured)
      .def_property_readonly("model_update_seconds", &SketchPolicy::model_update_seconds)
      .def_property_readonly("last_round", [](const SketchPolicy& p) { return RoundStats(p.last_round()); });
}

}  // namespace

void bind_search(py::module_& m) {
  BindSearchParams(m);
  BindPolicy(m);
  m.def("mutate_state", &Mutate, py::arg("task"), py::arg("state"), py::arg("seed") = 0,
        py::arg("params") = py::none(), py::arg("rule") = "",
        "One mutation of a state (a rule picked by probability, or the named one): (state or None, "
        "failure, message).");
  m.def("baseline_states", &BaselineStates, py::arg("task"), py::arg("params") = SearchParams(),
        "The plain loop nest and its parallel + vectorized variant (what tuning measures first).");
  m.def(
      "expert_schedule",
      [](const SearchTask& task, const py::object& params) {
        ExpertSchedule e;
        {
          py::gil_scoped_release release;
          e = MakeExpertSchedule(task, ParamsOrDefault(params));
        }
        return py::make_tuple(e.state ? py::cast(*e.state) : py::none(), e.reason, e.note);
      },
      py::arg("task"), py::arg("params") = py::none(),
      "The analytic expert schedule of a task (CPU or GPU): (state or None, why there is none, how it was "
      "made).");
  m.def(
      "expert_alternatives",
      [](const SearchTask& task, const py::object& params) {
        std::vector<std::pair<std::string, State>> alternatives;
        {
          py::gil_scoped_release release;
          alternatives = ExpertAlternatives(task, ParamsOrDefault(params));
        }
        return alternatives;
      },
      py::arg("task"), py::arg("params") = py::none(),
      "The GPU expert planned with its other variants, [(name, state)], those that differ from the expert; "
      "empty on a CPU target or with the expert off.");
  m.def(
      "refit_state",
      [](const SearchTask& task, const State& source, const py::object& params) {
        const SearchParams p = ParamsOrDefault(params);
        RefitResult r;
        {
          py::gil_scoped_release release;
          r = RefitState(SketchContext{task, p}, source);
        }
        return py::make_tuple(r.state ? py::cast(*r.state) : py::none(), r.failure, r.message);
      },
      py::arg("task"), py::arg("state"), py::arg("params") = py::none(),
      "A state of a similar task (same compute structure) re-fitted to `task`'s extents: (state or None, "
      "failure, message).");
  m.def("state_key", &StateKey, py::arg("state"), "The key of a state among measured ones (its steps).");
  m.def(
      "generate_sketches",
      [](const SearchTask& task, const py::object& params) {
        SketchPolicy policy(task, ParamsOrDefault(params));
        InterruptibleRelease release;
        return policy.GenerateSketches();
      },
      py::arg("task"), py::arg("params") = py::none(),
      "The sketches of a task (LoopStates, lengths unknown).");
  m.def(
      "sample_init_population",
      [](const SearchTask& task, int n, uint32_t seed, const py::object& params, const py::object& sketches) {
        SketchPolicy policy(task, ParamsOrDefault(params));
        const bool given = !sketches.is_none();
        const std::vector<State> from = given ? sketches.cast<std::vector<State>>() : std::vector<State>{};
        InitPopulation pop;
        {
          InterruptibleRelease release;
          pop = given ? SampleInitPopulation(task, from, n, seed, policy.params(), policy.init_rules())
                      : policy.SampleInitPopulation(n, seed);
        }
        return PopulationTuple(pop);
      },
      py::arg("task"), py::arg("n"), py::arg("seed") = 0, py::arg("params") = py::none(),
      py::arg("sketches") = py::none(),
      "Up to n distinct random states of the task's sketches (or of the given ones) and the dropped "
      "attempts per reason.");
}

}  // namespace autosched::bindings
