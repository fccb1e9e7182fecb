// Python view of the search: SearchParams, SketchPolicy, and the two entry
// points generate_sketches / sample_init_population. python/autosched/search.py
// wraps the returned LoopStates in autosched.State.
#include <pybind11/stl.h>

#include "bind.h"
#include "search/sketch_policy.h"

namespace py = pybind11;

namespace autosched::bindings {
namespace {

SearchParams ParamsOrDefault(const py::object& params) {
  return params.is_none() ? SearchParams() : params.cast<SearchParams>();
}

py::tuple PopulationTuple(const InitPopulation& pop) { return py::make_tuple(pop.states, pop.drops); }

void BindSearchParams(py::module_& m) {
  py::class_<SearchParams>(m, "SearchParams", "Knobs of the search; see cpp/search/search_params.h.")
      .def(py::init<>())
      .def_readwrite("cpu_tiling_structure", &SearchParams::cpu_tiling_structure)
      .def_readwrite("max_innermost_split_factor", &SearchParams::max_innermost_split_factor)
      .def_readwrite("max_vectorize_size", &SearchParams::max_vectorize_size)
      .def_readwrite("vector_lanes_factor", &SearchParams::vector_lanes_factor)
      .def_readwrite("parallel_iterations_per_core", &SearchParams::parallel_iterations_per_core)
      .def_readwrite("auto_unroll_candidates", &SearchParams::auto_unroll_candidates)
      .def_readwrite("max_const_unroll", &SearchParams::max_const_unroll)
      .def_readwrite("sample_init_attempts_per_state", &SearchParams::sample_init_attempts_per_state)
      .def_readwrite("evolutionary_search_population", &SearchParams::evolutionary_search_population)
      .def_readwrite("evolutionary_search_num_iters", &SearchParams::evolutionary_search_num_iters)
      .def_readwrite("evolutionary_search_mutation_prob", &SearchParams::evolutionary_search_mutation_prob)
      .def_readwrite("sample_init_min_population", &SearchParams::sample_init_min_population)
      .def_readwrite("sample_init_use_measured_ratio", &SearchParams::sample_init_use_measured_ratio)
      .def_readwrite("eps_greedy", &SearchParams::eps_greedy)
      .def_readwrite("num_measures_per_round", &SearchParams::num_measures_per_round)
      .def_readwrite("retry_search_one_round_on_empty", &SearchParams::retry_search_one_round_on_empty);
}

template <typename RuleList>
std::vector<std::string> RuleNames(const RuleList& rules) {
  std::vector<std::string> names;
  for (const auto& rule : rules) names.push_back(rule->name());
  return names;
}

}  // namespace

void bind_search(py::module_& m) {
  BindSearchParams(m);
  py::class_<SketchPolicy>(m, "SketchPolicy", "Sketch generation and sampling of the initial population.")
      .def(py::init([](const SearchTask& task, const py::object& params) {
             return SketchPolicy(task, ParamsOrDefault(params));
           }),
           py::arg("task"), py::arg("params") = py::none())
      .def_property_readonly("params", &SketchPolicy::params)
      .def_property_readonly("sketch_rule_names",
                             [](const SketchPolicy& p) { return RuleNames(p.sketch_rules()); })
      .def_property_readonly("init_rule_names",
                             [](const SketchPolicy& p) { return RuleNames(p.init_rules()); })
      .def("generate_sketches", &SketchPolicy::GenerateSketches)
      .def_property_readonly("rule_failures", &SketchPolicy::rule_failures)
      .def(
          "sample_init_population",
          [](SketchPolicy& p, int n, uint32_t seed) {
            return PopulationTuple(p.SampleInitPopulation(n, seed));
          },
          py::arg("n"), py::arg("seed") = 0);
  m.def(
      "generate_sketches",
      [](const SearchTask& task, const py::object& params) {
        return SketchPolicy(task, ParamsOrDefault(params)).GenerateSketches();
      },
      py::arg("task"), py::arg("params") = py::none(),
      "The sketches of a task (LoopStates, lengths unknown).");
  m.def(
      "sample_init_population",
      [](const SearchTask& task, int n, uint32_t seed, const py::object& params, const py::object& sketches) {
        SketchPolicy policy(task, ParamsOrDefault(params));
        if (sketches.is_none()) return PopulationTuple(policy.SampleInitPopulation(n, seed));
        std::mt19937 rng(seed);
        return PopulationTuple(SampleInitPopulation(task, sketches.cast<std::vector<State>>(), n, &rng,
                                                    policy.params(), policy.init_rules()));
      },
      py::arg("task"), py::arg("n"), py::arg("seed") = 0, py::arg("params") = py::none(),
      py::arg("sketches") = py::none(),
      "Up to n distinct random states of the task's sketches (or of the given ones) and the dropped "
      "attempts per reason.");
}

}  // namespace autosched::bindings
