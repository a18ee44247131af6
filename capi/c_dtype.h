// The C API's element types (include/spire/spire.h's spire_dtype, a stable public enum) from the tree's one dtype
// (base/dtype.h): the one place the two are mapped.
#pragma once

#include "base/dtype.h"
#include "spire/spire.h"

namespace spire::capi {

// U32, the device form of bools and of words a kernel reinterprets, is reported as I32.
inline spire_dtype c_dtype(DType t) {
  switch (t) {
    case DType::F32: return SPIRE_DTYPE_F32;
    case DType::F64: return SPIRE_DTYPE_F64;
    case DType::I32: case DType::U32: return SPIRE_DTYPE_I32;
    case DType::I64: return SPIRE_DTYPE_I64;
    case DType::Bool: return SPIRE_DTYPE_BOOL;
    case DType::F16: return SPIRE_DTYPE_F16;
    case DType::BF16: return SPIRE_DTYPE_BF16;
  }
  return SPIRE_DTYPE_F32;
}

}  // namespace spire::capi
