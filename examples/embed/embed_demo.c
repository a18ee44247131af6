/* embed_demo [--profile-startup] BUNDLE IN.safetensors OUT.safetensors [DEVICE]
 *
 * Runs a model compiled by `spire compile` through libspire_runtime's C API: reads each model input from
 * IN.safetensors by name, runs once, and writes every output to OUT.safetensors under its name, as
 * `spire run BUNDLE` would. The batch is taken from the inputs (a bundle compiled with --dynamic-batch runs any
 * batch up to its largest). --profile-startup prints where the time from process start to the first result went
 * (spire_startup_profile). README.md walks through it. */
#include <spire/spire.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "safetensors.h"

static const char* const kDtypeNames[] = {"F32", "F64", "I32", "I64", "BOOL"};

/* Prints a failed call's message and frees the status; returns 1 on failure so `if (failed(...))` reads well. */
static int failed(spire_status status, const char* what) {
  if (!status) return 0;
  fprintf(stderr, "embed_demo: %s: %s\n", what, spire_status_message(status));
  spire_status_free(status);
  return 1;
}

int main(int argc, char** argv) {
  const int profile_startup = argc > 1 && strcmp(argv[1], "--profile-startup") == 0;
  if (profile_startup) {
    --argc;
    ++argv;
  }
  if (argc < 4 || argc > 5) {
    fprintf(stderr, "usage: embed_demo [--profile-startup] BUNDLE IN.safetensors OUT.safetensors [DEVICE]\n");
    return 2;
  }
  int rc = 1;
  spire_device* device = NULL;
  spire_model* model = NULL;
  st_file inputs = {0};
  st_tensor outputs[16];
  spire_tensor_info infos[16]; /* names and shapes of the outputs, owned by the model */
  int output_count = 0;

  /* 1. A device: by name ("vulkan:0", "cuda:0"), or the best one present when none is given. */
  if (failed(spire_device_open(argc == 5 ? argv[4] : NULL, &device), "opening the device")) goto done;
  printf("device %s (%s)\n", spire_device_id(device), spire_device_name(device));

  /* 2. The bundle: its plan, weights and kernels go onto the device. */
  if (failed(spire_model_load(device, argv[1], &model), "loading the bundle")) goto done;
  if (st_read(argv[2], &inputs)) goto done;

  /* 3. Inputs by name. The file's first input gives the batch: its bytes over one row's bytes. */
  for (size_t i = 0; i < spire_model_input_count(model); ++i) {
    spire_tensor_info info;
    const void* data;
    size_t bytes;
    char dtype[8] = "";
    if (failed(spire_model_input_info(model, i, &info), "reading the model's inputs")) goto done;
    if (st_find(&inputs, info.name, &data, &bytes, dtype)) {
      fprintf(stderr, "embed_demo: input '%s' is missing from %s\n", info.name, argv[2]);
      goto done;
    }
    if (i == 0 && info.batched && info.shape[0] > 0) {
      const size_t row = info.bytes / (size_t)info.shape[0];
      if (failed(spire_model_set_batch(model, (int64_t)(bytes / row)), "setting the batch")) goto done;
    }
    if (failed(spire_model_set_input(model, info.name, data, bytes), "setting an input")) goto done;
  }

  /* 4. Run: returns when the outputs are ready. */
  if (failed(spire_model_run(model), "running")) goto done;
  printf("ran at batch %lld in %.3f ms of device time\n", (long long)spire_model_batch(model),
         spire_model_last_run_ms(model));
  if (profile_startup) {
    /* The first call measures, the second fills. */
    const size_t length = spire_startup_profile(NULL, 0);
    char* text = malloc(length + 1);
    if (text) {
      spire_startup_profile(text, length + 1);
      fputs(text, stdout);
      free(text);
    }
  }

  /* 5. Outputs by name, into host memory, then into OUT.safetensors. */
  for (size_t i = 0; i < spire_model_output_count(model) && output_count < 16; ++i) {
    spire_tensor_info* info = &infos[output_count];
    if (failed(spire_model_output_info(model, i, info), "reading the model's outputs")) goto done;
    void* data = malloc(info->bytes ? info->bytes : 1);
    outputs[output_count] = (st_tensor){info->name, kDtypeNames[info->dtype], info->rank, info->shape, data, info->bytes};
    ++output_count;
    if (failed(spire_model_get_output(model, info->name, data, info->bytes), "reading an output")) goto done;
  }
  if (st_write(argv[3], outputs, output_count)) goto done;
  printf("wrote %d output%s to %s\n", output_count, output_count == 1 ? "" : "s", argv[3]);
  rc = 0;

done:
  /* 6. Everything is released; the model held the device until now. */
  for (int i = 0; i < output_count; ++i) free((void*)outputs[i].data);
  st_free(&inputs);
  spire_model_release(model);
  spire_device_release(device);
  return rc;
}
