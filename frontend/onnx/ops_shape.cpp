// Shape and layout ops: Shape Size Reshape Flatten Transpose Squeeze Unsqueeze Concat Slice Split Expand
// Tile Gather Pad Identity Dropout. Each computes its result's shape from attributes and constant inputs
// (refused when those are computed at run time), then either folds on the host (every input constant) or
// emits graph ops (Concat, Slice, Split, Gather and Pad: the graph's concat, slice, gather and pad ops).
#include <algorithm>
#include <cstdint>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "frontend/onnx/host_tensor.h"
#include "frontend/onnx/node_context.h"

namespace spire::onnx_import {
namespace {

// Bounds on values read from the model, so that shape arithmetic never overflows int64.
constexpr int64_t kMaxDim = int64_t(1) << 40;

// ceil(a / b) for a >= 0, b > 0, without the overflow of (a + b - 1) / b.
int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

Tensor reshaped(Tensor t, Shape s) {
  t.shape = std::move(s);
  return t;
}

// Either fold (constant input 0) or emit a reshape of input 0 to `shape`.
void reshape_to(NodeContext& c, const Shape& shape) {
  if (const Tensor* t = c.constant(0)) c.set_output(0, reshaped(*t, shape));
  else c.set_output(0, c.g().reshape(c.value(0), shape));
}

// The graph's slice op: y[i] = x[starts + i * steps] with `counts` elements per dimension.
Value emit_slice(NodeContext& c, Value x, const std::vector<int64_t>& starts, const std::vector<int64_t>& steps,
                 const Shape& counts) {
  return c.g().op("slice", {x}, {{"starts", starts}, {"steps", steps}, {"shape", counts}});
}

// ---- Reshape

Shape reshape_target(NodeContext& c) {
  const Shape in = c.type(0).shape;
  Shape s = c.require_ints(1, "the target shape");
  const bool allowzero = c.attr_int("allowzero", 0) != 0;
  int64_t known = 1, infer = -1;
  for (size_t d = 0; d < s.size(); ++d) {
    if (s[d] == 0 && !allowzero) {
      if (d >= in.size()) c.refuse("a 0 in the target shape refers to a dimension the input lacks");
      s[d] = in[d];
    }
    if (s[d] == -1) {
      if (infer >= 0) c.refuse("more than one -1 in the target shape");
      infer = int64_t(d);
    } else if (s[d] < 0) {
      c.refuse(fmt::format("target shape {} has a negative dimension", graph::shape_to_string(s)));
    } else {
      if (s[d] > kMaxDim || (s[d] > 0 && known > kMaxDim / s[d])) c.refuse("the target shape is too large");
      known *= s[d];
    }
  }
  const int64_t total = c.type(0).numel();
  if (infer >= 0) {
    if (known == 0 || total % known != 0)
      c.refuse(fmt::format("cannot reshape {} to {}", graph::shape_to_string(in), graph::shape_to_string(s)));
    s[size_t(infer)] = total / known;
  }
  if (graph::num_elements(s) != total)
    c.refuse(fmt::format("cannot reshape {} to {}", graph::shape_to_string(in), graph::shape_to_string(s)));
  return s;
}

// ---- Squeeze / Unsqueeze: axes from the attribute before opset 13, from input 1 since.

std::vector<int64_t> axes_of(NodeContext& c, bool required) {
  if (c.opset() < 13) return c.attr_ints("axes");
  if (!c.has_input(1)) {
    if (required) c.refuse("axes input is required");
    return {};
  }
  return c.require_ints(1, "axes");
}

Shape squeezed(NodeContext& c) {
  const Shape in = c.type(0).shape;
  const auto axes = axes_of(c, false);
  std::vector<bool> drop(in.size(), false);
  if (axes.empty()) {
    for (size_t d = 0; d < in.size(); ++d) drop[d] = in[d] == 1;
  }
  for (int64_t a : axes) {
    const int64_t d = normalize_axis(c, a, int64_t(in.size()));
    if (in[size_t(d)] != 1) c.refuse(fmt::format("cannot squeeze axis {} of size {}", d, in[size_t(d)]));
    drop[size_t(d)] = true;
  }
  Shape s;
  for (size_t d = 0; d < in.size(); ++d)
    if (!drop[d]) s.push_back(in[d]);
  return s;
}

Shape unsqueezed(NodeContext& c) {
  const Shape in = c.type(0).shape;
  const auto axes = axes_of(c, true);
  const int64_t rank = int64_t(in.size() + axes.size());
  std::vector<bool> added(size_t(rank), false);
  for (int64_t a : axes) {
    const int64_t d = normalize_axis(c, a, rank);
    if (added[size_t(d)]) c.refuse("repeated axis");
    added[size_t(d)] = true;
  }
  Shape s;
  size_t k = 0;
  for (int64_t d = 0; d < rank; ++d) s.push_back(added[size_t(d)] ? 1 : in[k++]);
  return s;
}

Shape flattened(NodeContext& c) {
  const Shape in = c.type(0).shape;
  const int64_t rank = int64_t(in.size());
  int64_t axis = c.attr_int("axis", 1);
  if (axis < -rank || axis > rank) c.refuse(fmt::format("axis {} out of range for rank {}", axis, rank));
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : inner) *= in[size_t(d)];
  return {outer, inner};
}

std::vector<int64_t> perm_of(NodeContext& c) {
  const int64_t rank = c.type(0).rank();
  std::vector<int64_t> rev;
  for (int64_t d = rank - 1; d >= 0; --d) rev.push_back(d);
  auto perm = c.attr_ints("perm", rev);
  if (int64_t(perm.size()) != rank) c.refuse("perm has the wrong length");
  std::vector<bool> seen(size_t(rank), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[size_t(p)]) c.refuse(fmt::format("perm {} is not a permutation", perm));
    seen[size_t(p)] = true;
  }
  return perm;
}

// ---- Slice: per-dim start, step and count with ONNX's clamping.

struct SliceSpec {
  std::vector<int64_t> starts, steps;
  Shape counts;
  bool identity = true;
};

SliceSpec slice_spec(NodeContext& c) {
  const Shape in = c.type(0).shape;
  const int64_t rank = int64_t(in.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset() < 10) {
    starts = c.attr_ints("starts");
    ends = c.attr_ints("ends");
    axes = c.attr_ints("axes");
  } else {
    starts = c.require_ints(1, "starts");
    ends = c.require_ints(2, "ends");
    if (c.has_input(3)) axes = c.require_ints(3, "axes");
    if (c.has_input(4)) steps = c.require_ints(4, "steps");
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    c.refuse("starts, ends, axes and steps differ in length");
  SliceSpec s;
  s.starts.assign(size_t(rank), 0);
  s.steps.assign(size_t(rank), 1);
  s.counts = in;
  std::vector<bool> seen(size_t(rank), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t a = normalize_axis(c, axes[i], rank);
    if (seen[size_t(a)]) c.refuse("repeated axis");
    seen[size_t(a)] = true;
    const int64_t dim = in[size_t(a)], step = steps[i];
    if (step == 0) c.refuse("step 0");
    int64_t b = starts[i], e = ends[i];
    if (b < 0) b = b < -dim ? 0 : b + dim;  // (clamping before adding avoids overflow at INT64_MIN)
    if (e < 0) e = e < -dim ? -1 : e + dim;
    int64_t count;
    if (step > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      count = e > b ? ceil_div(e - b, step) : 0;
    } else {
      b = std::clamp<int64_t>(b, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      count = b > e ? ceil_div(b - e, step == INT64_MIN ? INT64_MAX : -step) : 0;
    }
    s.starts[size_t(a)] = count > 0 ? b : 0;
    s.steps[size_t(a)] = step;
    s.counts[size_t(a)] = count;
    if (count != dim || (count > 1 && step != 1) || (count > 0 && b != 0)) s.identity = false;
  }
  return s;
}

// ---- Split sizes

std::vector<int64_t> split_sizes(NodeContext& c, int64_t dim) {
  std::vector<int64_t> sizes;
  if (c.opset() >= 13 && c.has_input(1)) sizes = c.require_ints(1, "split");
  else if (c.opset() < 13) sizes = c.attr_ints("split");
  const int64_t n = c.num_outputs();
  if (sizes.empty()) {
    const int64_t parts = c.attr_int("num_outputs", n);
    if (parts <= 0 || parts != n) c.refuse("num_outputs differs from the number of outputs");
    const int64_t chunk = (dim + parts - 1) / parts;
    for (int64_t i = 0; i < parts; ++i) sizes.push_back(std::clamp<int64_t>(dim - i * chunk, 0, chunk));
  }
  if (int64_t(sizes.size()) != n) c.refuse("the number of split sizes differs from the number of outputs");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) c.refuse("negative split size");
    if (s > dim) c.refuse(fmt::format("split size {} exceeds the dim {}", s, dim));
    total += s;
  }
  if (total != dim) c.refuse(fmt::format("split sizes {} do not add up to {}", sizes, dim));
  return sizes;
}

Shape expand_target(NodeContext& c) {
  const Shape want = c.require_ints(1, "the shape");
  auto s = graph::broadcast_shapes(c.type(0).shape, want);
  if (!s) c.refuse(fmt::format("cannot expand {} to {}", graph::shape_to_string(c.type(0).shape), graph::shape_to_string(want)));
  return *s;
}

// Tile as reshape [1,d0,1,d1,...] -> broadcast [r0,d0,r1,d1,...] -> reshape [r0*d0, r1*d1, ...].
struct TileSpec {
  Shape interleaved, broadcast, result;
};
TileSpec tile_spec(NodeContext& c) {
  const Shape in = c.type(0).shape;
  const auto reps = c.require_ints(1, "repeats");
  if (reps.size() != in.size()) c.refuse("repeats must have one entry per dimension");
  TileSpec t;
  for (size_t d = 0; d < in.size(); ++d) {
    if (reps[d] < 0 || reps[d] > kMaxDim) c.refuse("repeat out of range");
    t.interleaved.insert(t.interleaved.end(), {1, in[d]});
    t.broadcast.insert(t.broadcast.end(), {reps[d], in[d]});
    t.result.push_back(reps[d] * in[d]);
  }
  checked_numel(t.result);
  return t;
}

std::vector<int64_t> pads_of(NodeContext& c, int64_t rank) {
  std::vector<int64_t> pads = c.opset() < 11 ? c.attr_ints("pads") : c.require_ints(1, "pads");
  if (c.opset() >= 18 && c.has_input(3)) c.refuse("the axes input is not supported");
  if (int64_t(pads.size()) != 2 * rank) c.refuse(fmt::format("pads has {} entries, not {}", pads.size(), 2 * rank));
  for (int64_t p : pads)
    if (p > kMaxDim || p < -kMaxDim) c.refuse("pads out of range");
  return pads;
}

void pass_through(NodeContext& c) {
  if (const Tensor* t = c.constant(0)) c.set_output(0, *t);
  else c.set_output(0, c.value(0));
}

// Pad's edge, reflect and wrap modes: along each padded axis, output position o reads the input row that the mode
// names for o - before (clamped to the ends, mirrored about them without repeating the end row, or taken modulo the
// length), a gather with indices known at import. Negative pads crop through the same rule (their rows are inside).
void pad_by_source_rows(NodeContext& c, const std::vector<int64_t>& pads, const std::string& mode) {
  const Shape in = c.type(0).shape;
  const int64_t rank = int64_t(in.size());
  Shape out = in;
  for (int64_t d = 0; d < rank; ++d) {
    out[size_t(d)] = in[size_t(d)] + pads[size_t(d)] + pads[size_t(d + rank)];
    if (out[size_t(d)] < 0) c.refuse("pads crop more than the tensor holds");
    if (out[size_t(d)] > 0 && in[size_t(d)] == 0) c.refuse(fmt::format("mode '{}' pads an empty axis {}", mode, d));
  }
  checked_numel(out);
  const Tensor* x = c.constant(0);
  Value v = x ? Value{} : c.value(0);
  Tensor folded = x ? *x : Tensor{};
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t n = in[size_t(d)], before = pads[size_t(d)];
    if (before == 0 && pads[size_t(d + rank)] == 0) continue;
    Tensor rows(graph::DType::I64, {out[size_t(d)]});
    for (int64_t o = 0; o < out[size_t(d)]; ++o) {
      int64_t s = o - before;
      if (mode == "edge") {
        s = std::clamp<int64_t>(s, 0, n - 1);
      } else if (mode == "wrap") {
        s = ((s % n) + n) % n;
      } else if (n == 1) {  // reflect of one row: that row
        s = 0;
      } else {
        const int64_t period = 2 * (n - 1);
        s = ((s % period) + period) % period;
        if (s >= n) s = period - s;
      }
      rows.data[size_t(o)] = double(s);
    }
    if (x) folded = host_gather(folded, rows, d);
    else v = c.g().op("gather", {v, c.constant_value(rows, fmt::format("{}.rows{}", c.node().output(0), d))}, {{"axis", d}});
  }
  if (x) c.set_output(0, folded);
  else c.set_output(0, v);
}

}  // namespace

void register_shape_ops(OpTable& t) {
  // Shape and Size read only the (static) type: always constants.
  auto shape = [](NodeContext& c) {
    const Shape in = c.type(0).shape;
    const int64_t rank = int64_t(in.size());
    auto clampi = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
    const int64_t b = clampi(c.attr_int("start", 0)), e = clampi(c.attr_int("end", rank));
    std::vector<double> dims;
    for (int64_t d = b; d < e; ++d) dims.push_back(double(in[size_t(d)]));
    c.set_output(0, Tensor::from(DType::I64, {int64_t(dims.size())}, dims));
  };
  t["Shape"] = {shape, shape};
  auto size = [](NodeContext& c) { c.set_output(0, Tensor::scalar(DType::I64, double(c.type(0).numel()))); };
  t["Size"] = {size, size};

  t["Reshape"] = {[](NodeContext& c) { reshape_to(c, reshape_target(c)); },
                  [](NodeContext& c) { reshape_to(c, reshape_target(c)); }};
  t["Flatten"] = {[](NodeContext& c) { reshape_to(c, flattened(c)); }, [](NodeContext& c) { reshape_to(c, flattened(c)); }};
  t["Squeeze"] = {[](NodeContext& c) { reshape_to(c, squeezed(c)); }, [](NodeContext& c) { reshape_to(c, squeezed(c)); }};
  t["Unsqueeze"] = {[](NodeContext& c) { reshape_to(c, unsqueezed(c)); },
                    [](NodeContext& c) { reshape_to(c, unsqueezed(c)); }};
  t["Transpose"] = {[](NodeContext& c) { c.set_output(0, c.g().permute(c.value(0), perm_of(c))); },
                    [](NodeContext& c) { c.set_output(0, host_permute(*c.constant(0), perm_of(c))); }};
  // DepthToSpace (modes DCR and CRD) and SpaceToDepth: a reshape to six dims, a permute, a reshape back.
  t["DepthToSpace"] = {[](NodeContext& c) {
                         const Shape x = c.type(0).shape;
                         const int64_t b = c.attr_int("blocksize", 0);
                         if (x.size() != 4 || b < 1 || x[1] % (b * b) != 0)
                           c.refuse("DepthToSpace needs [N, C, H, W] with C a multiple of blocksize^2");
                         const bool crd = c.attr_string("mode", "DCR") == "CRD";
                         const int64_t n = x[0], ch = x[1] / (b * b), h = x[2], w = x[3];
                         auto& g = c.g();
                         const Value six = g.reshape(c.value(0), crd ? Shape{n, ch, b, b, h, w} : Shape{n, b, b, ch, h, w});
                         const Value moved = g.permute(six, crd ? std::vector<int64_t>{0, 1, 4, 2, 5, 3}
                                                                : std::vector<int64_t>{0, 3, 4, 1, 5, 2});
                         c.set_output(0, g.reshape(moved, {n, ch, h * b, w * b}));
                       },
                       {}};
  t["SpaceToDepth"] = {[](NodeContext& c) {
                         const Shape x = c.type(0).shape;
                         const int64_t b = c.attr_int("blocksize", 0);
                         if (x.size() != 4 || b < 1 || x[2] % b != 0 || x[3] % b != 0)
                           c.refuse("SpaceToDepth needs [N, C, H, W] with H and W multiples of blocksize");
                         const int64_t n = x[0], ch = x[1], h = x[2] / b, w = x[3] / b;
                         auto& g = c.g();
                         const Value moved = g.permute(g.reshape(c.value(0), {n, ch, h, b, w, b}), {0, 3, 5, 1, 2, 4});
                         c.set_output(0, g.reshape(moved, {n, ch * b * b, h, w}));
                       },
                       {}};
  t["Identity"] = {pass_through, pass_through};
  t["Dropout"] = {[](NodeContext& c) {
                    if (c.has_input(2)) {
                      const Tensor& training = c.require_constant(2, "training_mode");
                      // Training with ratio 0 drops nothing; any other ratio draws random numbers.
                      double ratio = 0.5;
                      if (c.has_input(1)) {
                        const Tensor& r = c.require_constant(1, "ratio");
                        if (r.data.size() == 1) ratio = r.data[0];
                      }
                      if (!training.data.empty() && training.data[0] != 0 && ratio != 0)
                        c.refuse("training_mode=true with a non-zero ratio (random dropout) is not supported");
                    }
                    pass_through(c);
                    // Inference keeps every element: the mask is all true.
                    if (c.output_used(1)) c.set_output(1, c.g().constant(1.0, DType::Bool, c.type(0).shape));
                  },
                  {}};

  t["Expand"] = {[](NodeContext& c) {
                   const Shape s = expand_target(c);
                   c.set_output(0, s == c.type(0).shape ? c.value(0) : c.g().broadcast_to(c.value(0), s));
                 },
                 [](NodeContext& c) { c.set_output(0, host_broadcast_to(*c.constant(0), expand_target(c))); }};
  t["Tile"] = {[](NodeContext& c) {
                 const TileSpec s = tile_spec(c);
                 auto& g = c.g();
                 c.set_output(0, g.reshape(g.broadcast_to(g.reshape(c.value(0), s.interleaved), s.broadcast), s.result));
               },
               [](NodeContext& c) {
                 const TileSpec s = tile_spec(c);
                 c.set_output(0, reshaped(host_broadcast_to(reshaped(*c.constant(0), s.interleaved), s.broadcast), s.result));
               }};

  t["Concat"] = {[](NodeContext& c) {
                   const int64_t axis = normalize_axis(c, c.attr_int("axis", 0), c.type(0).rank());
                   // Empty pieces contribute nothing: a concat with one non-empty piece is that piece.
                   int nonempty = -1, count = 0;
                   for (int i = 0; i < c.num_inputs(); ++i)
                     if (c.type(i).shape.at(size_t(axis)) != 0) nonempty = i, ++count;
                   if (count == 1) return c.set_output(0, c.value(nonempty));
                   std::vector<Value> parts;
                   for (int i = 0; i < c.num_inputs(); ++i) parts.push_back(c.value(i));
                   c.set_output(0, c.g().op("concat", parts, {{"axis", axis}}));
                 },
                 [](NodeContext& c) {
                   const int64_t axis = normalize_axis(c, c.attr_int("axis", 0), c.type(0).rank());
                   std::vector<const Tensor*> xs;
                   for (int i = 0; i < c.num_inputs(); ++i) xs.push_back(c.constant(i));
                   c.set_output(0, host_concat(xs, axis));
                 }};
  t["Slice"] = {[](NodeContext& c) {
                  const SliceSpec s = slice_spec(c);
                  if (s.identity) return c.set_output(0, c.value(0));
                  if (const Tensor* x = c.constant(0)) return c.set_output(0, host_strided_slice(*x, s.starts, s.steps, s.counts));
                  c.set_output(0, emit_slice(c, c.value(0), s.starts, s.steps, s.counts));
                },
                [](NodeContext& c) {
                  const SliceSpec s = slice_spec(c);
                  c.set_output(0, host_strided_slice(*c.constant(0), s.starts, s.steps, s.counts));
                }};
  auto split = [](NodeContext& c) {
    const Shape in = c.type(0).shape;
    const int64_t axis = normalize_axis(c, c.attr_int("axis", 0), int64_t(in.size()));
    const auto sizes = split_sizes(c, in[size_t(axis)]);
    const Tensor* x = c.constant(0);
    if (!x && sizes.size() == 1) return c.set_output(0, c.value(0));
    std::vector<int64_t> starts(in.size(), 0), steps(in.size(), 1);
    for (size_t i = 0; i < sizes.size(); ++i) {
      Shape counts = in;
      counts[size_t(axis)] = sizes[i];
      if (x) c.set_output(int(i), host_strided_slice(*x, starts, steps, counts));
      else c.set_output(int(i), emit_slice(c, c.value(0), starts, steps, counts));
      starts[size_t(axis)] += sizes[i];
    }
  };
  t["Split"] = {split, split};
  auto gather = [](NodeContext& c) {
    const int64_t rank = c.type(0).rank();
    const int64_t axis = normalize_axis(c, c.attr_int("axis", 0), rank);
    if (!graph::is_int(c.type(1).dtype)) c.refuse("indices must be integers");
    const Tensor* known = c.constant(1);
    if (!known) {  // indices computed at run time: the graph op wraps negative ones
      c.set_output(0, c.g().op("gather", {c.value(0), c.value(1)}, {{"axis", axis}}));
      return;
    }
    Tensor idx = *known;
    const int64_t dim = c.type(0).shape[size_t(axis)];
    for (double& v : idx.data) {
      if (v < -double(dim) || v >= double(dim)) c.refuse(fmt::format("index {} is out of range for a dim of {}", v, dim));
      if (v < 0) v += double(dim);
    }
    if (const Tensor* x = c.constant(0)) return c.set_output(0, host_gather(*x, idx, axis));
    c.set_output(0, c.g().op("gather", {c.value(0), c.constant_value(idx, c.node().output(0) + ".indices")},
                             {{"axis", axis}}));
  };
  t["Gather"] = {gather, gather};
  auto pad = [](NodeContext& c) {
    const Shape in = c.type(0).shape;
    const int64_t rank = int64_t(in.size());
    const auto pads = pads_of(c, rank);
    const std::string mode = c.attr_string("mode", "constant");
    if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap")
      c.refuse(fmt::format("mode '{}' is not an ONNX Pad mode", mode));
    if (std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; })) return pass_through(c);
    if (mode != "constant") return pad_by_source_rows(c, pads, mode);
    const Tensor* x = c.constant(0);
    double fill = c.opset() < 11 ? c.attr_float("value", 0.0f) : 0.0;
    if (c.opset() >= 11 && c.has_input(2)) {
      const Tensor& v = c.require_constant(2, "constant_value");
      if (v.data.size() != 1) c.refuse("constant_value must be one value");
      fill = v.data[0];
    }
    // Negative pads crop: pad by the positive part, then slice away the negative part.
    Shape out(in.size());
    for (int64_t d = 0; d < rank; ++d) out[size_t(d)] = in[size_t(d)] + pads[size_t(d)] + pads[size_t(d + rank)];
    for (int64_t v : out)
      if (v < 0) c.refuse("pads crop more than the tensor holds");
    checked_numel(out);
    if (!x) {
      // Run time: crop the negative pads with a slice, then embed in a tensor of the fill value.
      const size_t r = static_cast<size_t>(rank);
      std::vector<int64_t> starts(r, 0), steps(r, 1), at(r, 0);
      Shape kept(r, 0);
      for (int64_t d = 0; d < rank; ++d) {
        const int64_t before = pads[size_t(d)], after = pads[size_t(d + rank)];
        starts[size_t(d)] = before < 0 ? -before : 0;
        kept[size_t(d)] = in[size_t(d)] - (before < 0 ? -before : 0) - (after < 0 ? -after : 0);
        at[size_t(d)] = before > 0 ? before : 0;
      }
      Value v = c.value(0);
      if (kept != in) v = emit_slice(c, v, starts, steps, kept);
      if (kept != out)
        v = c.g().op("pad", {v}, {{"starts", at}, {"steps", steps}, {"shape", out}, {"value", fill}});
      return c.set_output(0, v);
    }
    Tensor r(x->dtype, out, fill);
    const auto rs = r.strides();
    std::vector<int64_t> idx(in.size(), 0);
    for (int64_t i = 0; i < x->numel(); ++i) {
      int64_t off = 0;
      bool inside = true;
      for (int64_t d = 0; d < rank; ++d) {
        const int64_t o = idx[size_t(d)] + pads[size_t(d)];
        if (o < 0 || o >= out[size_t(d)]) inside = false;
        off += o * rs[size_t(d)];
      }
      if (inside) r.data[size_t(off)] = x->data[size_t(i)];
      for (size_t d = in.size(); d-- > 0;) {
        if (++idx[d] < in[d]) break;
        idx[d] = 0;
      }
    }
    c.set_output(0, r);
  };
  t["Pad"] = {pad, pad};
}

}  // namespace spire::onnx_import
