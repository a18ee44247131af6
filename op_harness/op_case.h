// An op harness case as data: the op under test, its inputs' types and how their values are drawn, and how to
// build the op on them. Graph-level only, so that lowering's op table (lowering/op_lowering.h) can name each
// op's cases and a test can hold every lowered op to having some; the harness that runs them on devices is
// op_harness.h.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph/graph.h"

namespace spire::harness {

// How an input's random values are drawn.
enum class Draw : uint8_t {
  Uniform,         // uniform in [lo, hi]
  AwayFromZero,    // uniform in [lo, hi] with a random sign (divisors)
  Integers,        // whole numbers in [lo, hi] (ties for compare and max; exact integer inputs)
  Bools,           // 0 or 1
};

struct OpInput {
  graph::TensorType type;
  Draw draw = Draw::Uniform;
  double lo = -1, hi = 1;
};

struct OpCase {
  graph::OpKind op;                 // the op under test
  std::string label;                // its inputs and attributes: "f32[7,33], f32[33]"
  std::vector<OpInput> inputs;      // fed as in0, in1, ...
  // Appends the op to g given the input values; returns its result.
  std::function<graph::Value(graph::Graph&, const std::vector<graph::Value>&)> build;
  bool backward = true;             // also check the gradients of every float input
};

using Build = std::function<graph::Value(graph::Graph&, const std::vector<graph::Value>&)>;

// What a case file (op_harness/cases_*.cpp) appends its cases to.
class CaseList {
 public:
  void add(graph::OpKind op, std::vector<OpInput> inputs, Build build, const std::string& attrs = "",
           bool backward = true);
  // The op by its name in the op table, built on the inputs with these attributes (labelled `label`).
  void add(std::string_view op, std::vector<OpInput> inputs, graph::Attrs attrs, const std::string& label = "",
           bool backward = true);
  std::vector<OpCase> take() { return std::move(cases_); }

 private:
  std::vector<OpCase> cases_;
};

// A family's case list, as lowering's op table names it.
using CaseFn = void (*)(CaseList& cl);

inline OpInput in(graph::DType t, graph::Shape s, Draw d = Draw::Uniform, double lo = -1, double hi = 1) {
  return {{t, std::move(s)}, d, lo, hi};
}
inline OpInput f32(graph::Shape s, double lo = -1, double hi = 1) {
  return in(graph::DType::F32, std::move(s), Draw::Uniform, lo, hi);
}
inline OpInput f64(graph::Shape s, double lo = -1, double hi = 1) {
  return in(graph::DType::F64, std::move(s), Draw::Uniform, lo, hi);
}
inline std::string ints(const std::vector<int64_t>& v) { return graph::shape_to_string(v); }

}  // namespace spire::harness
