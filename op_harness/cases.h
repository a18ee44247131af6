// Internal to the op harness: how the case files (cases_*.cpp) list their cases.
#pragma once

#include <string>
#include <vector>

#include <fmt/format.h>

#include "op_harness/op_harness.h"

namespace spire::harness {

using graph::DType;
using graph::Graph;
using graph::OpKind;
using graph::Shape;
using graph::Value;
using Build = std::function<Value(Graph&, const std::vector<Value>&)>;

inline OpInput in(DType t, Shape s, Draw d = Draw::Uniform, double lo = -1, double hi = 1) {
  return {{t, std::move(s)}, d, lo, hi};
}
inline OpInput f32(Shape s, double lo = -1, double hi = 1) { return in(DType::F32, std::move(s), Draw::Uniform, lo, hi); }
inline OpInput f64(Shape s, double lo = -1, double hi = 1) { return in(DType::F64, std::move(s), Draw::Uniform, lo, hi); }
inline std::string ints(const std::vector<int64_t>& v) { return graph::shape_to_string(v); }

class CaseList {
 public:
  void add(OpKind op, std::vector<OpInput> inputs, Build build, const std::string& attrs = "", bool backward = true) {
    std::string label;
    for (const auto& i : inputs) label += (label.empty() ? "" : ", ") + i.type.to_string();
    if (!attrs.empty()) label += " " + attrs;
    cases_.push_back({op, std::move(label), std::move(inputs), std::move(build), backward});
  }
  std::vector<OpCase> take() { return std::move(cases_); }

 private:
  std::vector<OpCase> cases_;
};

// One function per case file.
void generated_pointwise_cases(CaseList& cl);  // cases_generated.cpp: from the op table's test domains
void pointwise_cases(CaseList& cl);            // cases_pointwise.cpp: constants, compare, where, cast
void reduction_cases(CaseList& cl);            // cases_reduction.cpp
void layout_cases(CaseList& cl);               // cases_layout.cpp
void indexing_cases(CaseList& cl);             // cases_indexing.cpp
void heavy_cases(CaseList& cl);                // cases_heavy.cpp
void half_cases(CaseList& cl);                 // cases_half.cpp: f16 and bf16

}  // namespace spire::harness
