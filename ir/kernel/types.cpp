#include "ir/kernel/types.h"

namespace spire::kir {

std::string_view type_name(Type t) {
  switch (t) {
    case Type::Bool: return "bool";
    case Type::I32: return "i32";
    case Type::U32: return "u32";
    case Type::I64: return "i64";
    case Type::F16: return "f16";
    case Type::F32: return "f32";
    case Type::F64: return "f64";
    case Type::BF16: return "bf16";
  }
  return "?";
}

uint32_t type_bytes(Type t) {
  switch (t) {
    case Type::Bool: return 0;
    case Type::F16: case Type::BF16: return 2;
    case Type::I32: case Type::U32: case Type::F32: return 4;
    case Type::I64: case Type::F64: return 8;
  }
  return 0;
}

bool is_float(Type t) { return t == Type::F16 || t == Type::F32 || t == Type::F64 || t == Type::BF16; }
bool is_int(Type t) { return t == Type::I32 || t == Type::U32 || t == Type::I64; }
bool is_signed_int(Type t) { return t == Type::I32 || t == Type::I64; }

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

Features features_for_type(Type t) {
  switch (t) {
    case Type::F16: return Feature::Float16;
    case Type::BF16: return Feature::BFloat16;
    case Type::F64: return Feature::Float64;
    case Type::I64: return Feature::Int64;
    default: return {};
  }
}

}  // namespace spire::kir
