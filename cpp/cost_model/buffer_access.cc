#include "cost_model/buffer_access.h"

#include <algorithm>
#include <cmath>

namespace autosched {
namespace {

constexpr int kMaxEvalDepth = 64;

// Progressions with a zero stride or a single value are dropped; the rest are
// sorted by stride, and those of equal stride merged (i + k with the same
// stride covers extent_i + extent_k - 1 values).
std::vector<IndexTerm> Normalise(const std::vector<IndexTerm>& terms) {
  std::vector<IndexTerm> out;
  for (const IndexTerm& t : terms) {
    double s = std::fabs(t.stride);
    if (s > 0 && t.extent > 1) out.push_back({s, t.extent});
  }
  std::sort(out.begin(), out.end(),
            [](const IndexTerm& a, const IndexTerm& b) { return a.stride < b.stride; });
  std::vector<IndexTerm> merged;
  for (const IndexTerm& t : out) {
    if (!merged.empty() && merged.back().stride == t.stride) {
      merged.back().extent += t.extent - 1;
    } else {
      merged.push_back(t);
    }
  }
  return merged;
}

// Adds progressions (sorted by stride) to a set of `count` values spread over
// `width`: a stride at least the width makes disjoint copies, a smaller one
// overlapping copies bounded by the new width.
double CountProgressions(const std::vector<IndexTerm>& terms, double count, double width) {
  for (const IndexTerm& t : terms) {
    double new_width = width + t.stride * static_cast<double>(t.extent - 1);
    count = t.stride >= width ? count * static_cast<double>(t.extent)
                              : std::min(count * static_cast<double>(t.extent), new_width);
    width = new_width;
  }
  return count;
}

int64_t FloorDiv(int64_t a, int64_t b) {
  if (b == 0) return 0;
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// One access as progressions over the enclosing loops.
struct AccessTerms {
  std::vector<double> stride;  // per enclosing loop: elements per iteration
  std::vector<bool> moves;     // per enclosing loop: whether the index changes
  IndexTerm vector{0, 1};      // the lanes of a vector access
  double lanes = 1;
};

// Strides come from the index at iterations 0, 1 and extent - 1 of each loop
// (the others at 0): exact for affine indices; for floordiv / floormod of a
// fused loop the stride is the average slope.
AccessTerms TermsOf(const RawAccess& a, const std::vector<LoopInfo>& loops, IndexEvaluator* ev) {
  AccessTerms t;
  t.stride.assign(loops.size(), 0);
  t.moves.assign(loops.size(), false);
  int64_t base = ev->Eval(a.index);
  for (size_t l = 0; l < loops.size(); ++l) {
    int64_t extent = loops[l].extent;
    if (extent <= 1) continue;
    ev->Set(l, 1);
    int64_t step = ev->Eval(a.index) - base;
    int64_t span = step;
    if (extent > 2) {
      ev->Set(l, extent - 1);
      span = ev->Eval(a.index) - base;
    }
    ev->Set(l, 0);
    t.moves[l] = step != 0 || span != 0;
    t.stride[l] =
        step != 0 ? static_cast<double>(step) : static_cast<double>(span) / static_cast<double>(extent - 1);
  }
  if (const auto* ramp = a.index.as<RampNode>()) {
    t.vector = {static_cast<double>(ramp->stride), ramp->lanes};
    t.lanes = ramp->lanes;
  }
  return t;
}

// Progressions of the innermost `inner` loops and of the vector lanes.
std::vector<IndexTerm> InnerTerms(const AccessTerms& t, const std::vector<LoopInfo>& loops, size_t inner) {
  std::vector<IndexTerm> out{t.vector};
  for (size_t l = loops.size() - inner; l < loops.size(); ++l) out.push_back({t.stride[l], loops[l].extent});
  return out;
}

double InnerProduct(const std::vector<LoopInfo>& loops, size_t inner) {
  double prod = 1;
  for (size_t l = loops.size() - inner; l < loops.size(); ++l) prod *= static_cast<double>(loops[l].extent);
  return prod;
}

// The accesses of one buffer; `rep` (the widest) stands for their region.
struct BufferGroup {
  Buffer buffer;
  std::vector<AccessTerms> accesses;
  bool read = false, write = false;
  size_t rep = 0;
  double rep_elements = -1;
  double lanes = 0;  // elements per execution of the statement
};

std::vector<BufferGroup> GroupAccesses(const std::vector<RawAccess>& accesses,
                                       const std::vector<LoopInfo>& loops, IndexEvaluator* ev) {
  std::vector<BufferGroup> groups;
  for (const RawAccess& a : accesses) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const BufferGroup& g) {
      return g.buffer == a.buffer || g.buffer->name == a.buffer->name;
    });
    if (it == groups.end()) {
      groups.push_back({a.buffer, {}});
      it = groups.end() - 1;
    }
    AccessTerms t = TermsOf(a, loops, ev);
    double elements = UniqueElements(InnerTerms(t, loops, loops.size()));
    if (elements > it->rep_elements) {
      it->rep = it->accesses.size();
      it->rep_elements = elements;
    }
    (a.is_write ? it->write : it->read) = true;
    it->lanes += t.lanes;
    it->accesses.push_back(std::move(t));
  }
  return groups;
}

// Reuse of a buffer: the innermost loop that no access of it moves reads the
// same elements again every iteration; else several accesses in the
// statement reuse them at once.
void SetReuse(const BufferGroup& g, const std::vector<LoopInfo>& loops, const std::vector<double>& footprint,
              BufferStats* b) {
  size_t depth = loops.size();
  for (size_t l = depth; l-- > 0;) {
    if (loops[l].extent <= 1) continue;
    bool moved =
        std::any_of(g.accesses.begin(), g.accesses.end(), [&](const AccessTerms& t) { return t.moves[l]; });
    if (moved) continue;
    b->reuse = ReuseType::LoopMultipleRead;
    b->reuse_ct = static_cast<double>(loops[l].extent);
    b->reuse_dis_iter = InnerProduct(loops, depth - 1 - l);
    b->reuse_dis_bytes = footprint[depth - 1 - l];
    return;
  }
  if (g.accesses.size() > 1) {
    b->reuse = ReuseType::SerialMultipleReadWrite;
    b->reuse_ct = static_cast<double>(g.accesses.size() - 1);
    b->reuse_dis_iter = 1;
    b->reuse_dis_bytes = footprint[0];
  }
}

}  // namespace

double UniqueElements(std::vector<IndexTerm> terms) { return CountProgressions(Normalise(terms), 1, 1); }

double UniqueLines(std::vector<IndexTerm> terms, double elems_per_line) {
  elems_per_line = std::max(1.0, elems_per_line);
  std::vector<IndexTerm> sorted = Normalise(terms);
  // Strides under a line build one block of consecutive lines; larger strides
  // repeat that block, in units of lines.
  double width = 1;
  std::vector<IndexTerm> large;
  for (const IndexTerm& t : sorted) {
    if (t.stride < elems_per_line) {
      width += t.stride * static_cast<double>(t.extent - 1);
    } else {
      large.push_back({t.stride / elems_per_line, t.extent});
    }
  }
  double lines = std::ceil(width / elems_per_line);
  return CountProgressions(large, lines, lines);
}

int64_t IndexEvaluator::Eval(const Expr& e) {
  if (!e.defined() || depth_ >= kMaxEvalDepth) return 0;
  ++depth_;
  int64_t v = 0;
  switch (e.kind()) {
    case ExprKind::IntImm: v = e.as<IntImmNode>()->value; break;
    case ExprKind::FloatImm: v = static_cast<int64_t>(e.as<FloatImmNode>()->value); break;
    case ExprKind::Var: v = EvalVar(e.as<VarNode>()); break;
    case ExprKind::Binary: v = EvalBinary(e.as<BinaryNode>()); break;
    case ExprKind::Not: v = Eval(e.as<NotNode>()->a) == 0; break;
    case ExprKind::Cast: v = Eval(e.as<CastNode>()->value); break;
    case ExprKind::Ramp: v = Eval(e.as<RampNode>()->base); break;
    case ExprKind::Broadcast: v = Eval(e.as<BroadcastNode>()->value); break;
    case ExprKind::Select: {
      const auto* n = e.as<SelectNode>();
      v = Eval(n->condition) ? Eval(n->true_value) : Eval(n->false_value);
      break;
    }
    case ExprKind::Call: {
      const auto* n = e.as<CallNode>();
      if (n->op == Intrinsic::IfThenElse && n->args.size() == 3) {
        v = Eval(n->args[0]) ? Eval(n->args[1]) : Eval(n->args[2]);
      }
      break;
    }
    case ExprKind::Let: {
      const auto* n = e.as<LetNode>();
      expr_lets_.emplace_back(n->var.as<VarNode>(), Eval(n->value));
      v = Eval(n->body);
      expr_lets_.pop_back();
      break;
    }
    default: break;
  }
  --depth_;
  return v;
}

int64_t IndexEvaluator::EvalVar(const VarNode* var) {
  for (auto it = expr_lets_.rbegin(); it != expr_lets_.rend(); ++it) {
    if (it->first == var) return it->second;
  }
  for (size_t i = 0; i < loops_.size(); ++i) {
    if (loops_[i].var == var) return values_[i];
  }
  for (auto it = lets_.rbegin(); it != lets_.rend(); ++it) {
    if (it->first == var) return Eval(it->second);
  }
  return 0;
}

int64_t IndexEvaluator::EvalBinary(const BinaryNode* n) {
  // Unsigned arithmetic wraps instead of overflowing (estimates only).
  auto a = static_cast<uint64_t>(Eval(n->a));
  auto b = static_cast<uint64_t>(Eval(n->b));
  auto sa = static_cast<int64_t>(a), sb = static_cast<int64_t>(b);
  switch (n->op) {
    case BinOp::Add: return static_cast<int64_t>(a + b);
    case BinOp::Sub: return static_cast<int64_t>(a - b);
    case BinOp::Mul: return static_cast<int64_t>(a * b);
    case BinOp::Div: return sb == 0 ? 0 : sa / sb;
    case BinOp::Mod: return sb == 0 ? 0 : sa % sb;
    case BinOp::FloorDiv: return FloorDiv(sa, sb);
    case BinOp::FloorMod: return sb == 0 ? 0 : sa - FloorDiv(sa, sb) * sb;
    case BinOp::Min: return std::min(sa, sb);
    case BinOp::Max: return std::max(sa, sb);
    case BinOp::EQ: return sa == sb;
    case BinOp::NE: return sa != sb;
    case BinOp::LT: return sa < sb;
    case BinOp::LE: return sa <= sb;
    case BinOp::GT: return sa > sb;
    case BinOp::GE: return sa >= sb;
    case BinOp::And: return sa && sb;
    case BinOp::Or: return sa || sb;
  }
  return 0;
}

namespace {

BufferStats StatsOf(const BufferGroup& g, const StoreAnalysis& store, const std::vector<double>& footprint) {
  const std::vector<LoopInfo>& loops = store.loops;
  const AccessTerms& rep = g.accesses[g.rep];
  size_t depth = loops.size();
  double elem_bytes = g.buffer->dtype.bytes();
  double elems_per_line = static_cast<double>(store.hardware.cache_line_bytes) / elem_bytes;
  BufferStats b;
  b.name = g.buffer->name;
  b.access = g.read && g.write ? AccessType::ReadWrite : g.write ? AccessType::Write : AccessType::Read;
  b.bytes = store.outer_prod * g.lanes * elem_bytes;
  std::vector<IndexTerm> all = InnerTerms(rep, loops, depth);
  b.unique_bytes = UniqueElements(all) * elem_bytes;
  b.unique_lines = UniqueLines(all, elems_per_line);
  // Lines moved: only the loops from the innermost one that moves the index
  // inwards keep their lines; every outer iteration brings them again.
  size_t inner = depth;
  for (size_t l = depth; l-- > 0;) {
    if (rep.moves[l]) {
      inner = depth - l;
      break;
    }
  }
  b.lines = store.outer_prod / InnerProduct(loops, inner) *
            UniqueLines(InnerTerms(rep, loops, inner), elems_per_line);
  if (rep.vector.stride != 0 && rep.vector.extent > 1) {
    b.stride = rep.vector.stride;
  } else if (inner < depth || (depth > 0 && rep.moves[0])) {
    b.stride = rep.stride[depth - inner];
  }
  SetReuse(g, loops, footprint, &b);
  return b;
}

// Operations over bytes touched at each loop level, sampled at evenly spaced
// points of log2(operations) from the innermost body to the whole nest.
void IntensityCurve(const std::vector<LoopInfo>& loops, const std::vector<double>& footprint, double flops,
                    StoreAnalysis* out) {
  out->intensity.fill(0);
  if (flops <= 0) return;
  size_t depth = loops.size();
  std::vector<double> x(depth + 1), ratio(depth + 1);
  for (size_t k = 0; k <= depth; ++k) {
    double ops = flops * InnerProduct(loops, k);
    x[k] = std::log2(std::max(ops, 1.0));
    ratio[k] = ops / std::max(footprint[k], 1.0);
  }
  for (int s = 0; s < kIntensityCurveSamples; ++s) {
    double t = x[0] + (x[depth] - x[0]) * s / (kIntensityCurveSamples - 1);
    size_t k = 0;
    while (k < depth && x[k] < t) ++k;
    double value = ratio[k];
    if (k > 0 && x[k] > x[k - 1]) {
      double frac = (t - x[k - 1]) / (x[k] - x[k - 1]);
      value = ratio[k - 1] + frac * (ratio[k] - ratio[k - 1]);
    }
    out->intensity[s] = value;
  }
}

// The accumulator tile: the stored elements written inside the innermost loop
// that does not move them (a reduction loop), which stay in registers when
// every loop inside it is unrolled or vectorized.
void SetAccumulatorTile(const BufferGroup* written, const std::vector<bool>& write_moves,
                        const std::vector<double>& footprint, StoreAnalysis* out) {
  const std::vector<LoopInfo>& loops = out->loops;
  size_t depth = loops.size();
  if (!written) return;
  for (size_t l = depth; l-- > 0;) {
    if (loops[l].extent <= 1 || write_moves[l]) continue;
    size_t inner = depth - 1 - l;
    out->acc_tile_bytes = UniqueElements(InnerTerms(written->accesses[written->rep], loops, inner)) *
                          written->buffer->dtype.bytes();
    out->acc_loop_extent = static_cast<double>(loops[l].extent);
    out->acc_footprint_bytes = footprint[depth - l];
    out->acc_tile_unrolled =
        std::all_of(loops.begin() + static_cast<std::ptrdiff_t>(l) + 1, loops.end(), [](const LoopInfo& x) {
          return x.kind == ForKind::Unrolled || x.kind == ForKind::Vectorized || x.extent <= 1;
        });
    return;
  }
}

}  // namespace

std::vector<bool> AnalyzeAccesses(const std::vector<RawAccess>& accesses, const std::vector<LetBinding>& lets,
                                  double flops, StoreAnalysis* out) {
  const std::vector<LoopInfo>& loops = out->loops;
  IndexEvaluator ev(loops, lets);
  std::vector<BufferGroup> groups = GroupAccesses(accesses, loops, &ev);
  size_t depth = loops.size();
  std::vector<double> footprint(depth + 1, 0);
  for (const BufferGroup& g : groups) {
    for (size_t k = 0; k <= depth; ++k) {
      footprint[k] += UniqueElements(InnerTerms(g.accesses[g.rep], loops, k)) * g.buffer->dtype.bytes();
    }
  }
  out->buffers.clear();
  for (const BufferGroup& g : groups) out->buffers.push_back(StatsOf(g, *out, footprint));
  std::stable_sort(out->buffers.begin(), out->buffers.end(), [](const BufferStats& a, const BufferStats& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.name < b.name;
  });
  IntensityCurve(loops, footprint, flops, out);
  std::vector<bool> write_moves(depth, false);
  const BufferGroup* written = nullptr;
  for (const RawAccess& a : accesses) {
    if (!a.is_write) continue;
    for (const BufferGroup& g : groups) {
      if (g.buffer->name != a.buffer->name) continue;
      written = &g;
      for (const AccessTerms& t : g.accesses) {
        for (size_t l = 0; l < depth; ++l) write_moves[l] = write_moves[l] || t.moves[l];
      }
    }
  }
  SetAccumulatorTile(written, write_moves, footprint, out);
  out->footprint = std::move(footprint);
  return write_moves;
}

}  // namespace autosched
