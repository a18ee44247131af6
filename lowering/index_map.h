// Index arithmetic shared by the kernel templates: how a kernel finds an input element from the linear
// index of the element it computes, for broadcasting, permutes and reductions.
//
// Shapes are static, so a map is a short list of terms with constant divisors, moduli and strides:
//   input_index = sum over terms of ((linear / divisor) % modulus) * stride
// built from the output's shape and the input's stride along each output dimension (0 where the input is
// broadcast). Dimensions of size 1 are dropped and neighbours that stay contiguous in the input are merged,
// so the common cases collapse: same shape -> linear, scalar -> 0, bias over rows -> linear % C.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph/graph.h"
#include "ir/kernel/builder.h"

namespace spire::lowering {

// A gather's data as [outer, rows, inner] around its axis, and its `count` indices.
struct GatherDims {
  int64_t outer = 1, rows = 1, count = 1, inner = 1;
};
GatherDims gather_dims(const graph::Shape& data, int64_t axis, int64_t count);
// The row an index names: negative indices count from the end; `ok` is false outside the axis (the row is then 0).
kir::Val wrapped_row(kir::Val index, int64_t rows, kir::Val* ok);

struct IndexTerm {
  int64_t divisor = 1;  // 1: no division
  int64_t modulus = 0;  // 0: no modulus (the outermost term, where linear < total already bounds it)
  int64_t stride = 1;
};

struct IndexMap {
  std::vector<IndexTerm> terms;  // empty: always element 0

  bool is_identity() const {
    return terms.size() == 1 && terms[0].divisor == 1 && terms[0].modulus == 0 && terms[0].stride == 1;
  }
  // Builds the map of a linear index over `sizes` (row-major) to sum(coord[d] * strides[d]).
  static IndexMap strided(const graph::Shape& sizes, const std::vector<int64_t>& strides);
  // The map of an output element to the element of `input` that numpy broadcasting reads.
  static IndexMap broadcast(const graph::Shape& output, const graph::Shape& input);
  // The input element a permute's output element reads: result dim i is input dim perm[i].
  static IndexMap permuted(const graph::Shape& input, const std::vector<int64_t>& perm);

  // The index as kernel arithmetic on a u32 linear index.
  kir::Val emit(kir::KernelBuilder& kb, kir::Val linear) const;
  // "i", "0", "(i/33)%7*1+..." for plans and kernel names' uniqueness.
  std::string to_string() const;
};

// Row-major strides of a shape (elements).
std::vector<int64_t> row_major_strides(const graph::Shape& s);

// "7x33", "s" for a scalar: a fragment of kernel names (identifier-safe).
std::string shape_tag(const graph::Shape& s);

}  // namespace spire::lowering
