#include "lowering/lowering_context.h"

namespace spire::lowering {

kir::Type device_type(graph::DType t) {
  switch (t) {
    case graph::DType::Bool: return kir::Type::U32;
    case graph::DType::I32: return kir::Type::I32;
    case graph::DType::U32: return kir::Type::U32;
    case graph::DType::I64: return kir::Type::I32;  // range-checked on upload (device_bytes.cpp)
    case graph::DType::F32: return kir::Type::F32;
    case graph::DType::F64: return kir::Type::F64;
    case graph::DType::F16: return kir::Type::F16;
    case graph::DType::BF16: return kir::Type::BF16;
  }
  return kir::Type::F32;
}

}  // namespace spire::lowering
