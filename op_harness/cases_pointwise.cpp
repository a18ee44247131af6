// The pointwise cases the op table cannot generate: constants folded into kernels or read as buffers, every
// compare mode with ties, where with bool conditions and broadcasting, cast between every dtype pair.
#include "op_harness/cases.h"

namespace spire::harness {

namespace {

void compare_cases(CaseList& cl) {
  for (auto mode : {graph::CompareMode::Lt, graph::CompareMode::Le, graph::CompareMode::Gt, graph::CompareMode::Ge,
                    graph::CompareMode::Eq, graph::CompareMode::Ne}) {
    Build build = [mode](Graph& g, const std::vector<Value>& x) { return g.compare(x[0], x[1], mode); };
    std::string attrs = fmt::format("mode={}", graph::compare_mode_name(mode));
    // Small integers (as floats) make ties common, so eq/le/ge see both answers.
    cl.add(OpKind::Compare, {in(DType::F32, {7, 33}, Draw::Integers, -3, 3), in(DType::F32, {33}, Draw::Integers, -3, 3)},
           build, attrs);
    cl.add(OpKind::Compare, {in(DType::I32, {257}, Draw::Integers, -3, 3), in(DType::I32, {}, Draw::Integers, -3, 3)},
           build, attrs);
  }
  cl.add(OpKind::Compare, {in(DType::F64, {7, 1}, Draw::Integers, -3, 3), in(DType::F64, {1, 33}, Draw::Integers, -3, 3)},
         [](Graph& g, const std::vector<Value>& x) { return g.compare(x[0], x[1], graph::CompareMode::Le); }, "mode=le");
}


void where_cast_cases(CaseList& cl) {
  Build where = [](Graph& g, const std::vector<Value>& x) { return g.where(x[0], x[1], x[2]); };
  cl.add(OpKind::Where, {in(DType::Bool, {7, 33}, Draw::Bools), f32({7, 33}), f32({7, 33})}, where);
  cl.add(OpKind::Where, {in(DType::Bool, {7, 1}, Draw::Bools), f32({33}), f32({7, 33})}, where);
  cl.add(OpKind::Where, {in(DType::Bool, {257}, Draw::Bools), f32({257}), f32({})}, where);
  cl.add(OpKind::Where, {in(DType::Bool, {7, 33}, Draw::Bools), f64({33}), f64({7, 1})}, where);
  cl.add(OpKind::Where,
         {in(DType::Bool, {33}, Draw::Bools), in(DType::I64, {7, 33}, Draw::Integers, -9, 9), in(DType::I64, {}, Draw::Integers, -9, 9)},
         where);

  auto cast = [&](OpInput from, DType to) {
    cl.add(OpKind::Cast, {from}, [to](Graph& g, const std::vector<Value>& x) { return g.cast(x[0], to); },
           fmt::format("to={}", graph::dtype_name(to)));
  };
  cast(f32({7, 33}, -10, 10), DType::I32);   // truncation toward zero
  cast(f32({257}, -10, 10), DType::I64);
  cast(in(DType::F32, {7, 33}, Draw::Integers, -1, 1), DType::Bool);
  cast(in(DType::I32, {7, 33}, Draw::Integers, -1000, 1000), DType::F32);
  cast(in(DType::I64, {257}, Draw::Integers, -1000, 1000), DType::F32);
  cast(in(DType::I64, {33}, Draw::Integers, -1000, 1000), DType::I32);
  cast(in(DType::I32, {33}, Draw::Integers, -2, 2), DType::Bool);
  cast(in(DType::Bool, {7, 33}, Draw::Bools), DType::F32);
  cast(in(DType::Bool, {33}, Draw::Bools), DType::I64);
  cast(f32({7, 33}), DType::F64);
  cast(f64({7, 33}, -1e3, 1e3), DType::F32);
  cast(f64({33}, -10, 10), DType::I32);
}


}  // namespace

void pointwise_cases(CaseList& cl) {
  // Constants feeding pointwise kernels are folded into them; one feeding a heavy op gets a buffer filled once
  // at compile time.
  cl.add(OpKind::Constant, {f32({7, 33})},
         [](Graph& g, const std::vector<Value>& x) { return g.add(x[0], g.constant(2.5, DType::F32, {7, 33})); },
         "+ constant 2.5 of shape [7,33] (folded)");
  cl.add(OpKind::Constant, {f32({7, 33})},
         [](Graph& g, const std::vector<Value>& x) { return g.matmul(x[0], g.constant(-0.5, DType::F32, {33, 5})); },
         "matmul by constant -0.5 of shape [33,5] (a buffer)");
  cl.add(OpKind::Constant, {f32({257})}, [](Graph& g, const std::vector<Value>& x) { return g.mul(x[0], -3.0); },
         "* scalar constant -3");
  compare_cases(cl);
  where_cast_cases(cl);
}

}  // namespace spire::harness
