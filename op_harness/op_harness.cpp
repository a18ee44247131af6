#include "op_harness/op_harness.h"

#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>

#include <fmt/format.h>

#include "autograd/grad.h"
#include "ir/graph/evaluator.h"
#include "ir/graph/op_table.h"
#include "ir/graph/tensor.h"
#include "lowering/custom_kernels.h"
#include "lowering/executable.h"
#include "lowering/lowering_context.h"
#include "lowering/op_lowering.h"
#include "op_harness/cases.h"

namespace spire::harness {

std::string_view outcome_name(Outcome o) {
  switch (o) {
    case Outcome::Pass: return "pass";
    case Outcome::Fail: return "FAIL";
    case Outcome::Skip: return "skip";
  }
  return "?";
}

namespace {

uint64_t label_hash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a: the same seed on every platform
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

graph::Tensor draw(const OpInput& in, std::mt19937_64& rng) {
  graph::Tensor t(in.type.dtype, in.type.shape);
  std::uniform_real_distribution<double> u(in.lo, in.hi);
  std::uniform_int_distribution<int64_t> k(int64_t(in.lo), int64_t(in.hi));
  std::bernoulli_distribution coin(0.5);
  for (double& v : t.data) {
    switch (in.draw) {
      case Draw::Uniform: v = u(rng); break;
      case Draw::AwayFromZero: v = coin(rng) ? u(rng) : -u(rng); break;
      case Draw::Integers: v = double(k(rng)); break;
      case Draw::Bools: v = coin(rng) ? 1 : 0; break;
    }
  }
  return t.round_to_dtype();
}


}  // namespace

// Max-norm relative error (op_table.h's Tolerance).
double max_norm_error(const graph::Tensor& got, const graph::Tensor& want) {
  double max_ref = 0, max_diff = 0;
  for (size_t i = 0; i < want.data.size(); ++i) {
    double w = want.data[i], d = got.data[i];
    if (std::isnan(w)) {
      if (!std::isnan(d)) return std::numeric_limits<double>::infinity();
      continue;
    }
    if (std::isinf(w)) {
      if (d != w) return std::numeric_limits<double>::infinity();
      continue;
    }
    if (!std::isfinite(d)) return std::numeric_limits<double>::infinity();
    max_ref = std::max(max_ref, std::abs(w));
    max_diff = std::max(max_diff, std::abs(d - w));
  }
  return max_diff / std::max(1.0, max_ref);
}

namespace {

// The features the graph's dtypes need that `dev` lacks (float64, float16, bfloat16): a case refused for
// one of these is skipped, not failed; any other refusal fails.
kir::Features dtype_features_missing(const Graph& g, const rt::Device& dev) {
  kir::Features needed;
  for (const auto& n : g.nodes())
    if (graph::is_float(n.type.dtype) && n.type.dtype != DType::F32)
      needed |= kir::features_for_type(lowering::device_type(n.type.dtype));
  return needed.missing_from(dev.info().features);
}

}  // namespace

const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> all = [] {
    CaseList cl;
    generated_pointwise_cases(cl);
    pointwise_cases(cl);
    half_pointwise_cases(cl);
    // Each family's list once, though several of its ops' entries name it.
    std::set<CaseFn> listed;
    for (const lowering::OpLowering& e : lowering::op_lowerings())
      if (e.cases && listed.insert(e.cases).second) e.cases(cl);
    return cl.take();
  }();
  return all;
}

double dot_product_error(const graph::Tensor& got, const graph::Tensor& want, const graph::Tensor& magnitude) {
  if (max_norm_error(got, want) == std::numeric_limits<double>::infinity()) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (size_t i = 0; i < want.data.size(); ++i) {
    const double err = std::abs(got.data[i] - want.data[i]);
    if (err == 0) continue;
    // An element whose terms are all zero has no rounding to blame: any error there is infinite.
    worst = std::max(worst, magnitude.data[i] > 0 ? err / magnitude.data[i] : std::numeric_limits<double>::infinity());
  }
  return worst;
}

namespace {

// Ops whose results are sums of products of one element of each input (matmul, conv2d), and so are their
// gradients: what the tf32 policy changes, and what the dot-product bound holds (op_harness.h).
bool is_dot_product_op(graph::OpKind op) { return op == graph::OpKind::Matmul || op == graph::OpKind::Conv2d; }

bool is_half_policy(Precision p) { return p == Precision::Bf16 || p == Precision::F16; }

// Whether every float input of the case is f32: what the bf16 and f16 policies store in half (a case already in f16,
// bf16 or f64 they leave alone).
bool f32_case(const OpCase& c) {
  for (const auto& in : c.inputs)
    if (graph::is_float(in.type.dtype) && in.type.dtype != DType::F32) return false;
  return true;
}

}  // namespace

std::vector<OpRow> run_op_case(const OpCase& c, rt::Device& dev, uint64_t seed, Precision precision) {
  OpRow base;
  base.op = std::string(graph::op_name(c.op));
  base.label = c.label;
  base.device = dev.info().id;
  auto single = [&](std::string check, Outcome o, std::string note) {
    OpRow r = base;
    r.check = std::move(check);
    r.outcome = o;
    r.note = std::move(note);
    if (o == Outcome::Fail) r.max_error = std::numeric_limits<double>::infinity();
    return std::vector<OpRow>{r};
  };

  // A custom op whose only kernel is SPIR-V (GLSL) cannot run through PTX: not a wrong result, a device the op
  // was not written for.
  if (graph::is_user_op(c.op) && dev.info().backend != rt::Backend::Vulkan)
    if (const lowering::CustomKernel* k = lowering::custom_kernel(c.op); k && !k->spirv_module.empty())
      return single("all", Outcome::Skip, fmt::format("a GLSL kernel ({}): runs on Vulkan devices only", k->source));

  // bf16 and f16 store every f32 value in half: an op other than a product or convolution then sees its inputs rounded,
  // an error its condition sets, which no op tolerance states. Their documented bound is the dot product's.
  if (is_half_policy(precision) && !is_dot_product_op(c.op) && f32_case(c))
    return single("all", Outcome::Skip,
                  fmt::format("--precision {}: the harness holds matmul and conv2d to its dot-product bound; other ops "
                              "are not checked under it",
                              precision_name(precision)));

  // The graph: in0.. -> op -> y; for a float y, loss = sum(y * loss_weight) and its gradients.
  Graph g;
  std::vector<Value> inputs;
  std::map<std::string, graph::Tensor> feed;
  std::mt19937_64 rng(seed ^ label_hash(base.op + " " + c.label));
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    std::string name = fmt::format("in{}", k);
    inputs.push_back(g.input(name, c.inputs[k].type.dtype, c.inputs[k].type.shape));
    feed[name] = draw(c.inputs[k], rng);
  }
  std::vector<std::pair<std::string, bool>> checks;  // output name, is a gradient
  try {
    Value y = c.build(g, inputs);
    g.output("y", y);
    checks.push_back({"y", false});
    const graph::TensorType& yt = g.type(y);
    if (c.backward && graph::is_float(yt.dtype)) {
      std::vector<Value> wrt;
      std::vector<std::string> names;
      for (size_t k = 0; k < inputs.size(); ++k)
        if (graph::is_float(c.inputs[k].type.dtype)) {
          wrt.push_back(inputs[k]);
          names.push_back(fmt::format("in{}", k));
        }
      if (!wrt.empty()) {
        Value w = g.input("loss_weight", yt.dtype, yt.shape);
        feed["loss_weight"] = draw({yt, Draw::Uniform, -1, 1}, rng);
        Value loss = g.sum(g.mul(y, w));
        auto grads = autograd::grad(g, loss, wrt);
        for (size_t k = 0; k < grads.size(); ++k) {
          g.output("grad." + names[k], grads[k]);
          checks.push_back({"grad." + names[k], true});
        }
      }
    }
  } catch (const std::exception& e) {
    return single("build", Outcome::Fail, fmt::format("building the graph failed: {}", e.what()));
  }

  std::map<std::string, graph::Tensor> want;
  try {
    want = graph::evaluate(g, feed, DType::F64);
  } catch (const std::exception& e) {
    return single("reference", Outcome::Fail, fmt::format("the reference evaluator failed: {}", e.what()));
  }

  // Under a policy other than fp32, a dot-product op is held to the policy's bound relative to each element's
  // sum |a_i| |b_i|: the same graph on the inputs' absolute values (every result and gradient of such an op is
  // linear in each input, so that evaluates exactly those sums). Its longest sum is at most the largest input's size.
  const bool dot_bound =
      precision != Precision::Fp32 && is_dot_product_op(c.op) && (!is_half_policy(precision) || f32_case(c));
  std::map<std::string, graph::Tensor> magnitude;
  int64_t longest = 1;
  if (dot_bound) {
    std::map<std::string, graph::Tensor> absolute = feed;
    for (auto& [name, t] : absolute) {
      for (double& x : t.data) x = std::abs(x);
      longest = std::max<int64_t>(longest, t.numel());
    }
    magnitude = graph::evaluate(g, absolute, DType::F64);
  }

  std::map<std::string, graph::Tensor> got;
  try {
    auto exe = lowering::compile(g, dev, {.precision = precision});
    for (const auto& [name, t] : feed) exe->set(name, t);
    exe->step();
    for (const auto& [name, is_grad] : checks) got[name] = exe->get(name);
  } catch (const rt::MissingFeature& e) {
    if (kir::Features missing = dtype_features_missing(g, dev); missing.bits != 0)
      return single("all", Outcome::Skip, fmt::format("{} has no {}", dev.info().id, kir::features_to_string(missing)));
    return single("all", Outcome::Fail, e.what());
  } catch (const std::exception& e) {
    return single("all", Outcome::Fail, e.what());
  }

  std::vector<OpRow> rows;
  for (const auto& [name, is_grad] : checks) {
    OpRow r = base;
    r.check = is_grad ? "grad " + name.substr(5) : "forward";
    const graph::Tensor& w = want.at(name);
    const graph::Tensor& d = got.at(name);
    if (d.shape != w.shape || d.dtype != w.dtype) {
      r.outcome = Outcome::Fail;
      r.max_error = std::numeric_limits<double>::infinity();
      r.note = fmt::format("device gave {}, reference {}", d.type().to_string(), w.type().to_string());
    } else {
      if (dot_bound) {
        r.max_error = dot_product_error(d, w, magnitude.at(name));
        r.tolerance = precision_dot_bound(precision, longest);
      } else {
        r.max_error = max_norm_error(d, w);
        r.tolerance = graph::op_tolerance(c.op, is_grad, w.dtype);
      }
      r.outcome = r.max_error <= r.tolerance ? Outcome::Pass : Outcome::Fail;
      if (std::isinf(r.max_error)) r.note = "NaN, infinity or an unwritten (poisoned) element";
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

std::string format_row_header() {
  return fmt::format("{:<20} {:<52} {:<10} {:<10} {:>11} {:>9}  {}", "op", "inputs", "device", "check", "max error",
                     "tolerance", "result");
}

std::string format_row(const OpRow& r) {
  std::string err = r.outcome == Outcome::Skip ? "-" : fmt::format("{:.3g}", r.max_error);
  std::string s = fmt::format("{:<20} {:<52} {:<10} {:<10} {:>11} {:>9.3g}  {}", r.op, r.label, r.device, r.check, err,
                              r.tolerance, outcome_name(r.outcome));
  if (!r.note.empty()) s += "  (" + r.note + ")";
  return s;
}

}  // namespace spire::harness