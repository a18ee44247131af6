// Patterns: construction, checks, and matching by enumerating every consistent set of captures.
#include "passes/pattern.h"

#include <set>

#include <fmt/format.h>

#include "ir/graph/op_table.h"

namespace spire::passes {

using graph::GraphError;

// ---- construction

Pattern op(std::string_view op_name, std::vector<Pattern> inputs) {
  const std::optional<graph::OpKind> kind = graph::op_from_name(op_name);
  if (!kind) throw GraphError(fmt::format("pattern: unknown op '{}'", op_name));
  const graph::OpInfo& info = graph::op_info(*kind);
  const bool ok = info.arity < 0 ? !inputs.empty() : inputs.size() == size_t(info.arity);
  if (!ok)
    throw GraphError(fmt::format("pattern: {} takes {} input(s), the pattern gives {}", info.name,
                                 info.arity < 0 ? std::string("one or more") : std::to_string(info.arity),
                                 inputs.size()));
  Pattern p;
  p.kind_ = Pattern::Kind::Op;
  p.op_ = *kind;
  p.inputs_ = std::move(inputs);
  return p;
}

Pattern any(std::string capture) {
  Pattern p;
  p.kind_ = Pattern::Kind::Any;
  p.capture_ = std::move(capture);
  return p;
}

Pattern same(std::string capture) {
  if (capture.empty()) throw GraphError("pattern: same() needs the name of an earlier capture");
  Pattern p;
  p.kind_ = Pattern::Kind::Same;
  p.capture_ = std::move(capture);
  return p;
}

Pattern constant(double value) {
  Pattern p;
  p.kind_ = Pattern::Kind::Constant;
  p.constant_ = value;
  return p;
}

Pattern Pattern::as(std::string capture) const {
  Pattern p = *this;
  p.capture_ = std::move(capture);
  return p;
}

Pattern Pattern::attr(std::string name, graph::AttrValue value) const {
  Pattern p = *this;
  p.attrs_.emplace_back(std::move(name), std::move(value));
  return p;
}

Pattern Pattern::where(std::function<bool(const graph::Node&)> predicate) const {
  Pattern p = *this;
  p.predicates_.push_back(std::move(predicate));
  return p;
}

Pattern Pattern::uses(int n) const {
  Pattern p = *this;
  p.min_uses_ = p.max_uses_ = n;
  return p;
}

Pattern Pattern::max_uses(int n) const {
  Pattern p = *this;
  p.max_uses_ = n;
  return p;
}

Pattern Pattern::commutative() const {
  Pattern p = *this;
  p.commutative_ = true;
  return p;
}

std::string Pattern::to_string() const {
  std::string s;
  switch (kind_) {
    case Kind::Any: s = capture_.empty() ? "_" : capture_; break;
    case Kind::Same: return fmt::format("same({})", capture_);
    case Kind::Constant: s = fmt::format("constant({})", constant_); break;
    case Kind::Op: {
      s = fmt::format("{}(", graph::op_name(op_));
      for (size_t i = 0; i < inputs_.size(); ++i) s += (i ? ", " : "") + inputs_[i].to_string();
      s += ")";
      if (!capture_.empty()) s += " as " + capture_;
      break;
    }
  }
  if (kind_ == Kind::Constant && !capture_.empty()) s += " as " + capture_;
  std::vector<std::string> c;
  for (const auto& [name, v] : attrs_) c.push_back(fmt::format("attr {}", name));
  if (!predicates_.empty()) c.push_back("where");
  if (min_uses_ == max_uses_) c.push_back(fmt::format("uses={}", min_uses_));
  else if (max_uses_ != std::numeric_limits<int>::max()) c.push_back(fmt::format("uses<={}", max_uses_));
  if (commutative_) c.push_back("commutative");
  for (size_t i = 0; i < c.size(); ++i) s += (i ? ", " : "{") + c[i] + (i + 1 == c.size() ? "}" : "");
  return s;
}

// ---- checks

namespace {

void check(const Pattern& root, const Pattern& p, std::set<std::string, std::less<>>& made) {
  auto fail = [&](const std::string& why) {
    throw GraphError(fmt::format("pattern {}: {}", root.to_string(), why));
  };
  if (p.kind() == Pattern::Kind::Same) {
    if (!made.contains(p.capture()))
      fail(fmt::format("same({}) comes before any capture named '{}' (captures are made depth first, inputs in order)",
                       p.capture(), p.capture()));
    if (p.has_constraints()) fail("same() takes no constraints: they belong to the capture it repeats");
    return;
  }
  if (p.is_commutative() && (p.kind() != Pattern::Kind::Op || p.inputs().size() != 2))
    fail("commutative() belongs on an op() matcher of two inputs");
  for (const Pattern& in : p.inputs()) check(root, in, made);
  // A node's own capture is made after its inputs matched: same(x) inside the subtree of x cannot refer to it.
  if (!p.capture().empty() && !made.insert(p.capture()).second)
    fail(fmt::format("the capture '{}' is made twice (use same() for the second)", p.capture()));
}

bool attr_equal(const graph::AttrValue& have, const graph::AttrValue& want) {
  if (const double* h = std::get_if<double>(&have))
    if (const int64_t* w = std::get_if<int64_t>(&want)) return *h == double(*w);
  return have == want;
}

}  // namespace

void check_pattern(const Pattern& p) {
  std::set<std::string, std::less<>> made;
  check(p, p, made);
}

std::vector<int> use_counts(const graph::Graph& g) {
  std::vector<int> uses(size_t(g.size()), 0);
  for (const graph::Node& n : g.nodes())
    for (graph::Value in : n.inputs) ++uses[size_t(in.id)];
  for (const graph::NamedOutput& o : g.outputs()) ++uses[size_t(o.value.id)];
  for (const graph::StateUpdate& u : g.state_updates()) ++uses[size_t(u.value.id)];
  return uses;
}

// ---- matching

// Every way a pattern matches is a set of captures; a matcher maps each set it is given to the sets that
// also match it. Patterns are a few nodes, so listing every alternative costs nothing and makes backtracking
// across commutative choices and same() exact.
class Matcher {
 public:
  Matcher(const graph::Graph& g, const std::vector<int>& uses) : g_(g), uses_(uses) {}

  std::vector<Captures> run(const Pattern& p, graph::Value v, const Captures& in) const {
    if (p.kind_ == Pattern::Kind::Same) {
      auto it = in.find(p.capture_);
      if (it != in.end() && it->second == v) return {in};
      return {};
    }
    const graph::Node& n = g_.node(v);
    if (!node_fits(p, n, v)) return {};
    std::vector<Captures> out;
    if (p.kind_ != Pattern::Kind::Op) {
      out.push_back(in);
    } else {
      out = inputs(p, n, in, false);
      if (p.commutative_ && n.inputs.size() == 2) {
        std::vector<Captures> swapped = inputs(p, n, in, true);
        out.insert(out.end(), swapped.begin(), swapped.end());
      }
    }
    if (!p.capture_.empty())
      for (Captures& c : out) c[p.capture_] = v;
    return out;
  }

 private:
  bool node_fits(const Pattern& p, const graph::Node& n, graph::Value v) const {
    if (p.kind_ == Pattern::Kind::Op && (n.op != p.op_ || n.inputs.size() != p.inputs_.size())) return false;
    if (p.kind_ == Pattern::Kind::Constant &&
        (n.op != graph::OpKind::Constant || n.attrs.get_float("value") != p.constant_))
      return false;
    const int u = uses_[size_t(v.id)];
    if (u < p.min_uses_ || u > p.max_uses_) return false;
    for (const auto& [name, value] : p.attrs_)
      if (!n.attrs.has(name) || !attr_equal(n.attrs.get(name), value)) return false;
    for (const auto& pred : p.predicates_)
      if (!pred(n)) return false;
    return true;
  }

  // The pattern's inputs matched in order against the node's inputs (the two swapped when `swap`).
  std::vector<Captures> inputs(const Pattern& p, const graph::Node& n, const Captures& in, bool swap) const {
    std::vector<Captures> sets{in};
    for (size_t i = 0; i < p.inputs_.size() && !sets.empty(); ++i) {
      const graph::Value operand = n.inputs[swap ? 1 - i : i];
      std::vector<Captures> next;
      for (const Captures& s : sets) {
        std::vector<Captures> more = run(p.inputs_[i], operand, s);
        next.insert(next.end(), more.begin(), more.end());
      }
      sets = std::move(next);
    }
    return sets;
  }

  const graph::Graph& g_;
  const std::vector<int>& uses_;
};

std::optional<Captures> match(const Pattern& p, const graph::Graph& g, graph::Value root, const std::vector<int>& uses) {
  check_pattern(p);
  if (uses.size() != size_t(g.size())) throw GraphError("match: the use counts are not those of this graph");
  std::vector<Captures> all = Matcher(g, uses).run(p, root, {});
  if (all.empty()) return std::nullopt;
  return std::move(all.front());
}

std::optional<Captures> match(const Pattern& p, const graph::Graph& g, graph::Value root) {
  return match(p, g, root, use_counts(g));
}

}  // namespace spire::passes
