#include "lowering/index_map.h"
#include "base/axis_rows.h"

#include <stdexcept>

#include <fmt/format.h>

namespace spire::lowering {

std::vector<int64_t> row_major_strides(const graph::Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

std::string shape_tag(const graph::Shape& s) {
  if (s.empty()) return "s";
  std::string out;
  for (size_t d = 0; d < s.size(); ++d) out += (d ? "x" : "") + std::to_string(s[d]);
  return out;
}

IndexMap IndexMap::strided(const graph::Shape& sizes, const std::vector<int64_t>& strides) {
  if (sizes.size() != strides.size()) throw std::logic_error("IndexMap::strided: sizes and strides differ in rank");
  // Merge from the innermost dimension outwards; size-1 dimensions contribute nothing.
  struct Dim { int64_t size, stride; };
  std::vector<Dim> merged;  // innermost first
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] == 1) continue;
    Dim cur{sizes[d], strides[d]};
    if (!merged.empty() && cur.stride == merged.back().stride * merged.back().size) {
      merged.back().size *= cur.size;  // contiguous with the inner one (also: both broadcast, stride 0)
      continue;
    }
    merged.push_back(cur);
  }
  IndexMap m;
  int64_t divisor = 1;
  for (size_t k = 0; k < merged.size(); ++k) {
    bool outermost = k + 1 == merged.size();
    if (merged[k].stride != 0) m.terms.push_back({divisor, outermost ? 0 : merged[k].size, merged[k].stride});
    divisor *= merged[k].size;
  }
  return m;
}

IndexMap IndexMap::broadcast(const graph::Shape& output, const graph::Shape& input) {
  if (input.size() > output.size()) throw std::logic_error("IndexMap::broadcast: input of higher rank than output");
  std::vector<int64_t> in_strides = row_major_strides(input);
  std::vector<int64_t> strides(output.size(), 0);
  size_t lead = output.size() - input.size();
  for (size_t d = 0; d < input.size(); ++d) {
    if (input[d] == output[lead + d]) strides[lead + d] = in_strides[d];
    else if (input[d] != 1)
      throw std::logic_error(fmt::format("IndexMap::broadcast: {} does not broadcast to {}", graph::shape_to_string(input),
                                         graph::shape_to_string(output)));
  }
  return strided(output, strides);
}

IndexMap IndexMap::permuted(const graph::Shape& input, const std::vector<int64_t>& perm) {
  std::vector<int64_t> in_strides = row_major_strides(input);
  graph::Shape out(perm.size());
  std::vector<int64_t> strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    out[i] = input[size_t(perm[i])];
    strides[i] = in_strides[size_t(perm[i])];
  }
  return strided(out, strides);
}

GatherDims gather_dims(const graph::Shape& data, int64_t axis, int64_t count) {
  const AxisRows rows = axis_rows(data, axis, "gather");
  GatherDims d;
  d.outer = rows.outer;
  d.rows = rows.axis;
  d.inner = rows.inner;
  d.count = count;
  return d;
}

kir::Val wrapped_row(kir::Val index, int64_t rows, kir::Val* ok) {
  kir::Val row = kir::select(index < 0, index + int32_t(rows), index);
  *ok = (row >= 0) & (row < int32_t(rows));
  return kir::select(*ok, row, kir::like(row, 0));
}

kir::Val IndexMap::emit(kir::KernelBuilder& kb, kir::Val linear) const {
  using kir::Type;
  if (terms.empty()) return kb.u32(0);
  kir::Val sum;
  for (const IndexTerm& t : terms) {
    kir::Val v = linear;
    if (t.divisor != 1) v = v / kb.u32(uint32_t(t.divisor));
    if (t.modulus != 0) v = v % kb.u32(uint32_t(t.modulus));
    if (t.stride != 1) v = v * kb.u32(uint32_t(t.stride));
    sum = sum.valid() ? sum + v : v;
  }
  return sum;
}

std::string IndexMap::to_string() const {
  if (terms.empty()) return "0";
  std::string s;
  for (const IndexTerm& t : terms) {
    if (!s.empty()) s += " + ";
    std::string v = "i";
    if (t.divisor != 1) v = fmt::format("{}/{}", v, t.divisor);
    if (t.modulus != 0) v = fmt::format("({})%{}", v, t.modulus);
    if (t.stride != 1) v = fmt::format("{}*{}", v, t.stride);
    s += v;
  }
  return s;
}

}  // namespace spire::lowering
