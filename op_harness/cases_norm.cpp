// layer_norm and rms_norm: rows shorter than a workgroup, rows of several elements per invocation (kept in
// registers), a long row read again in each pass, a row length no power of two divides, f64, and f16/bf16 (computed
// in float32, rounded once).
#include <string_view>

#include <fmt/ranges.h>

#include "op_harness/cases.h"

namespace spire::harness {

void norm_cases(CaseList& cl) {
  for (const char* op : {"layer_norm", "rms_norm"}) {
    const bool center = std::string_view(op) == "layer_norm";
    auto add = [&](DType t, Shape x) {
      std::vector<OpInput> inputs{in(t, x, Draw::Uniform, -3, 3), in(t, {x.back()}, Draw::Uniform, 0.5, 1.5)};
      if (center) inputs.push_back(in(t, {x.back()}, Draw::Uniform, -1, 1));
      cl.add(op, std::move(inputs), {{"epsilon", 1e-5}}, fmt::format("{}", fmt::join(x, "x")));
    };
    add(DType::F32, {3, 20});
    add(DType::F32, {2, 5, 768});
    add(DType::F32, {2, 3000});
    add(DType::F32, {4, 97});
    add(DType::F64, {3, 33});
    for (DType t : kHalfTypes) add(t, {3, 64});
  }
}

}  // namespace spire::harness
