// libspire_runtime's C API (include/spire/spire.h) over bundle::Session and the runtime. Every entry point
// catches every exception and turns it into a status: no C++ exception crosses into C.
#include "spire/spire.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "bundle/bundle_file.h"
#include "capi/c_dtype.h"
#include "bundle/session.h"
#include "capi/c_api_guard.h"
#include "capi/c_api_objects.h"
#include "runtime/device.h"
#include "runtime/startup_profile.h"

using spire::capi::guarded;
using spire::capi::make_status;
using spire::capi::require;

namespace {

// `read` makes the bundle (from a file or from the caller's memory), inside the guard.
template <typename Read>
spire_status load(spire_device* device, spire_model** out, Read&& read) {
  return guarded([&] {
    require(device, "device");
    require(out, "out_model");
    *out = nullptr;
    auto b = std::make_shared<const spire::bundle::Bundle>(read());
    auto m = std::make_unique<spire_model>();
    m->device = device->shared_from_this();
    m->session = std::make_unique<spire::bundle::Session>(std::move(b), *m->device->device);
    *out = m.release();
  });
}

spire_status tensor_info(const spire_model* model, size_t index, bool input, spire_tensor_info* out) {
  return guarded([&] {
    require(model, "model");
    require(out, "out_info");
    const auto& list = input ? model->session->bundle().inputs : model->session->bundle().outputs;
    if (index >= list.size())
      throw std::out_of_range(std::string(input ? "input" : "output") + " index " + std::to_string(index) +
                              " (the model has " + std::to_string(list.size()) + ")");
    const auto& spec = list[index];
    const std::vector<int64_t> shape = model->session->shape(spec);
    if (shape.size() > SPIRE_MAX_RANK) throw std::invalid_argument("'" + spec.name + "' has more than 8 dimensions");
    std::memset(out, 0, sizeof *out);
    out->name = spec.name.c_str();
    out->dtype = spire::capi::c_dtype(spec.dtype);
    out->rank = int32_t(shape.size());
    for (size_t d = 0; d < shape.size(); ++d) out->shape[d] = shape[d];
    out->batched = spec.batched ? 1 : 0;
    out->bytes = size_t(spec.elements_at(model->session->batch()) * spire::bundle::dtype_bytes(spec.dtype));
  });
}

}  // namespace

extern "C" {

uint32_t spire_api_version(void) { return SPIRE_API_VERSION; }

spire_status_code spire_status_get_code(spire_status status) { return status ? status->code : SPIRE_STATUS_OK; }
const char* spire_status_message(spire_status status) { return status ? status->message.c_str() : ""; }
void spire_status_free(spire_status status) {
  if (status != spire::capi::out_of_memory_status()) delete status;
}

spire_status spire_device_open(const char* name, spire_device** out_device) {
  return guarded([&] {
    require(out_device, "out_device");
    *out_device = nullptr;
    auto d = std::make_shared<spire_device>();
    try {
      d->device = spire::rt::open_device(name ? name : "");
    } catch (const spire::rt::Error& e) {
      // No such device is the caller's to fix, not a driver failure.
      const std::string what = e.what();
      if (what.find("no device") != std::string::npos || what.find("unknown") != std::string::npos ||
          what.find("no such") != std::string::npos)
        throw std::out_of_range(what);
      throw;
    }
    d->id = d->device->info().id;
    d->name = d->device->info().name;
    *out_device = spire::capi::hand_out(std::move(d));
  });
}

const char* spire_device_id(const spire_device* device) { return device ? device->id.c_str() : ""; }
const char* spire_device_name(const spire_device* device) { return device ? device->name.c_str() : ""; }
void spire_device_release(spire_device* device) { spire::capi::release(device); }

spire_status spire_model_load(spire_device* device, const char* bundle_path, spire_model** out_model) {
  return load(device, out_model, [&] {
    require(bundle_path, "bundle_path");
    return spire::bundle::read_bundle(bundle_path);  // mapped, not copied: the weights are read where they lie
  });
}

spire_status spire_model_load_memory(spire_device* device, const void* bundle, size_t bytes, spire_model** out_model) {
  if (!bundle && bytes) return make_status(SPIRE_STATUS_INVALID_ARGUMENT, "bundle is NULL");
  return load(device, out_model, [&] {
    return spire::bundle::parse_bundle({static_cast<const uint8_t*>(bundle), bytes}, "(bundle in memory)");
  });
}

void spire_model_release(spire_model* model) { delete model; }

int64_t spire_model_max_batch(const spire_model* model) { return model ? model->session->bundle().max_batch : 0; }
int32_t spire_model_dynamic_batch(const spire_model* model) {
  return model && model->session->bundle().dynamic_batch ? 1 : 0;
}

int64_t spire_model_batch(const spire_model* model) { return model ? model->session->batch() : 0; }

spire_status spire_model_set_batch(spire_model* model, int64_t batch) {
  return guarded([&] {
    require(model, "model");
    model->session->set_batch(batch);
  });
}

size_t spire_model_input_count(const spire_model* model) { return model ? model->session->bundle().inputs.size() : 0; }
size_t spire_model_output_count(const spire_model* model) { return model ? model->session->bundle().outputs.size() : 0; }

spire_status spire_model_input_info(const spire_model* model, size_t index, spire_tensor_info* out_info) {
  return tensor_info(model, index, true, out_info);
}
spire_status spire_model_output_info(const spire_model* model, size_t index, spire_tensor_info* out_info) {
  return tensor_info(model, index, false, out_info);
}

spire_status spire_model_set_input(spire_model* model, const char* name, const void* data, size_t bytes) {
  return guarded([&] {
    require(model, "model");
    require(name, "name");
    model->session->set_input(name, data, bytes);
  });
}

spire_status spire_model_run(spire_model* model) {
  return guarded([&] {
    require(model, "model");
    model->session->run();
  });
}

spire_status spire_model_get_output(spire_model* model, const char* name, void* data, size_t bytes) {
  return guarded([&] {
    require(model, "model");
    require(name, "name");
    model->session->get_output(name, data, bytes);
  });
}

double spire_model_last_run_ms(const spire_model* model) { return model ? model->session->last_run_ms() : 0; }

size_t spire_startup_profile(char* text, size_t capacity) {
  try {
    const std::string report = spire::rt::startup::report(spire::rt::startup::snapshot());
    if (text && capacity) {
      const size_t n = std::min(report.size(), capacity - 1);
      std::memcpy(text, report.data(), n);
      text[n] = '\0';
    }
    return report.size();
  } catch (...) {  // out of host memory: nothing to report, and nothing may throw into C
    if (text && capacity) text[0] = '\0';
    return 0;
  }
}

}  // extern "C"
