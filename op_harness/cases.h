// The case files (cases_*.cpp): one function per family, each appending its cases. Lowering's op table
// (lowering/op_lowering.h) names the family functions of the ops it lowers; the others (pointwise ops, whose
// kernel is generated, and constants) op_cases() calls itself.
#pragma once

#include <string>
#include <vector>

#include <fmt/format.h>

#include "op_harness/op_case.h"

namespace spire::harness {

using graph::DType;
using graph::Graph;
using graph::OpKind;
using graph::Shape;
using graph::Value;

// Ops without a lowering entry.
void generated_pointwise_cases(CaseList& cl);  // cases_generated.cpp: from the op table's test domains
void pointwise_cases(CaseList& cl);            // cases_pointwise.cpp: constants, compare, where, cast
void half_pointwise_cases(CaseList& cl);       // cases_half.cpp: the generated ones and the casts in f16 and bf16

// Ops with a lowering entry, named by it. Each family's list has its f16 and bf16 cases too.
void reduction_cases(CaseList& cl);            // cases_reduction.cpp: sum, mean, max
void layout_cases(CaseList& cl);               // cases_layout.cpp: reshape, flatten, permute, broadcast_to, sum_to
void indexing_cases(CaseList& cl);             // cases_indexing.cpp
void matmul_cases(CaseList& cl);               // cases_matmul.cpp
void conv2d_cases(CaseList& cl);               // cases_conv2d.cpp: conv2d and its gradients
void pool2d_cases(CaseList& cl);               // cases_pool2d.cpp: the poolings and their gradients
void argmax_cases(CaseList& cl);               // cases_argmax.cpp
void softmax_cases(CaseList& cl);              // cases_softmax.cpp
void norm_cases(CaseList& cl);                 // cases_norm.cpp
void cross_entropy_cases(CaseList& cl);        // cases_cross_entropy.cpp: the loss and its gradient
void int8_matmul_cases(CaseList& cl);          // cases_int8_matmul.cpp

// The half-precision dtypes every family's half cases run in.
inline constexpr DType kHalfTypes[] = {DType::F16, DType::BF16};

}  // namespace spire::harness
