// Passes and the points of the compiler's pipeline where they run.
//
//   passes::PassPipeline pipeline;
//   pipeline.add(passes::PassPoint::AfterImport, passes::rewrite_pass("silu", {passes::silu_rule()}));
//   graph::Graph g = pipeline.run(passes::PassPoint::AfterImport, onnx_import::import_model(...).graph);
//
// The points, in pipeline order:
//   AfterImport    the graph as a front end made it (ONNX import, graph text, nn modules), before anything
//                  else; the place for model-level rewrites (x * sigmoid(x) -> silu), which autograd then
//                  differentiates in their rewritten form
//   AfterAutograd  the joint graph: forward, backward and optimizer update (spire graph grad, training)
//   BeforeFusion   inside lowering, after the canonical passes (canonical.h) and right before fusion: what the
//                  kernels will compute
// PassPoint::Canonical names where the canonical passes themselves run (between AfterAutograd and BeforeFusion); it
// is not among kPassPoints, the points a caller adds passes at.
//
// A pass is a named function from graph to graph. It must keep the graph's interface (interface.h): the
// pipeline checks that after every pass, and with `verify` set also runs graph::verify() on the input and
// after every pass; either problem throws a GraphError naming the pass and its point.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph/graph.h"
#include "passes/rewrite.h"

namespace spire::passes {

enum class PassPoint : uint8_t { AfterImport, AfterAutograd, BeforeFusion, Canonical };
inline constexpr std::array<PassPoint, 3> kPassPoints = {PassPoint::AfterImport, PassPoint::AfterAutograd,
                                                         PassPoint::BeforeFusion};

std::string_view pass_point_name(PassPoint p);  // "after_import", "after_autograd", "before_fusion", "canonical"
std::optional<PassPoint> pass_point_from_name(std::string_view name);

struct Pass {
  std::string name;
  std::function<graph::Graph(const graph::Graph&)> run;
};

// A pass that applies `rules` to a fixed point (apply_rules).
Pass rewrite_pass(std::string name, std::vector<Rule> rules, RewriteOptions opt = {});

// Called after each pass with the graph it returned (e.g. --dump writes it to a file).
using PassObserver = std::function<void(PassPoint point, const Pass& pass, const graph::Graph& after)>;

class PassPipeline {
 public:
#ifdef NDEBUG
  static constexpr bool kVerifyByDefault = false;
#else
  static constexpr bool kVerifyByDefault = true;
#endif
  // Run graph::verify() before the first pass of a point and after every pass (the tests set it).
  bool verify = kVerifyByDefault;

  // Appends a pass at a point; passes of one point run in the order added. Throws GraphError for a pass
  // without a name or a function.
  PassPipeline& add(PassPoint point, Pass pass);

  const std::vector<Pass>& at(PassPoint point) const { return passes_[size_t(point)]; }
  bool empty(PassPoint point) const { return at(point).empty(); }
  bool empty() const;

  // Runs the passes of `point` in order on `g` and returns the result (g itself when the point has none).
  graph::Graph run(PassPoint point, graph::Graph g, const PassObserver& observer = {}) const;

 private:
  std::array<std::vector<Pass>, kPassPoints.size() + 1> passes_;  // and PassPoint::Canonical's
};

}  // namespace spire::passes
