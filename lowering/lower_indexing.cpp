// Kernels of the indexing ops (ir/graph/ops/indexing.cpp): slice, pad, concat, gather, gather_grad, write_at. Each is one
// invocation per written element with every size a constant; indices are computed in i32 (a slice may step
// backwards) and every load is clamped into its buffer before a select discards what was out of range.
#include <functional>

#include <fmt/format.h>

#include "lowering/fuse.h"
#include "lowering/kernel_templates.h"
#include "lowering/op_lowering.h"
#include "op_harness/cases.h"

namespace spire::lowering {

using kir::Type;
using kir::Val;

namespace {

void check_count(const graph::Node& n, int64_t count) {
  if (count > int64_t(INT32_MAX))
    throw graph::GraphError(fmt::format("{} '{}': {} elements exceed the 2^31 an indexing kernel addresses",
                                        graph::op_name(n.op), n.name, count));
}

// (i / divisor) % modulus, as i32.
Val coordinate(Val i, int64_t divisor, int64_t modulus) {
  Val c = divisor == 1 ? i : i / uint32_t(divisor);
  return kir::cast(c % uint32_t(modulus), Type::I32);
}

std::string name_of(const graph::Graph& g, const graph::Node& n) {
  std::string s = fmt::format("{}_{}_{}", graph::op_name(n.op), graph::dtype_name(n.type.dtype), shape_tag(n.type.shape));
  for (graph::Value in : n.inputs) s += "_" + shape_tag(g.type(in).shape);
  return s;
}



// What slice and pad share: one input x, and an embedding (starts, steps) of the smaller tensor in the larger.
struct Embedding {
  const graph::Node& node;
  graph::Shape in;
  std::vector<int64_t> starts, steps, in_strides, out_strides;
};

// One invocation per result element of a one-input op: body(kb, i, x, y, embedding) writes y[i].
template <class Body>
void per_result_element(LoweringContext& ctx, graph::Value v, Body&& body) {
  const graph::Graph& g = ctx.graph();
  const graph::Node& n = g.node(v);
  Embedding e{n, g.type(n.inputs[0]).shape, n.attrs.get_ints("starts"), n.attrs.get_ints("steps"), {}, {}};
  e.in_strides = row_major_strides(e.in);
  e.out_strides = row_major_strides(n.type.shape);
  const int64_t count = n.type.numel();
  if (count == 0) return;
  check_count(n, std::max(count, graph::num_elements(e.in)));
  const Type t = device_type(n.type.dtype);
  kir::KernelBuilder kb(name_of(g, n), kPointwiseWorkgroup);
  kir::Buf x = kb.buffer("x", t, kir::Access::Read);
  kir::Buf y = kb.buffer("y", t, kir::Access::Write);
  Val i = kb.global_id();
  kb.if_(i < kb.u32(uint32_t(count)), [&] { body(kb, i, x, y, e); });
  ctx.launch(kb.finish(), {ctx.buffer_of(n.inputs[0]), ctx.buffer_of(v)}, {}, groups_for(count, kPointwiseWorkgroup));
}


// Where a slice's result is one contiguous range of its input, the element that range starts at: the dimensions after
// some dimension d are taken whole, those before it one index each, and d a run with step 1. Else -1.
int64_t contiguous_start(const graph::Shape& in, const graph::Shape& out, const std::vector<int64_t>& starts,
                         const std::vector<int64_t>& steps) {
  size_t d = in.size();
  while (d > 0 && out[d - 1] == in[d - 1] && (steps[d - 1] == 1 || out[d - 1] == 1)) --d;
  if (d > 0 && out[d - 1] > 1 && steps[d - 1] != 1) return -1;
  for (size_t j = 0; j + 1 < d; ++j)
    if (out[j] != 1) return -1;
  int64_t start = 0, stride = 1;
  for (size_t j = in.size(); j-- > 0;) {
    start += starts[j] * stride;
    stride *= in[j];
  }
  return start;
}

// A contiguous slice is a window of its input's buffer and launches nothing, where the device's binding alignment
// allows (a fused query/key/value projection's three parts); else a launch copies it.
void lower_slice(LoweringContext& ctx, graph::Value v) {
  const graph::Graph& g = ctx.graph();
  const graph::Node& n = g.node(v);
  const int64_t start = contiguous_start(g.type(n.inputs[0]).shape, n.type.shape, n.attrs.get_ints("starts"),
                                         n.attrs.get_ints("steps"));
  if (start >= 0 && n.type.numel() > 0 && ctx.view(v, n.inputs[0], start)) return;
  per_result_element(ctx, v, [](kir::KernelBuilder& kb, Val i, kir::Buf x, kir::Buf y, const Embedding& e) {
    const graph::Shape& out = e.node.type.shape;
    int64_t base = 0;
    for (size_t d = 0; d < e.in.size(); ++d) base += e.starts[d] * e.in_strides[d];
    Val src = kb.i32(int32_t(base));
    for (size_t d = 0; d < e.in.size(); ++d)
      if (out[d] > 1) src = src + coordinate(i, e.out_strides[d], out[d]) * int32_t(e.steps[d] * e.in_strides[d]);
    y[i] = x[kir::cast(src, Type::U32)];
  });
}

void lower_pad(LoweringContext& ctx, graph::Value v) {
  per_result_element(ctx, v, [](kir::KernelBuilder& kb, Val i, kir::Buf x, kir::Buf y, const Embedding& e) {
    const graph::Shape& out = e.node.type.shape;
    Val fill = kb.constant(device_type(e.node.type.dtype), e.node.attrs.get_float("value"));
    if (graph::num_elements(e.in) == 0) {
      y[i] = fill;
      return;
    }
    Val ok = kb.boolean(true);
    Val src = kb.i32(0);
    for (size_t d = 0; d < e.in.size(); ++d) {
      // This output coordinate relative to where the input starts, walked in the input's direction.
      const int64_t step = e.steps[d] < 0 ? -e.steps[d] : e.steps[d];
      Val rel = coordinate(i, e.out_strides[d], out[d]) - int32_t(e.starts[d]);
      if (e.steps[d] < 0) rel = -rel;
      Val k = step == 1 ? rel : rel / int32_t(step);
      Val hit = (rel >= 0) & (k < int32_t(e.in[d]));
      if (step != 1) hit = hit & (rel % int32_t(step) == 0);
      ok = ok & hit;
      src = src + kir::select(hit, k, kb.i32(0)) * int32_t(e.in_strides[d]);
    }
    y[i] = kir::select(ok, x[kir::cast(src, Type::U32)].load(), fill);
  });
}

// A concat of at most this many inputs is one launch; more would bind more buffers than some devices give a kernel.
constexpr size_t kConcatOneLaunchInputs = 8;

void lower_concat(LoweringContext& ctx, graph::Value v) {
  const graph::Graph& g = ctx.graph();
  const graph::Node& n = g.node(v);
  const size_t axis = size_t(n.attrs.get_int("axis"));
  check_count(n, n.type.numel());
  int64_t inner = 1;
  for (size_t d = axis + 1; d < n.type.shape.size(); ++d) inner *= n.type.shape[d];
  const int64_t out_block = n.type.shape[axis] * inner;
  const Type t = device_type(n.type.dtype);
  std::vector<graph::Value> parts;  // the inputs with elements, and where along the axis each starts
  std::vector<int64_t> starts;
  int64_t offset = 0;
  for (graph::Value part : n.inputs) {
    if (g.type(part).numel() > 0) parts.push_back(part), starts.push_back(offset);
    offset += g.type(part).shape[axis];
  }
  if (parts.size() <= kConcatOneLaunchInputs) {
    // One invocation per result element, reading the one input its position along the axis falls in.
    const int64_t total = n.type.numel();
    if (total == 0) return;
    std::string shapes;
    for (graph::Value part : parts) shapes += "_" + shape_tag(g.type(part).shape);
    kir::KernelBuilder kb(fmt::format("concat_{}{}_to_{}", graph::dtype_name(n.type.dtype), shapes, shape_tag(n.type.shape)),
                          kPointwiseWorkgroup);
    std::vector<kir::Buf> xs;
    for (size_t p = 0; p < parts.size(); ++p) xs.push_back(kb.buffer(fmt::format("x{}", p), t, kir::Access::Read));
    kir::Buf y = kb.buffer("y", t, kir::Access::Write);
    Val i = kb.global_id();
    kb.if_(i < kb.u32(uint32_t(total)), [&] {
      Val outer = i / uint32_t(out_block), at = (i % uint32_t(out_block)) / uint32_t(inner), rest = i % uint32_t(inner);
      // Inputs from the last: each that starts at or before `at` takes over, so the last such one is read.
      std::function<void(size_t)> from = [&](size_t p) {
        const int64_t rows = g.type(parts[p]).shape[axis];
        auto copy = [&, p, rows] {
          y[i] = xs[p][(outer * uint32_t(rows) + (at - uint32_t(starts[p]))) * uint32_t(inner) + rest].load();
        };
        if (p == 0) copy();
        else kb.if_else(at >= uint32_t(starts[p]), copy, [&] { from(p - 1); });
      };
      from(parts.size() - 1);
    });
    std::vector<int32_t> buffers;
    for (graph::Value part : parts) buffers.push_back(ctx.buffer_of(part));
    buffers.push_back(ctx.buffer_of(v));
    ctx.launch(kb.finish(), std::move(buffers), {}, groups_for(total, kPointwiseWorkgroup));
    return;
  }
  // One launch per input, each copying its block of rows into place: out = outer * out_block + offset + rest.
  for (size_t p = 0; p < parts.size(); ++p) {
    const graph::Value part = parts[p];
    const int64_t rows = g.type(part).shape[axis], count = g.type(part).numel(), block = rows * inner;
    kir::KernelBuilder kb(fmt::format("concat_part_{}_{}_at{}_of_{}", graph::dtype_name(n.type.dtype),
                                      shape_tag(g.type(part).shape), starts[p], shape_tag(n.type.shape)),
                          kPointwiseWorkgroup);
    kir::Buf x = kb.buffer("x", t, kir::Access::Read);
    kir::Buf y = kb.buffer("y", t, kir::Access::Write);
    Val i = kb.global_id();
    kb.if_(i < kb.u32(uint32_t(count)), [&] {
      Val outer = i / uint32_t(block), rest = i % uint32_t(block);
      y[outer * uint32_t(out_block) + uint32_t(starts[p] * inner) + rest] = x[i];
    });
    ctx.launch(kb.finish(), {ctx.buffer_of(part), ctx.buffer_of(v)}, {}, groups_for(count, kPointwiseWorkgroup));
  }
}



// A kernel of one invocation per element of v's `total` elements that reads input 0 (bound as `in_name`) and the
// i32 indices of input 1 and writes v; `element` emits invocation i's work.
void launch_indexed(LoweringContext& ctx, graph::Value v, const char* in_name, Type t, int64_t total,
                    const std::function<void(kir::KernelBuilder& kb, kir::Buf in, kir::Buf idx, kir::Buf y, Val i)>& element) {
  const graph::Graph& g = ctx.graph();
  const graph::Node& n = g.node(v);
  kir::KernelBuilder kb(name_of(g, n), kPointwiseWorkgroup);
  kir::Buf in = kb.buffer(in_name, t, kir::Access::Read);
  kir::Buf idx = kb.buffer("indices", Type::I32, kir::Access::Read);
  kir::Buf y = kb.buffer("y", t, kir::Access::Write);
  Val i = kb.global_id();
  kb.if_(i < kb.u32(uint32_t(total)), [&] { element(kb, in, idx, y, i); });
  ctx.launch(kb.finish(), {ctx.buffer_of(n.inputs[0]), ctx.buffer_of(n.inputs[1]), ctx.buffer_of(v)}, {},
             groups_for(total, kPointwiseWorkgroup));
}


void lower_gather(LoweringContext& ctx, graph::Value v) {
  const graph::Graph& g = ctx.graph();
  const graph::Node& n = g.node(v);
  const graph::Shape& data = g.type(n.inputs[0]).shape;
  const int64_t total = n.type.numel();
  if (total == 0) return;
  check_count(n, std::max(total, graph::num_elements(data)));
  const GatherDims d = gather_dims(data, n.attrs.get_int("axis"), g.type(n.inputs[1]).numel());
  launch_indexed(ctx, v, "data", device_type(n.type.dtype), total, [&](kir::KernelBuilder& kb, kir::Buf x, kir::Buf idx,
                                                                       kir::Buf y, Val i) {
    Val outer = i / uint32_t(d.count * d.inner);
    Val k = (i / uint32_t(d.inner)) % uint32_t(d.count);
    Val rest = i % uint32_t(d.inner);
    Val ok;
    Val row = kir::cast(wrapped_row(idx[k].load(), d.rows, &ok), Type::U32);
    Val value = x[(outer * uint32_t(d.rows) + row) * uint32_t(d.inner) + rest].load();
    // An index outside the axis reads 0 (the reference refuses it). Half values are only converted in kernels, so the
    // choice is made on the value widened to f32 (exactly) and rounded back (exactly).
    if (is_half(x.elem()))
      y[i] = kir::cast(kir::select(ok, kir::cast(value, Type::F32), kb.f32(0.0f)), x.elem());
    else
      y[i] = kir::select(ok, value, kb.constant(x.elem(), 0));
  });
}

// Each data element sums, in index order, the gradients of every position whose index names its row: a loop
// over the indices instead of atomics, so the sum is deterministic.
void lower_gather_grad(LoweringContext& ctx, graph::Value v) {
  const graph::Graph& g = ctx.graph();
  const graph::Node& n = g.node(v);
  const int64_t total = n.type.numel();
  if (total == 0) return;
  check_count(n, std::max(total, g.type(n.inputs[0]).numel()));
  const GatherDims d = gather_dims(n.type.shape, n.attrs.get_int("axis"), g.type(n.inputs[1]).numel());
  launch_indexed(ctx, v, "grad", device_type(n.type.dtype), total, [&](kir::KernelBuilder& kb, kir::Buf grad,
                                                                       kir::Buf idx, kir::Buf y, Val i) {
    Val outer = i / uint32_t(d.rows * d.inner);
    Val row = kir::cast((i / uint32_t(d.inner)) % uint32_t(d.rows), Type::I32);
    Val rest = i % uint32_t(d.inner);
    kir::Var acc = kb.var("acc", kb.constant(grad.elem(), 0));
    kb.for_(kb.u32(0), kb.u32(uint32_t(d.count)), [&](Val k) {
      Val ok;
      Val named = wrapped_row(idx[k].load(), d.rows, &ok);
      kb.if_(ok & (named == row), [&] {
        acc += grad[(outer * uint32_t(d.count) + k) * uint32_t(d.inner) + rest].load();
      });
    });
    y[i] = acc.get();
  });
}

// write_at(data, row, index; axis): in place where fuse.h's writes_state_in_place says so, else data is copied into the
// result first; then one launch writes the row.
void lower_write_at(LoweringContext& ctx, graph::Value v) {
  const graph::Graph& g = ctx.graph();
  const graph::Node& n = g.node(v);
  const graph::Shape& shape = n.type.shape;
  const size_t axis = size_t(n.attrs.get_int("axis"));
  check_count(n, n.type.numel());
  int64_t inner = 1;
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t rows = shape[axis], count = g.type(n.inputs[1]).numel();
  const Type t = device_type(n.type.dtype);
  if (writes_state_in_place(g, v)) {
    ctx.alias(v, n.inputs[0]);
  } else if (n.type.numel() > 0) {
    ctx.launch(copy_kernel(t, n.type.numel()), {ctx.buffer_of(n.inputs[0]), ctx.buffer_of(v)}, {},
               groups_for(n.type.numel(), kPointwiseWorkgroup));
  }
  if (count == 0) return;
  // The row, or the slice it was cut from (fuse.h's absorbed slices): element i of the row is the slice input's
  // element at the slice's starts plus i's coordinates.
  graph::Value row_source = n.inputs[1];
  std::vector<int64_t> starts;
  if (ctx.fused(row_source)) {
    starts = g.node(row_source).attrs.get_ints("starts");
    row_source = g.node(row_source).inputs[0];
  }
  const graph::Shape& row_shape = g.type(n.inputs[1]).shape;
  const graph::Shape& source_shape = g.type(row_source).shape;
  kir::KernelBuilder kb(fmt::format("write_at_{}_{}_axis{}{}", graph::dtype_name(n.type.dtype), shape_tag(shape), axis,
                                    starts.empty() ? "" : "_from_" + shape_tag(source_shape)),
                        kPointwiseWorkgroup);
  kir::Buf row = kb.buffer("row", t, kir::Access::Read);
  kir::Buf idx = kb.buffer("index", Type::I32, kir::Access::Read);
  // Read and written: the elements outside the row keep what the buffer holds (the state, or the copy above).
  kir::Buf y = kb.buffer("y", t, kir::Access::ReadWrite);
  Val i = kb.global_id();
  kb.if_(i < kb.u32(uint32_t(count)), [&] {
    Val index = idx[0u].load();
    // An index outside the axis writes nothing (the reference refuses it).
    kb.if_((index >= 0) & (index < int32_t(rows)), [&] {
      Val at = (i / uint32_t(inner) * uint32_t(rows) + kir::cast(index, Type::U32)) * uint32_t(inner) + i % uint32_t(inner);
      Val from = i;
      if (!starts.empty()) {
        // i's coordinates in the row, each offset by the slice's start, in the source's row-major strides.
        from = kb.u32(0);
        int64_t row_stride = 1, source_stride = 1;
        for (size_t d = row_shape.size(); d-- > 0;) {
          Val coordinate = i / uint32_t(row_stride) % uint32_t(row_shape[d]);
          from = from + (coordinate + uint32_t(starts[d])) * uint32_t(source_stride);
          row_stride *= row_shape[d];
          source_stride *= source_shape[d];
        }
      }
      y[at] = row[from].load();
    });
  });
  ctx.launch(kb.finish(), {ctx.buffer_of(row_source), ctx.buffer_of(n.inputs[2]), ctx.buffer_of(v)}, {},
             groups_for(count, kPointwiseWorkgroup));
}

}  // namespace

std::vector<OpLowering> indexing_lowerings() {
  return {
      {.op = "slice", .lower = lower_slice, .cases = harness::indexing_cases},
      {.op = "pad", .lower = lower_pad, .cases = harness::indexing_cases},
      {.op = "concat", .lower = lower_concat, .cases = harness::indexing_cases},
      {.op = "gather", .lower = lower_gather, .cases = harness::indexing_cases},
      {.op = "gather_grad", .lower = lower_gather_grad, .cases = harness::indexing_cases},
      {.op = "write_at", .lower = lower_write_at, .cases = harness::indexing_cases},
  };
}

}  // namespace spire::lowering
