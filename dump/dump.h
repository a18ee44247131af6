// Every stage of the pipeline as files, for a user who wants to see what the compiler did with a graph
// (`--dump DIR` on spire run, spire graph eval and spire train lenet). Nothing runs: the plan is what
// lower() makes for the target's limits, and every kernel is compiled to SPIR-V and to PTX offline.
//
//   DIR/01-graph.txt        the graph as imported or built (graph text form)
//   DIR/01.NN-<pass>.txt    after each after_import rewrite pass, NN = 01, 02, ... in the order they ran
//   DIR/02-joint.txt        the joint forward + backward (+ optimizer) graph, where there is one (training)
//   DIR/02.NN-<pass>.txt    after each after_autograd rewrite pass (training)
//   DIR/03-decomposed.txt   after decompose (passes/decompose.h)
//   DIR/03.NN-<pass>.txt    after each before_fusion rewrite pass
//   DIR/04-fused.txt        which pointwise values fusion computes inside their user's kernel (fuse.h)
//   DIR/05-plan.txt         buffers, arena offsets, kernels, launches and grids (plan_text, memory_plan.h)
//   DIR/06-stats.txt        flops and minimum bytes per op kind (stats.h)
//   DIR/kernels/NNN-<kernel>.kir      kernel IR text (NNN: the kernel's index kNNN in the plan)
//   DIR/kernels/NNN-<kernel>.spv      SPIR-V binary (Vulkan 1.1), validated; .spvasm its disassembly
//   DIR/kernels/NNN-<kernel>.ptx      PTX for sm_<ptx_sm>
// A kernel a backend refuses gets NNN-<kernel>.<ext>.error holding the reason instead, and the dump goes on:
// a refused kernel is exactly what the dump is for.
//
// This is its own library (spire_dump), because it needs both backends and lowering does not.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "base/precision.h"
#include "ir/graph/graph.h"
#include "lowering/fuse.h"
#include "passes/pipeline.h"
#include "lowering/tuning_choices.h"
#include "runtime/device.h"

namespace spire::dump {

struct DumpOptions {
  rt::DeviceInfo target;  // the limits the plan is made for: the device that will run it
  uint32_t ptx_sm = 90;   // the PTX target (compute capability major*10+minor)
  // The rewrite passes the command compiles with (not owned; may be null). The dump runs them itself, at
  // their points, and writes the graph after each.
  const passes::PassPipeline* passes = nullptr;
  const lowering::TuningChoices* tuning = nullptr;  // the tuner's choices for `target` (lower()), null: heuristics
  bool parameters_once = true;            // lower()'s
  Precision precision = Precision::Fp32;  // lower()'s: the plan file says which, and what the target ran instead
};

struct DumpReport {
  std::vector<std::filesystem::path> files;  // every file written, in order
  std::vector<std::string> errors;           // "kernels/003-foo.ptx: reason", one per refused kernel
};

// `built` is the graph as the user gave it; `joint`, when not null, is what is compiled (the built graph
// with its backward pass and optimizer appended), else `built` is. With opt.passes, both are taken as they
// were BEFORE the passes of their point: `built` before the after_import passes (when there is no joint,
// what is compiled is `built` after them) and `joint` before the after_autograd passes (it is the joint
// graph of the built graph after its after_import passes). Creates `dir` if needed; files of an earlier dump
// in it are overwritten (its kernel files and pass files are removed first, so none of a bigger plan or a
// longer pipeline stays; other files in the folder are left alone).
DumpReport dump_pipeline(const std::filesystem::path& dir, const graph::Graph& built, const graph::Graph* joint,
                         const DumpOptions& opt);

// "wrote 57 files to DIR (23 kernels)", then one line per refused kernel: what a command prints after a dump.
std::string dump_summary(const DumpReport& report, const std::filesystem::path& dir);

// The contents of 04-fused.txt: for each kernel root, the pointwise values folded into it; then the heavy kernels
// that store a pointwise root (epilogues) and the final group (fuse.h).
std::string fusion_text(const graph::Graph& decomposed, const lowering::Fusion& fusion);

}  // namespace spire::dump
