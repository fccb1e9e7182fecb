// Differential fuzzing of schedules: random step sequences on several DAGs;
// every state that the steps accept must lower to code (run by the test
// interpreter) whose outputs equal the reference evaluator's, must replay to
// the same loop nest, and must survive a JSON round trip. Rejected steps must
// raise autosched::Error, never crash. AUTOSCHED_FUZZ_CASES sets the number of
// cases (default: a quick run for CI).
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "schedule_test_util.h"

namespace autosched {
namespace {

using sched_test::Axis;

const DataType kF32 = DataType::Float(32);

// out[i, j] = sum_k pad(A)[i + k - 1, j] * W[k], with zero padding, then exp-free relu.
ComputeDAG Stencil(int64_t n, int64_t m) {
  Tensor a = placeholder({n, m}, kF32, "A");
  Tensor w = placeholder({3}, kF32, "W");
  IterVar i = Axis("i", n + 2), j = Axis("j", m);
  Expr in = (i.var >= Expr(1)) && (i.var < Expr(static_cast<int>(n + 1)));
  Tensor pad = compute("pad", {i, j}, if_then_else(in, a({i.var - Expr(1), j.var}), Expr(0.0f)));
  IterVar i2 = Axis("i", n), j2 = Axis("j", m);
  IterVar k = MakeReduceAxis(0, 3, "k");
  Tensor conv = compute("conv", {i2, j2},
                        ReduceNode::make(Combiner::Sum, pad({i2.var + k.var, j2.var}) * w({k.var}), {k}));
  IterVar i3 = Axis("i", n), j3 = Axis("j", m);
  Tensor out = compute("out", {i3, j3}, max(conv({i3.var, j3.var}), Expr(0.0f)));
  return ComputeDAG({a, w, out});
}

// Row max then a shifted row sum: two reductions feeding an elementwise op.
ComputeDAG RowNorm(int64_t n, int64_t m) {
  Tensor a = placeholder({n, m}, kF32, "A");
  IterVar i = Axis("i", n);
  IterVar k = MakeReduceAxis(0, m, "k");
  Tensor mx = compute("rmax", {i}, ReduceNode::make(Combiner::Max, a({i.var, k.var}), {k}));
  IterVar i2 = Axis("i", n), j2 = Axis("j", m);
  Tensor sh = compute("shift", {i2, j2}, a({i2.var, j2.var}) - mx({i2.var}));
  IterVar i3 = Axis("i", n);
  IterVar k3 = MakeReduceAxis(0, m, "k");
  Tensor sum = compute("rsum", {i3}, ReduceNode::make(Combiner::Sum, sh({i3.var, k3.var}), {k3}));
  IterVar i4 = Axis("i", n), j4 = Axis("j", m);
  Tensor out = compute("out", {i4, j4}, sh({i4.var, j4.var}) * sum({i4.var}));
  return ComputeDAG({a, out});
}

class StepFuzzer {
 public:
  explicit StepFuzzer(unsigned seed) : rng_(seed) {}

  int Pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  // A random step for a random compute stage of s (may be invalid).
  Step RandomStep(const State& s) {
    std::vector<int> computes;
    for (size_t i = 0; i < s.stages().size(); ++i) {
      if (!s.stage(static_cast<int>(i)).is_placeholder()) computes.push_back(static_cast<int>(i));
    }
    const int st = computes[Pick(static_cast<int>(computes.size()))];
    const int n = s.stage(st).num_iters();
    const int it = Pick(n);
    const int stages = static_cast<int>(s.stages().size());
    switch (Pick(12)) {
      case 0:
      case 1:
      case 2: {
        std::vector<std::optional<int64_t>> lengths;
        for (int k = 0, parts = 1 + Pick(2); k < parts; ++k) lengths.push_back(1 + Pick(5));
        return SplitStep{st, it, std::nullopt, lengths, Pick(4) != 0};
      }
      case 3: {
        const int first = Pick(n);
        std::vector<int> ids{first};
        if (first + 1 < n) ids.push_back(first + 1);
        return FuseStep{st, ids};
      }
      case 4: {
        std::vector<int> order(n);
        for (int k = 0; k < n; ++k) order[k] = k;
        std::shuffle(order.begin(), order.end(), rng_);
        return ReorderStep{st, order};
      }
      case 5: {
        const IteratorAnnotation anns[] = {IteratorAnnotation::Parallel, IteratorAnnotation::Vectorize,
                                           IteratorAnnotation::Unroll};
        return AnnotationStep{st, it, anns[Pick(3)]};
      }
      case 6:
      case 7: {
        // Mostly a later stage (the only valid targets), sometimes any.
        const int target = (st + 1 < stages && Pick(4) != 0) ? st + 1 + Pick(stages - st - 1) : Pick(stages);
        return ComputeAtStep{st, target, Pick(std::max(1, s.stage(target).num_iters()))};
      }
      case 8: return ComputeInlineStep{st};
      case 9: return Pick(2) ? Step(ComputeRootStep{st}) : Step(PragmaStep{st, 0, "auto_unroll_max_step$8"});
      case 10: return CacheWriteStep{st, Pick(2) ? "local" : "global"};
      default: return RfactorStep{st, it, Pick(2)};
    }
  }

 private:
  std::mt19937 rng_;
};

int NumCases() {
  const char* env = std::getenv("AUTOSCHED_FUZZ_CASES");
  return env ? std::atoi(env) : 40;
}

void FuzzDag(const ComputeDAG& dag, unsigned seed_base) {
  int accepted_steps = 0, rejected = 0, attached = 0;
  for (int c = 0; c < NumCases(); ++c) {
    StepFuzzer fuzz(seed_base + c);
    State s(dag);
    for (int k = 0; k < 10; ++k) {
      Step step = fuzz.RandomStep(s);
      try {
        s = s.Apply(step);
        ++accepted_steps;
      } catch (const Error& e) {
        ++rejected;
        EXPECT_NE(std::string(e.what()).find("step "), std::string::npos) << e.what();
      }
    }
    SCOPED_TRACE("case " + std::to_string(c) + "\n" + s.PrintPythonSteps() + s.ToString());
    EXPECT_EQ(s.Replay().ToString(), s.ToString());
    EXPECT_EQ(State::FromJson(dag, s.ToJson()).ToString(), s.ToString());
    sched_test::ExpectMatchesReference(s, c);
    for (const Stage& st : s.stages()) attached += st.loc == ComputeLocKind::At;
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(accepted_steps, 0);
  EXPECT_GT(rejected, 0);
  EXPECT_GT(attached, 0);  // the generator reaches compute_at states
}

TEST(ScheduleFuzz, MatmulRelu) { FuzzDag(sched_test::MatmulRelu(7, 6, 5), 100); }
TEST(ScheduleFuzz, Stencil) { FuzzDag(Stencil(9, 5), 200); }
TEST(ScheduleFuzz, RowNorm) { FuzzDag(RowNorm(5, 7), 300); }

}  // namespace
}  // namespace autosched
