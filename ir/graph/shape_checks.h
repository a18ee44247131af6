// The checks shape rules share: each throws GraphError through ShapeContext::fail() with a message that names
// the op, the node and the offending input or attribute. Used by shape_rules.cpp and the family files of
// ir/graph/ops/ that define their ops' shape rules themselves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph/op_table.h"

namespace spire::graph::shape_checks {

void require_float(const ShapeContext& c, size_t i);                 // f32, f64, f16 or bf16
void require_numeric(const ShapeContext& c, size_t i);               // not bool
void require_same_dtype(const ShapeContext& c, size_t i, size_t j);  // no implicit promotion
void require_rank(const ShapeContext& c, size_t i, int64_t rank, const char* layout);
void require_shape(const ShapeContext& c, size_t i, const Shape& expected, const char* why);
void require_int(const ShapeContext& c, size_t i, const char* what);   // i32 or i64 (labels, indices)
void require_axis(const ShapeContext& c, size_t i, int64_t axis);     // 0 <= axis < input i's rank

// An ints attribute of exactly `n` entries, each >= `min`.
const std::vector<int64_t>& ints_attr(const ShapeContext& c, const char* name, size_t n, int64_t min);
// A shape attribute: every dimension >= 0.
Shape shape_attr(const ShapeContext& c, const char* name);
// Output size of a sliding window of extent k_eff along one dimension; fails when the window does not fit.
int64_t window_out(const ShapeContext& c, const char* what, int64_t in, int64_t k_eff, int64_t stride, int64_t pad);

}  // namespace spire::graph::shape_checks
