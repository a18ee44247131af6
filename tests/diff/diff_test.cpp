// diff/ without a device: the error statistics on hand-made values (expected numbers worked out by hand), the
// tolerance rule, the comparison's first divergence and "inputs already off", and the saved run's identity checks.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "diff/capture.h"
#include "diff/compare.h"
#include "diff/half_precision.h"
#include "diff/report.h"
#include "diff/saved_run.h"
#include "diff/tolerance.h"
#include "diff/value_error.h"
#include "io/file_bytes.h"
#include "ir/graph/op_table.h"

namespace spire::diff {
namespace {

using graph::DType;
using graph::Tensor;

TEST(DiffUlp, IsTheSpacingOfTheDtypesNumbers) {
  EXPECT_EQ(ulp(1.0, DType::F32), std::ldexp(1.0, -23));
  EXPECT_EQ(ulp(-3.0, DType::F32), std::ldexp(1.0, -22));  // 3 = 1.5 * 2^1
  EXPECT_EQ(ulp(1.0, DType::F16), std::ldexp(1.0, -10));
  EXPECT_EQ(ulp(1.0, DType::BF16), std::ldexp(1.0, -7));
  EXPECT_EQ(ulp(1.0, DType::F64), std::ldexp(1.0, -52));
  EXPECT_EQ(ulp(0.0, DType::F32), std::ldexp(1.0, -149));  // the smallest subnormal
  EXPECT_EQ(ulp(1e-40, DType::F32), std::ldexp(1.0, -149));
  EXPECT_EQ(ulp(5.0, DType::I32), 0.0);
}

TEST(DiffMeasure, GivesEachStatistic) {
  const Tensor want = Tensor::from(DType::F32, {4}, {1, -2, 0, 4});
  const Tensor got = Tensor::from(DType::F32, {4}, {1, -2.5, 0.25, 4});
  const ValueError e = measure(got, want);
  EXPECT_EQ(e.max_abs, 0.5);
  EXPECT_EQ(e.worst_index, 1);
  EXPECT_EQ(e.max_rel, 0.25);            // 0.5 / 2; the element whose reference is 0 has no relative error
  EXPECT_EQ(e.mean_abs, 0.75 / 4);
  EXPECT_EQ(e.ulp_at_worst, 0.5 / std::ldexp(1.0, -22));
  EXPECT_EQ(e.want_max, 4.0);
  EXPECT_EQ(e.norm_error, 0.5 / 4);      // op_harness's measure: relative to max(1, max |want|)
  EXPECT_EQ(e.nan, 0);
  EXPECT_EQ(e.inf, 0);
}

TEST(DiffMeasure, CountsNanAndInfAndCallsThemInfinitelyOff) {
  const Tensor want = Tensor::from(DType::F32, {3}, {1, 1, 1});
  const Tensor got = Tensor::from(DType::F32, {3}, {NAN, INFINITY, 1});
  const ValueError e = measure(got, want);
  EXPECT_EQ(e.nan, 1);
  EXPECT_EQ(e.inf, 1);
  EXPECT_TRUE(std::isinf(e.norm_error));
  EXPECT_FALSE(judge(e, graph::OpKind::Add, DType::F32, {}).within);
  EXPECT_FALSE(judge(e, graph::OpKind::Add, DType::F32, {.atol = 1e9}).within);
}

TEST(DiffTolerance, DefaultsToTheOpTablesAndTakesAtolRtol) {
  ValueError e;
  e.max_abs = 0.5;
  e.want_max = 10;
  e.norm_error = 0.05;
  const Verdict table = judge(e, graph::OpKind::Relu, DType::F32, {});
  EXPECT_EQ(table.bound, graph::op_tolerance(graph::OpKind::Relu, false, DType::F32));
  EXPECT_FALSE(table.within);
  EXPECT_FALSE(judge(e, graph::OpKind::Relu, DType::F32, {.atol = 0.4}).within);
  EXPECT_TRUE(judge(e, graph::OpKind::Relu, DType::F32, {.atol = 0.4, .rtol = 0.01}).within);  // 0.4 + 0.01 * 10
  EXPECT_TRUE(judge(e, graph::OpKind::Relu, DType::F32, {.rtol = 0.05}).within);
}

TEST(DiffCompare, AValueMayCarryTheErrorItsInputsWereAllowed) {
  // exp's result off by half its tolerance, then reshaped (an exact op, tolerance 0): the reshape carries exp's
  // error, within exp's bound, so nothing is off.
  graph::Graph g;
  auto x = g.input("x", DType::F32, {2, 2});
  auto e = g.name(g.exp(x), "e");
  g.output("y", g.name(g.reshape(e, {4}), "r"));
  const std::map<std::string, Tensor> feeds{{"x", Tensor::from(DType::F32, {2, 2}, {0, 0, 0, 0})}};
  const Capture reference = capture_reference(g, feeds);
  const double half = graph::op_tolerance(graph::OpKind::Exp, false, DType::F32) / 2;
  ASSERT_GT(half, 0);
  const double off_by_half = float(1 + half);  // what a float32 device can hold
  Capture device = reference;
  device.values["e"].data[2] = off_by_half;
  device.values["r"].data[2] = off_by_half;
  const Comparison c = compare(g, device, reference, {.feeds = &feeds});
  EXPECT_TRUE(c.agrees()) << c.rows[c.first.value_or(0)].name;
  EXPECT_EQ(c.rows[1].verdict.bound, 2 * half);
  // The same error made by the reshape itself is off: its own bound is 0.
  Capture wrong = reference;
  wrong.values["r"].data[2] = off_by_half;
  const Comparison w = compare(g, wrong, reference, {.feeds = &feeds});
  ASSERT_TRUE(w.first.has_value());
  EXPECT_EQ(w.rows[*w.first].name, "r");
  EXPECT_FALSE(w.rows[*w.first].own_verdict->within);
}

TEST(DiffPrecision, ToHalfStoresEveryF32ValueInHalfAndKeepsTheRest) {
  graph::Graph g;
  auto x = g.input("x", DType::F32, {2, 3});
  auto labels = g.input("labels", DType::I32, {2});
  auto w = g.parameter("w", DType::F32, {3});
  auto h = g.name(g.mul(x, w), "h");
  auto back = g.name(g.cast(g.name(g.cast(h, DType::F64), "wide"), DType::F32), "back");
  auto n = g.name(g.cast(labels, DType::F32), "n");
  g.output("y", back);
  g.output("n", n);
  const graph::Graph half = to_half(g, DType::BF16);
  EXPECT_EQ(half.type(half.at("x")).dtype, DType::BF16);
  EXPECT_EQ(half.type(half.at("w")).dtype, DType::BF16);
  EXPECT_EQ(half.type(half.at("labels")).dtype, DType::I32);
  EXPECT_EQ(half.type(half.at("h")).dtype, DType::BF16);
  EXPECT_EQ(half.type(half.at("wide")).dtype, DType::F64);   // not an f32 value
  EXPECT_EQ(half.type(half.at("back")).dtype, DType::BF16);  // a cast to f32 casts to bf16
  EXPECT_EQ(half.type(half.at("n")).dtype, DType::BF16);
  ASSERT_EQ(half.outputs().size(), 2u);
  EXPECT_EQ(half.outputs()[0].name, "y");
  // Feeds: f32 rounded to bf16 (8 significant bits: 1 + 2^-9 rounds to 1), others kept.
  const auto feeds = to_half(std::map<std::string, Tensor>{{"x", Tensor::from(DType::F32, {1}, {1 + std::ldexp(1.0, -9)})},
                                                           {"labels", Tensor::from(DType::I32, {1}, {3})}},
                             DType::BF16);
  EXPECT_EQ(feeds.at("x").dtype, DType::BF16);
  EXPECT_EQ(feeds.at("x").data[0], 1.0);
  EXPECT_EQ(feeds.at("labels").dtype, DType::I32);
}

TEST(DiffPrecision, ProposesTheShortestPrefixToKeepInF32ByBisection) {
  const std::vector<std::string> ranked{"a", "b", "c", "d"};
  // The outputs agree once c is kept: runs at k = 4 (agrees), 2 (not), 3 (agrees).
  const KeepProposal p = propose_f32_set(ranked, [](const std::set<std::string>& keep) { return keep.contains("c"); });
  EXPECT_TRUE(p.found);
  EXPECT_EQ(p.keep, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(p.runs, 3);
  const KeepProposal none = propose_f32_set(ranked, [](const std::set<std::string>&) { return false; });
  EXPECT_FALSE(none.found);
  EXPECT_EQ(none.runs, 1);
}

TEST(DiffReport, WritesIndicesAsTheUserIndexes) {
  EXPECT_EQ(index_text(5, {2, 3}), "[1,2]");
  EXPECT_EQ(index_text(0, {}), "[]");
  EXPECT_EQ(index_text(7, {2, 2, 2}), "[1,1,1]");
}

// x -> a = relu(x) -> b = exp(a) -> c = add(b, x): a "device" whose a is wrong in one element.
struct Chain {
  graph::Graph g;
  std::map<std::string, Tensor> feeds;
  Chain() {
    auto x = g.input("x", DType::F32, {2, 3});
    auto a = g.name(g.relu(x), "a");
    auto b = g.name(g.exp(a), "b");
    auto c = g.name(g.add(b, x), "c");
    g.output("y", c);
    feeds["x"] = Tensor::from(DType::F32, {2, 3}, {-1, 0.5, 2, -0.25, 1, 0});
  }
};

TEST(DiffCompare, NamesTheFirstValueOffAndItsDownstreamValuesAsInheritingIt) {
  Chain m;
  const Capture reference = capture_reference(m.g, m.feeds);
  ASSERT_EQ(reference.values.size(), 3u);
  EXPECT_EQ(reference.values.at("a").data, (std::vector<double>{0, 0.5, 2, 0, 1, 0}));
  // The wrong device: a is off at [1,1]; b and c are what right kernels compute from that a.
  Capture device = reference;
  device.device = "fake:0";
  device.values["a"].data[4] = 1.5;
  device.values["b"].data[4] = std::exp(1.5f);
  device.values["c"].data[4] = float(std::exp(1.5f) + 1.0f);
  const Comparison c = compare(m.g, device, reference, {.feeds = &m.feeds});
  ASSERT_EQ(c.rows.size(), 3u);
  ASSERT_TRUE(c.first.has_value());
  EXPECT_EQ(c.rows[*c.first].name, "a");
  EXPECT_EQ(c.off, 3u);
  EXPECT_EQ(c.rows[0].error.worst_index, 4);
  EXPECT_EQ(c.rows[0].error.max_abs, 0.5);
  EXPECT_TRUE(c.rows[0].inputs_off.empty());
  EXPECT_EQ(status_text(c.rows[0]), "OFF here");
  EXPECT_FALSE(c.rows[0].own_verdict->within);  // relu(x) alone is 1, not 1.5
  // b is exp of the wrong a, computed right: off, but its own result is within tolerance.
  EXPECT_EQ(c.rows[1].inputs_off, (std::vector<std::string>{"a"}));
  EXPECT_TRUE(c.rows[1].own_verdict->within);
  EXPECT_EQ(status_text(c.rows[1]), "off: inputs already off");
  EXPECT_EQ(c.rows[2].inputs_off, (std::vector<std::string>{"b"}));  // x is a leaf, never off
  EXPECT_EQ(c.rows[1].text, "b = exp(a) : f32[2,3]");
  EXPECT_EQ(c.rows[0].op, "relu");
}

TEST(DiffCompare, AgreesWhenEveryValueIsTheReferences) {
  Chain m;
  const Capture reference = capture_reference(m.g, m.feeds);
  const Comparison c = compare(m.g, reference, reference, {.feeds = &m.feeds});
  EXPECT_TRUE(c.agrees());
  EXPECT_EQ(c.off, 0u);
  EXPECT_NE(report_text({c}, {.rule = "r"}).find("all 3 values within tolerance"), std::string::npos);
}

TEST(DiffSavedRun, RoundTripsAndRefusesAnotherModelOrInputs) {
  Chain m;
  const auto dir = std::filesystem::temp_directory_path() / "spire_diff_saved_run_test";
  std::filesystem::remove_all(dir);
  const Capture reference = capture_reference(m.g, m.feeds);
  Capture device = reference;
  device.device = "vulkan:7";
  device.device_name = "a GPU";
  device.driver = "its driver 1.2";
  device.values["b"].data[0] = 42;
  device.origins["b"] = {Source::Unfused, "a", "exp_kernel", "some key: x=1", "exp_alone"};
  device.unfused_run = device.values;
  device.unfused_run["b"].data[0] = 7;
  const RunIdentity id{"m.graph", "00000000000000aa", "in.safetensors", "00000000000000bb"};
  save_run(dir, id, reference, {device});
  const SavedRun run = load_run(dir, id);
  ASSERT_EQ(run.devices.size(), 1u);
  EXPECT_EQ(run.devices[0].device, "saved:vulkan:7");
  EXPECT_EQ(run.devices[0].driver, "its driver 1.2");
  EXPECT_EQ(run.devices[0].values.at("b").data[0], 42);
  EXPECT_EQ(run.devices[0].origins.at("b").source, Source::Unfused);
  EXPECT_EQ(run.devices[0].unfused_run.at("b").data[0], 7);
  EXPECT_EQ(run.devices[0].origins.at("b").kernel, "exp_kernel");
  EXPECT_EQ(run.devices[0].origins.at("b").launch, "a");
  EXPECT_EQ(run.devices[0].origins.at("b").tuning, "some key: x=1");
  EXPECT_EQ(run.devices[0].origins.at("b").unfused_kernel, "exp_alone");
  EXPECT_EQ(run.reference.values.at("c").data, reference.values.at("c").data);
  EXPECT_EQ(run.spire_version, spire_version());
  try {
    load_run(dir, {"m.graph", "00000000000000ff", "in.safetensors", "00000000000000bb"});
    FAIL() << "another model's hash was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("model hash 00000000000000aa (m.graph) there, 00000000000000ff"),
              std::string::npos)
        << e.what();
  }
  try {
    load_run(dir, {"m.graph", "00000000000000aa", "other.safetensors", "0000000000000001"});
    FAIL() << "other inputs were accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("inputs hash 00000000000000bb"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(DiffSavedRun, HashesFilesByTheirBytes) {
  const auto dir = std::filesystem::temp_directory_path() / "spire_diff_hash_test";
  std::filesystem::create_directories(dir);
  const std::string a = "abc";
  io::write_file_bytes_atomically(dir / "a", std::span(reinterpret_cast<const uint8_t*>(a.data()), a.size()));
  // FNV-1a 64 of "abc", from the algorithm's published test vectors.
  EXPECT_EQ(files_hash({dir / "a"}), "e71fa2190541574b");
  EXPECT_NE(files_hash({dir / "a", dir / "a"}), files_hash({dir / "a"}));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spire::diff
