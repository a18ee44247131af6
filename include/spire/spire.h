/* spire.h: the C API of libspire_runtime, which runs models compiled ahead of time by `spire compile`.
 *
 * A program opens a device, loads a bundle (MODEL.spire) onto it, sets inputs by name from host memory, runs,
 * and reads outputs by name. The library holds no compiler: the bundle carries SPIR-V for any Vulkan device and
 * PTX for NVIDIA GPUs, and Vulkan and CUDA are loaded at run time, so one binary starts on any machine.
 *
 *   spire_device* dev;  spire_model* model;
 *   spire_status st = spire_device_open(NULL, &dev);           // NULL: the best device present
 *   if (!st) st = spire_model_load(dev, "resnet18.spire", &model);
 *   if (!st) st = spire_model_set_batch(model, 3);              // a bundle compiled with --dynamic-batch
 *   if (!st) st = spire_model_set_input(model, "input", pixels, 3 * 3 * 224 * 224 * sizeof(float));
 *   if (!st) st = spire_model_run(model);
 *   if (!st) st = spire_model_get_output(model, "logits", logits, 3 * 1000 * sizeof(float));
 *   if (st) { fprintf(stderr, "%s\n", spire_status_message(st)); spire_status_free(st); }
 *
 * Errors: every call that can fail returns a spire_status: NULL on success, else an object the caller owns, with
 * a code and a message that names the problem (the file, the tensor, the device), freed by spire_status_free.
 * A failed call changes nothing the caller can observe except what it documents.
 *
 * Ownership: objects from spire_*_open / spire_*_load are the caller's and freed by the matching release. A model
 * keeps its device alive: releasing a device that models still use only drops the caller's reference. Strings
 * returned by the library live as long as the object they came from.
 *
 * Threads: a device may be used from several threads at once. A model is used by one thread at a time (calls on
 * one model must not overlap); different models may run concurrently, also on the same device.
 *
 * Versions: SPIRE_API_VERSION is this header's; spire_api_version() the library's. They agree in the major part
 * (version / 10000) when the header and library fit together. Bundles carry their own format version and a bundle
 * from another format is refused with SPIRE_STATUS_BAD_BUNDLE. */
#ifndef SPIRE_SPIRE_H_
#define SPIRE_SPIRE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define SPIRE_API __declspec(dllimport)
#else
#define SPIRE_API __attribute__((visibility("default")))
#endif

#define SPIRE_API_VERSION 10000 /* 1.0.0 */

typedef enum spire_status_code {
  SPIRE_STATUS_OK = 0,
  SPIRE_STATUS_INVALID_ARGUMENT = 1, /* a null pointer, a size or batch out of range, an unknown name */
  SPIRE_STATUS_NOT_FOUND = 2,        /* no such file, device, input or output */
  SPIRE_STATUS_BAD_BUNDLE = 3,       /* not a bundle, truncated, another version, bad checksum, no plan for the device */
  SPIRE_STATUS_UNSUPPORTED = 4,      /* the device lacks a feature the model needs */
  SPIRE_STATUS_DEVICE_ERROR = 5,     /* the driver failed */
  SPIRE_STATUS_OUT_OF_MEMORY = 6,
  SPIRE_STATUS_INTERNAL = 7
} spire_status_code;

typedef struct spire_status_object* spire_status; /* NULL: success */
typedef struct spire_device spire_device;
typedef struct spire_model spire_model;

typedef enum spire_dtype {
  SPIRE_DTYPE_F32 = 0,
  SPIRE_DTYPE_F64 = 1,
  SPIRE_DTYPE_I32 = 2,
  SPIRE_DTYPE_I64 = 3,
  SPIRE_DTYPE_BOOL = 4, /* one byte per element, 0 or 1 */
  SPIRE_DTYPE_F16 = 5,  /* IEEE binary16 */
  SPIRE_DTYPE_BF16 = 6  /* bfloat16: the top half of an f32 */
} spire_dtype;

#define SPIRE_MAX_RANK 8

typedef struct spire_tensor_info {
  const char* name;               /* the model's (ONNX) name */
  spire_dtype dtype;              /* of the host memory set_input takes and get_output writes */
  int32_t rank;
  int64_t shape[SPIRE_MAX_RANK];  /* at the model's current batch */
  int32_t batched;                /* 1: shape[0] is the batch */
  size_t bytes;                   /* host bytes at the current batch */
} spire_tensor_info;

SPIRE_API uint32_t spire_api_version(void);

SPIRE_API spire_status_code spire_status_get_code(spire_status status); /* SPIRE_STATUS_OK for NULL */
SPIRE_API const char* spire_status_message(spire_status status);        /* "" for NULL */
SPIRE_API void spire_status_free(spire_status status);                   /* NULL is fine */

/* name: "vulkan:0", "cuda:0", or NULL / "" for the best device present (a discrete GPU first, lavapipe last). */
SPIRE_API spire_status spire_device_open(const char* name, spire_device** out_device);
SPIRE_API const char* spire_device_id(const spire_device* device);   /* "vulkan:0" */
SPIRE_API const char* spire_device_name(const spire_device* device); /* "NVIDIA H100 80GB HBM3" */
SPIRE_API void spire_device_release(spire_device* device);            /* NULL is fine */

/* The file is mapped into memory (mmap), not copied: its weights are read where they lie as they go to the device,
 * and a file shorter than its header says is refused (BAD_BUNDLE) before any of its payload is touched. */
SPIRE_API spire_status spire_model_load(spire_device* device, const char* bundle_path, spire_model** out_model);
/* The same from memory (the bytes are copied; the caller may free them when this returns). */
SPIRE_API spire_status spire_model_load_memory(spire_device* device, const void* bundle, size_t bytes,
                                               spire_model** out_model);
SPIRE_API void spire_model_release(spire_model* model); /* NULL is fine */

/* The largest batch (0: the model has no batch dimension) and whether every batch 1..max runs. */
SPIRE_API int64_t spire_model_max_batch(const spire_model* model);
SPIRE_API int32_t spire_model_dynamic_batch(const spire_model* model);
/* The batch of the next run: initially the largest (0 without a batch dimension). */
SPIRE_API int64_t spire_model_batch(const spire_model* model);
/* Sets it; a dynamic bundle takes 1..max, a fixed one only its own. Set the inputs after it. */
SPIRE_API spire_status spire_model_set_batch(spire_model* model, int64_t batch);

SPIRE_API size_t spire_model_input_count(const spire_model* model);
SPIRE_API size_t spire_model_output_count(const spire_model* model);
SPIRE_API spire_status spire_model_input_info(const spire_model* model, size_t index, spire_tensor_info* out_info);
SPIRE_API spire_status spire_model_output_info(const spire_model* model, size_t index, spire_tensor_info* out_info);

/* bytes must be the tensor's host bytes at the current batch (spire_tensor_info.bytes). set_input writes memory
 * the next run reads, get_output reads the last run's copy of the output: neither waits for the device, so a run
 * fed and read this way is one submit and one wait (the first set_input of a batch also makes its plan's buffers). */
SPIRE_API spire_status spire_model_set_input(spire_model* model, const char* name, const void* data, size_t bytes);
SPIRE_API spire_status spire_model_run(spire_model* model); /* returns when the results are ready */
SPIRE_API spire_status spire_model_get_output(spire_model* model, const char* name, void* data, size_t bytes);
/* Device time of the last run in milliseconds, from the device's own timestamps. */
SPIRE_API double spire_model_last_run_ms(const spire_model* model);

/* Where this process's time to its first result went, as text (what embed_demo --profile-startup and
 * `spire run MODEL.spire --profile-startup` print): one line a phase with its wall milliseconds and what it did,
 *   Vulkan: loader, instance, devices listed | CUDA: driver loaded, cuInit, devices listed
 *   device opened (vulkan:0)
 *   bundle file mapped, bundle checked and parsed
 *   plan loaded (batch 1, spirv), with its parts indented beneath: kernels loaded (how many distinct, on how many
 *     threads, the pipeline cache's or cubin cache's hits), weights uploaded (on a second thread, at the same time),
 *     buffers allocated, commands recorded
 *   first run (...)
 * then the time outside these phases (process start, loading libraries, the caller's own work) and the total since
 * the process started (its start is known to 10 ms, rounded down, so the total is never less than the truth).
 * Phases do not overlap and sum to no more than the total; parts are not summed. The profile is the process's, not
 * a model's (the driver and devices are per process), and it ends with the process's first finished run; called
 * before that, it holds the phases so far. Writes at most `capacity` bytes, the terminating NUL included, into
 * `text` (NULL with capacity 0 only measures) and returns the length of the whole text, as snprintf does.
 * Thread-safe. */
SPIRE_API size_t spire_startup_profile(char* text, size_t capacity);

#ifdef __cplusplus
}
#endif

#endif /* SPIRE_SPIRE_H_ */
