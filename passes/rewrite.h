// Rules: a pattern and what to put in its place; apply_rules() rewrites a graph with them to a fixed point.
//
//   Rule silu("silu", op("mul", {any("x"), op("sigmoid", {same("x")})}).commutative(),
//             [](graph::Graph& g, const Match& m) { return g.op("silu", {m["x"]}); });
//   graph::Graph out = apply_rules(g, {silu}).graph;
//
// The graph is append-only SSA, so a rewrite builds a new graph: every node is copied in order, and where a
// rule's pattern matches at a node (its root), the rule's replacement is built instead and every use of the
// root reads the replacement. The replacement gets the root's name, so outputs, state updates and the text
// form keep their names; other nodes it adds are named <root>.<op> (made unique). Leaves keep their names
// and order (inputs, parameters and states are kept even when unused); outputs and state updates are
// carried over. Nodes nothing needs any more are removed. Sweeps repeat until no rule matches.
//
// Patterns are matched against the graph of the current sweep, and a replacement must compute exactly what
// its root computes, so rewrites may overlap freely: each one swaps a value for an equal one.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/graph/graph.h"
#include "passes/pattern.h"

namespace spire::passes {

// What a replacement sees of a match.
class Match {
 public:
  Match(const graph::Graph& source, graph::Value root, Captures source_captures, Captures captures)
      : source_(source), root_(root), source_captures_(std::move(source_captures)), captures_(std::move(captures)) {}

  // A captured value in the graph being built: what the replacement's ops take as inputs.
  graph::Value operator[](std::string_view capture) const;
  // A captured value's node in the graph being rewritten: its attributes and type.
  const graph::Node& node(std::string_view capture) const;
  // The matched root in the graph being rewritten.
  const graph::Node& root() const { return source_.node(root_); }
  const graph::Graph& source() const { return source_; }

 private:
  const graph::Graph& source_;
  graph::Value root_;
  Captures source_captures_;
  Captures captures_;
};

// Builds the replacement in `g` (graph::Graph's builder: g.op(name, inputs, attrs) reaches every op of the
// table, user ops included) and returns it; it must have the root's exact type. Returning an invalid Value
// (graph::Value{}) declines this match: the root is copied unchanged (what it built is removed as dead).
using Replace = std::function<graph::Value(graph::Graph& g, const Match& m)>;

struct Rule {
  // Throws GraphError when the pattern is malformed (check_pattern) or its root is not an op() matcher of
  // a non-leaf op (leaves are the graph's interface and are never replaced).
  Rule(std::string name, Pattern pattern, Replace replace);

  std::string name;
  Pattern pattern;
  Replace replace;
};

struct RewriteOptions {
  int max_sweeps = 32;  // a rule set still matching after this many sweeps never stops (a rule undoes another)
};

struct RewriteResult {
  graph::Graph graph;
  std::vector<int> rewrites;  // per rule, in the order given: how many roots it replaced, over all sweeps
  int sweeps = 0;             // sweeps that replaced something
  int total() const;
};

// Rewrites `g` to a fixed point. Rules are tried in order at each node, the first that matches and does not
// decline wins. When nothing matches, the result is `g` itself, dead nodes and all. Throws GraphError naming
// the rule when a replacement has another type than its root or is not a value of the graph being built,
// and when max_sweeps pass without reaching a fixed point.
RewriteResult apply_rules(const graph::Graph& g, const std::vector<Rule>& rules, const RewriteOptions& opt = {});

// `g` without the nodes no output or state update needs; inputs, parameters and states always stay.
graph::Graph remove_dead_nodes(const graph::Graph& g);

}  // namespace spire::passes
