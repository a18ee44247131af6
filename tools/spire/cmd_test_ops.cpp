// spire test-ops: the cross-backend op harness (op_harness/op_harness.h) as a table: every op of the graph IR,
// forward and backward, on one device or all of them, against the float64 reference evaluator.
#include <fmt/format.h>

#include <stdexcept>

#include "ir/graph/graph.h"
#include "op_harness/op_harness.h"
#include "runtime/device.h"
#include "runtime/device_ids.h"
#include "tools/spire/commands.h"
#include "tools/spire/precision_option.h"

namespace spire::cli {

namespace {

struct TestOpsOptions {
  std::string device;
  std::string op;
  uint64_t seed = 1;
  bool failures_only = false;
  Precision precision = Precision::Fp32;  // matmul and conv2d held to its bound (op_harness.h)
};

struct Totals {
  int pass = 0, fail = 0, skip = 0;
};

void run_on(rt::Device& dev, const TestOpsOptions& o, Totals& t) {
  // The built-in ops' cases, then those of the custom ops --ops loaded.
  std::vector<harness::OpCase> cases = harness::op_cases();
  for (auto& c : harness::custom_op_cases()) cases.push_back(std::move(c));
  for (const auto& c : cases) {
    if (!o.op.empty() && graph::op_name(c.op) != o.op) continue;
    for (const auto& r : harness::run_op_case(c, dev, o.seed, o.precision)) {
      (r.outcome == harness::Outcome::Pass ? t.pass : r.outcome == harness::Outcome::Fail ? t.fail : t.skip)++;
      if (!o.failures_only || r.outcome == harness::Outcome::Fail) fmt::print("{}\n", harness::format_row(r));
    }
  }
}

void run(const TestOpsOptions& o) {
  if (!o.op.empty() && !graph::op_from_name(o.op))
    throw std::runtime_error(fmt::format("--op {}: no op of that name (names as in the graph text form, e.g. add, "
                                         "conv2d, max_pool2d_grad)", o.op));
  // "all" or one name (open_device's errors name a bad one and list those present).
  const std::vector<std::string> ids = o.device == "all" ? rt::device_ids("all") : std::vector{o.device};
  std::vector<std::unique_ptr<rt::Device>> devices;
  for (const auto& id : ids) devices.push_back(rt::open_device(id));  // a bad name fails before any output
  fmt::print("{}\n", harness::format_row_header());
  Totals t;
  for (auto& dev : devices) run_on(*dev, o, t);
  fmt::print("{} passed, {} failed, {} skipped\n", t.pass, t.fail, t.skip);
  if (t.pass + t.fail == 0 && t.skip == 0) throw std::runtime_error("no case matched");
  if (t.fail) throw std::runtime_error(fmt::format("{} op result(s) differ from the float64 reference beyond their "
                                                   "tolerance (rows marked FAIL above)", t.fail));
}

}  // namespace

void register_test_ops_commands(CLI::App& app) {
  auto o = std::make_shared<TestOpsOptions>();
  auto* cmd = app.add_subcommand(
      "test-ops",
      "Check every graph op, forward and backward, on a device against the float64 reference evaluator; prints one "
      "row per compared result (max relative error vs tolerance) and exits non-zero if any fails");
  cmd->add_option("--device", o->device, "Device name (vulkan:N, cuda:N), 'all', or empty for the best present");
  cmd->add_option("--op", o->op, "Only this op (its text-form name, e.g. add, sum, conv2d_grad_input)");
  cmd->add_option("--seed", o->seed, "Seed of the random inputs (default 1)");
  cmd->add_flag("--failures", o->failures_only, "Print only the rows that fail");
  add_precision_option(cmd, o->precision)
      ->description(precision_help() + ". Under a policy other than fp32, matmul and conv2d results and gradients are "
                    "held to its dot-product bound relative to each element's sum |a b| (the max error column then "
                    "shows that ratio); the other ops to their tolerances under tf32, and skipped under bf16 and f16 (whose "
                    "documented bound is the dot product's)");
  add_ops_option(cmd);
  cmd->callback([o] { run(*o); });
}

}  // namespace spire::cli
