// spire train lenet / spire eval lenet: LeNet on Fashion-MNIST on any device.
#include <fmt/format.h>

#include "examples/custom_ops/seed_ops.h"
#include "ir/graph/op_table.h"
#include "tools/spire/commands.h"
#include "tools/spire/precision_option.h"
#include "training/lenet_trainer.h"

namespace spire::cli {

void register_train_commands(CLI::App& app) {
  auto t = std::make_shared<training::TrainOptions>();
  auto* train = app.add_subcommand("train", "Train a model on a device");
  train->require_subcommand(1);
  auto* lenet = train->add_subcommand("lenet", "Train LeNet on Fashion-MNIST (SGD with momentum; one compiled graph per step)");
  lenet->add_option("--device", t->device, "Device (vulkan:N, cuda:N); default: the best present");
  lenet->add_option("--epochs", t->epochs, "Epochs (default 5)")->check(positive_number());
  lenet->add_option("--batch", t->batch, "Minibatch size (default 64; the last partial batch of an epoch is dropped)")
      ->check(positive_number());
  lenet->add_option("--lr", t->lr, "Learning rate (default 0.05)")->check(positive_number());
  lenet->add_option("--momentum", t->momentum, "SGD momentum (default 0.9)");
  lenet->add_option("--weight-decay", t->weight_decay, "SGD weight decay (default 0)");
  lenet->add_option("--seed", t->seed, "Seed of initialisation and shuffling (default 0)");
  lenet->add_option("--limit", t->limit, "Train on the first N images only (default: all 60000)")
      ->check(positive_number(true));
  lenet->add_option("--load", t->load, "Start from these parameters (safetensors, PyTorch names)");
  lenet->add_option("--save", t->save, "Write the trained parameters here (safetensors, PyTorch names)");
  lenet->add_option("--data", t->data_dir, "Folder of the Fashion-MNIST IDX files (default: Debian's dataset-fashion-mnist)");
  lenet->add_option("--eval-batch", t->eval_batch, "Batch of the test-set pass; must divide 10000 (default 500)");
  lenet->add_option("--steps-in-flight", t->steps_in_flight,
                    "Training steps submitted before the host waits for the oldest (default 2: the next minibatch's "
                    "step is queued while the host reads this one's loss; 1 waits for each step before the next)")
      ->check(CLI::Range(1, 4));
  lenet->add_option_function<std::vector<float>>(
            "--normalize", [t](const std::vector<float>& v) { t->pixel_mean = v[0]; t->pixel_std = v[1]; },
            "Feed pixels as (p/255 - MEAN) / STD (default 0.5,0.5: pixels in [-1, 1]; 0,1 keeps them in [0, 1]; "
            "Fashion-MNIST's own statistics are 0.2860,0.3530)")
      ->expected(2)->delimiter(',')->type_name("MEAN,STD");
  add_precision_option(lenet, t->precision);
  add_dump_option(lenet, t->dump_dir, "the training step's graph, its joint graph", "; written before training");
  lenet->add_flag("--quiet", [t](int64_t) { t->progress = false; }, "No progress bar, only the per-epoch lines");
  lenet->add_flag("--tune", t->tune,
                  "Before compiling, time every candidate config of each tunable kernel of the training step and the "
                  "test pass (of the ops " + lowering::tunable_op_names() +
                      ") that the tuning cache has no result for on this device and driver, keep the fastest in the "
                      "cache (saved after each kernel: a run cut short keeps what it timed) and print a table of "
                      "heuristic and tuned times. Without --tune the results already in the cache are used, with no "
                      "timing");
  lenet->add_option("--tuning-cache", t->tuning_cache,
                    "The tuning cache file (default: $SPIRE_CACHE_DIR/tuning.txt, else "
                    "$XDG_CACHE_HOME/spire/tuning.txt, else ~/.cache/spire/tuning.txt); a file that does not exist "
                    "holds no results (every kernel's heuristic config)");
  add_ops_option(lenet);
  auto relu = std::make_shared<std::string>("builtin");
  lenet->add_option("--relu", *relu,
                    "The ReLU op: builtin (default; fused with the bias add), custom (the seed article's ReLU as a "
                    "custom op with a GLSL kernel, examples/custom_ops/seed_relu.op: Vulkan devices only), "
                    "custom-builder (the same op with a kernel-builder kernel: every device), or the name of a "
                    "custom op loaded with --ops")
      ->type_name("OP");
  lenet->callback([t, relu] {
    if (*relu == "custom") t->relu_op = examples::register_seed_relu_glsl();
    else if (*relu == "custom-builder") t->relu_op = examples::register_seed_relu_builder();
    else if (*relu == "builtin") t->relu_op = "relu";
    else if (graph::op_from_name(*relu) && graph::is_user_op(*graph::op_from_name(*relu))) t->relu_op = *relu;
    else throw CLI::ValidationError("--relu", fmt::format("'{}' is not builtin, custom, custom-builder or a custom op loaded with --ops", *relu));
    if (t->relu_op != "relu") fmt::print("ReLU: custom op {}\n", t->relu_op);
    training::train_lenet(*t, stdout);
  });

  auto e = std::make_shared<training::EvalOptions>();
  auto* eval = app.add_subcommand("eval", "Evaluate a trained model on a device");
  eval->require_subcommand(1);
  auto* elenet = eval->add_subcommand("lenet", "Test-set accuracy of LeNet weights on Fashion-MNIST");
  elenet->add_option("--load", e->load, "Parameters to evaluate (safetensors, PyTorch names)")->required();
  elenet->add_option("--device", e->device, "Device (vulkan:N, cuda:N); default: the best present");
  elenet->add_option("--data", e->data_dir, "Folder of the Fashion-MNIST IDX files");
  elenet->add_option("--eval-batch", e->eval_batch, "Batch of the test-set pass; must divide 10000 (default 500)");
  elenet->add_option_function<std::vector<float>>(
            "--normalize", [e](const std::vector<float>& v) { e->pixel_mean = v[0]; e->pixel_std = v[1]; },
            "Pixels as (p/255 - MEAN) / STD: the values the weights were trained with (default 0.5,0.5)")
      ->expected(2)->delimiter(',')->type_name("MEAN,STD");
  elenet->callback([e] { training::eval_lenet(*e, stdout); });
}

}  // namespace spire::cli
