#include "base/features.h"

namespace spire {

std::string_view feature_name(Feature f) {
  switch (f) {
    case Feature::None: return "none";
    case Feature::Float16: return "float16";
    case Feature::Float64: return "float64";
    case Feature::Int64: return "int64";
    case Feature::AtomicAddInt: return "atomic-add-int";
    case Feature::AtomicAddF32: return "atomic-add-f32";
    case Feature::SubgroupShuffle: return "subgroup-shuffle";
    case Feature::BFloat16: return "bfloat16";
    case Feature::CooperativeMatrix: return "cooperative-matrix";
    case Feature::AsyncCopy: return "async-copy";
    case Feature::WarpgroupMatrix: return "warpgroup-matrix";
    case Feature::WorkgroupMatrix: return "workgroup-matrix";
    case Feature::TensorCopy: return "tensor-copy";
  }
  return "?";
}

std::string features_to_string(Features f) {
  std::string out;
  for (uint32_t bit = 1; bit != 0 && bit <= f.bits; bit <<= 1) {
    if (f.bits & bit) {
      if (!out.empty()) out += ", ";
      out += feature_name(Feature(bit));
    }
  }
  return out.empty() ? "none" : out;
}

Features features_for_type(DType t) {
  switch (t) {
    case DType::F16: return Feature::Float16;
    case DType::BF16: return Feature::BFloat16;
    case DType::F64: return Feature::Float64;
    case DType::I64: return Feature::Int64;
    default: return {};
  }
}

}  // namespace spire
