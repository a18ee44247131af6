// dump_pipeline(): each stage written by the same functions compile() runs (decompose, fuse_pointwise, lower,
// the two backends), so the files show what a device gets, not a re-creation of it.
#include "dump/dump.h"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "backends/ptx/ptx_backend.h"
#include "backends/spirv/spirv_backend.h"
#include "ir/graph/text_form.h"
#include "ir/kernel/printer.h"
#include "passes/decompose.h"
#include "passes/canonical.h"
#include "lowering/fuse.h"
#include "lowering/plan.h"
#include "lowering/precision_policy.h"
#include "lowering/schedule.h"
#include "lowering/stats.h"

namespace spire::dump {

// The stages are lowering's own functions (fuse, schedule, lower), run as compile() runs them.
using namespace lowering;

namespace fs = std::filesystem;

namespace {

void write_file(const fs::path& path, const void* data, size_t size, DumpReport& report) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error(fmt::format("{}: cannot create: {}", path.string(), std::strerror(errno)));
  out.write(static_cast<const char*>(data), std::streamsize(size));
  out.close();
  if (!out) throw std::runtime_error(fmt::format("{}: write error", path.string()));
  report.files.push_back(path);
}

void write_text(const fs::path& path, const std::string& text, DumpReport& report) {
  write_file(path, text.data(), text.size(), report);
}

// Kernel names hold shapes and dtypes ("conv2d_f32_2x1x28x28..."); anything a file name should not hold
// becomes '_', and very long names are cut (the index keeps them unique).
std::string file_stem(size_t index, const std::string& name) {
  std::string s = fmt::format("{:03}-", index);
  for (char c : name.substr(0, 96)) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.') ? c : '_';
  return s;
}

std::string target_text(const DumpOptions& opt) {
  const rt::DeviceInfo& d = opt.target;
  return fmt::format("target: {} ({}), subgroup {}, workgroup up to {} invocations, {} B shared memory, storage offsets "
                     "aligned to {} B, features {}; PTX for sm_{}\n\n",
                     d.id.empty() ? "unnamed" : d.id, d.name, d.subgroup_size, d.max_workgroup_invocations,
                     d.shared_memory_bytes, d.min_storage_offset_alignment, kir::features_to_string(d.features),
                     opt.ptx_sm);
}

// One kernel through both backends; a refusal is written down, not thrown, so the rest of the dump exists.
void dump_kernel(const fs::path& dir, size_t index, const kir::Kernel& k, const DumpOptions& opt, DumpReport& report) {
  const std::string stem = file_stem(index, k.name);
  write_text(dir / (stem + ".kir"), kir::print(k), report);
  auto refused = [&](const std::string& ext, const std::exception& e) {
    write_text(dir / (stem + ext + ".error"), std::string(e.what()) + "\n", report);
    report.errors.push_back(fmt::format("kernels/{}{}: {}", stem, ext, e.what()));
  };
  try {
    const std::vector<uint32_t> words = spirv::compile(k);  // validated inside (Vulkan 1.1)
    write_file(dir / (stem + ".spv"), words.data(), words.size() * sizeof(uint32_t), report);
    if (k.fragments.empty()) {
      write_text(dir / (stem + ".spvasm"), spirv::disassemble(words), report);
    } else {
      // Debian 12's spirv-dis predates SPV_KHR_cooperative_matrix (backends/spirv/compile.cpp): the .spv stands alone.
      write_text(dir / (stem + ".spvasm"), "; cooperative-matrix module: this build's SPIRV-Tools cannot disassemble "
                                           "SPV_KHR_cooperative_matrix; read the .spv with a newer spirv-dis\n", report);
    }
  } catch (const std::exception& e) {
    refused(".spv", e);
  }
  try {
    write_text(dir / (stem + ".ptx"), ptx::compile(k, ptx::Target{opt.ptx_sm}), report);
  } catch (const std::exception& e) {
    refused(".ptx", e);
  }
}

// "01.02-": the prefix of a pass file (pass_file_name).
bool is_pass_file(const std::string& name) {
  auto digit = [&](size_t i) { return std::isdigit(static_cast<unsigned char>(name[i])) != 0; };
  return name.size() > 10 && digit(0) && digit(1) && name[2] == '.' && digit(3) && digit(4) && name[5] == '-' &&
         name.ends_with(".txt");
}

// After the stage file `stage` ("01"), the graph after the k-th pass (1-based) of that point: 01.01-silu.txt.
// The stage number keeps files in pipeline order when listed by name.
std::string pass_file_name(std::string_view stage, int k, const std::string& pass) {
  std::string s = fmt::format("{}.{:02}-", stage, k);
  for (char c : pass.substr(0, 64)) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.') ? c : '_';
  return s + ".txt";
}

// Writes each pass's result as the pipeline runs; the stage number of its point comes first.
passes::PassObserver pass_writer(const fs::path& dir, DumpReport& report) {
  return [&dir, &report, counts = std::map<passes::PassPoint, int>{}](passes::PassPoint point, const passes::Pass& pass,
                                                                      const graph::Graph& after) mutable {
    static constexpr std::string_view kStage[] = {"01", "02", "03"};  // after_import, after_autograd, before_fusion
    write_text(dir / pass_file_name(kStage[size_t(point)], ++counts[point], pass.name), graph::print(after), report);
  };
}

// A smaller plan must not leave an earlier dump's kernels (or a graph eval after a training dump its
// 02-joint.txt, or a shorter pipeline an earlier pass's file) behind. Only files a dump writes are removed:
// the folder may hold the user's own.
void remove_earlier_dump(const fs::path& dir) {
  fs::remove(dir / "02-joint.txt");
  std::vector<fs::path> stale;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && is_pass_file(e.path().filename().string())) stale.push_back(e.path());
  for (const auto& e : fs::directory_iterator(dir / "kernels")) {
    const std::string name = e.path().filename().string();
    const bool numbered = name.size() > 4 && std::isdigit(static_cast<unsigned char>(name[0])) &&
                          std::isdigit(static_cast<unsigned char>(name[1])) &&
                          std::isdigit(static_cast<unsigned char>(name[2])) && name[3] == '-';
    const std::string ext = e.path().extension().string();
    if (e.is_regular_file() && numbered &&
        (ext == ".kir" || ext == ".spv" || ext == ".spvasm" || ext == ".ptx" || ext == ".error"))
      stale.push_back(e.path());
  }
  for (const fs::path& p : stale) fs::remove(p);  // after the walk: removing during it is unspecified
}

// Each scheduled kernel that computes a pointwise root of `roots` (Fusion::epilogue or ::prologue: index = the
// kernel's value id, -1 for none), the kernel's line and, under it, what it does with the root (`verb`).
std::string fused_roots(const graph::Graph& g, const std::vector<graph::Value>& scheduled,
                        const std::vector<int32_t>& roots, std::string_view verb) {
  std::string s;
  for (graph::Value v : scheduled)
    if (roots[size_t(v.id)] >= 0) {
      const graph::Node& host = g.node(v);
      const graph::Node& root = g.node(roots[size_t(v.id)]);
      s += fmt::format("{} = {} {}\n    {} {} = {} {}\n", host.name, graph::op_name(host.op), host.type.to_string(),
                       verb, root.name, graph::op_name(root.op), root.type.to_string());
    }
  return s;
}

}  // namespace

std::string fusion_text(const graph::Graph& g, const Fusion& fusion) {
  const std::vector<bool>& fused = fusion.fused;
  // A fused value has exactly one user (fuse.h); following users up to a value that is not fused finds the
  // kernel that computes it.
  const auto users = g.users();
  auto root_of = [&](graph::Value v) {
    while (fused[size_t(v.id)]) v = users[size_t(v.id)].front();
    return v;
  };
  std::map<int32_t, std::vector<graph::Value>> folded;  // root id -> fused values, in graph order
  size_t count = 0, pointwise = 0;
  const std::vector<graph::Value> scheduled = schedule(g);
  for (graph::Value v : scheduled) {
    if (is_pointwise(g.node(v).op)) ++pointwise;
    if (!fused[size_t(v.id)]) continue;
    folded[root_of(v).id].push_back(v);
    ++count;
  }
  std::string s = fmt::format(
      "# {} of the {} scheduled pointwise values are computed inside their user's kernel (no buffer, no launch);\n"
      "# {} kernels fold them in. Each line: the kernel's root value, then what it computes inline.\n",
      count, pointwise, folded.size());
  for (graph::Value v : scheduled) {
    auto it = folded.find(v.id);
    if (it == folded.end()) continue;
    const graph::Node& root = g.node(v);
    s += fmt::format("{} = {} {}\n", root.name, graph::op_name(root.op), root.type.to_string());
    for (graph::Value f : it->second) {
      const graph::Node& n = g.node(f);
      s += fmt::format("    folds {} = {} {}  (used by {})\n", n.name, graph::op_name(n.op), n.type.to_string(),
                       g.node(users[size_t(f.id)].front()).name);
    }
  }
  const std::string epilogues = fused_roots(g, scheduled, fusion.epilogue, "stores");
  if (!epilogues.empty())
    s += "# Epilogues: each heavy kernel computes the pointwise root above it from its results before storing them\n"
         "# (unless it turns out to launch nothing, an alias; then the root has its own launch).\n" + epilogues;
  const std::string prologues = fused_roots(g, scheduled, fusion.prologue, "loads");
  if (!prologues.empty())
    s += "# Prologues: each reduction computes the pointwise root it reads at every element it folds, each convolution's\n"
         "# weight gradient its pooling gradient from the pooled gradient and the pooling's input (never stored).\n" +
         prologues;
  std::string side_pools;
  for (graph::Value v : scheduled) {
    const SideOutputs side = fusion.side_outputs(v);
    if (!side.pool.valid() && !side.argmax.valid() && !side.bias.valid()) continue;
    const graph::Node& host = g.node(v);
    side_pools += fmt::format("{} = {} {}{}\n", host.name, graph::op_name(host.op), host.type.to_string(),
                              side.result_unread ? " (not stored: only its side outputs read it)" : "");
    for (graph::Value o : {side.pool, side.argmax, side.bias})
      if (o.valid())
        side_pools += fmt::format("    also stores {} = {} {}\n", g.node(o).name, graph::op_name(g.node(o).op),
                                  g.type(o).to_string());
  }
  if (!side_pools.empty())
    s += "# Side outputs: each convolution's launch also stores the max pooling of its result (through its epilogue),\n"
         "# a pooling the positions of its maxima, a weight gradient from positions (or a linear layer's, grad_y^T x) its\n"
         "# bias sum; they get no launch of their own.\n" + side_pools;
  if (!fusion.final_group.empty()) {
    s += fmt::format("# The final group: {} roots whose results only become state updates, run last in one launch "
                     "(more where the device binds fewer buffers).\n", fusion.final_group.size());
    for (graph::Value v : fusion.final_group)
      s += fmt::format("final {} = {} {}\n", g.node(v).name, graph::op_name(g.node(v).op), g.node(v).type.to_string());
  }
  return s;
}

std::string dump_summary(const DumpReport& report, const fs::path& dir) {
  size_t kernels = 0;
  for (const fs::path& f : report.files) kernels += f.extension() == ".kir";
  std::string s = fmt::format("dump: wrote {} files to {} ({} kernels)\n", report.files.size(), dir.string(), kernels);
  for (const std::string& e : report.errors) s += fmt::format("dump: refused: {}\n", e);
  return s;
}

DumpReport dump_pipeline(const fs::path& dir, const graph::Graph& built, const graph::Graph* joint,
                         const DumpOptions& opt) {
  DumpReport report;
  const fs::path kernel_dir = dir / "kernels";
  fs::create_directories(kernel_dir);
  remove_earlier_dump(dir);

  // Each stage is written before the passes of its point run, each pass's result after it.
  const passes::PassObserver write_pass = pass_writer(dir, report);
  write_text(dir / "01-graph.txt", graph::print(built), report);
  graph::Graph compiled = opt.passes ? opt.passes->run(passes::PassPoint::AfterImport, built, write_pass) : built;
  if (joint) {
    write_text(dir / "02-joint.txt", graph::print(*joint), report);
    compiled = opt.passes ? opt.passes->run(passes::PassPoint::AfterAutograd, *joint, write_pass) : *joint;
  }
  graph::Graph decomposed = passes::canonicalize(graph_under(compiled, opt.target, opt.precision));
  // The file says which passes made it, from the one list they run from.
  std::string canonical = "# after the canonical passes (passes/canonical.h), in the order they ran:";
  for (const passes::Pass& pass : passes::canonical_passes()) canonical += " " + pass.name;
  if (has_half_storage(opt.target, opt.precision))
    canonical += fmt::format("\n# under --precision {}, store_in_half ran before them (passes/half_storage.h, "
                             "lowering::graph_under)",
                             precision_name(opt.precision));
  write_text(dir / "03-decomposed.txt", canonical + "\n" + graph::print(decomposed), report);
  if (opt.passes) decomposed = opt.passes->run(passes::PassPoint::BeforeFusion, std::move(decomposed), write_pass);
  write_text(dir / "04-fused.txt", fusion_text(decomposed, plan_fusion(decomposed)), report);
  const Plan plan = lower(compiled, opt.target, opt.passes, opt.tuning, opt.parameters_once, opt.precision);
  write_text(dir / "05-plan.txt", target_text(opt) + plan_text(plan), report);
  const uint64_t moved = plan_bytes(plan);
  write_text(dir / "06-stats.txt",
             stats_text(graph_stats(compiled, opt.passes)) +
                 fmt::format("the plan's {} launches bind {} bytes ({:.3f} MB: each bound buffer once per launch, "
                             "state copies read and written; fused values never reach memory)\n",
                             plan.launches.size(), moved, double(moved) * 1e-6),
             report);
  for (size_t k = 0; k < plan.kernels.size(); ++k) dump_kernel(kernel_dir, k, plan.kernels[k], opt, report);
  return report;
}

}  // namespace spire::dump
