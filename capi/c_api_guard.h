// How every C entry point runs its C++ body: exceptions become statuses with a code and the message, so no C++
// exception crosses into C, and a missing pointer argument is named.
#pragma once

#include <new>
#include <stdexcept>
#include <string>

#include "bundle/bundle_file.h"
#include "capi/c_api_objects.h"
#include "runtime/device.h"

namespace spire::capi {

// True when e is of one of the classes.
template <class... Classes>
bool is_one_of(const std::exception& e) {
  return (... || (dynamic_cast<const Classes*>(&e) != nullptr));
}

// The status code of an exception, by its class: a derived class is asked about before its base.
inline spire_status_code code_of(const std::exception& e) {
  if (is_one_of<spire::bundle::BundleNotFound, std::out_of_range>(e)) return SPIRE_STATUS_NOT_FOUND;
  if (is_one_of<spire::bundle::BundleError>(e)) return SPIRE_STATUS_BAD_BUNDLE;
  if (is_one_of<spire::rt::MissingFeature>(e)) return SPIRE_STATUS_UNSUPPORTED;
  if (is_one_of<spire::rt::OutOfMemory>(e)) return SPIRE_STATUS_OUT_OF_MEMORY;
  if (is_one_of<spire::rt::InvalidUse, std::invalid_argument>(e)) return SPIRE_STATUS_INVALID_ARGUMENT;
  if (is_one_of<spire::rt::Error>(e)) return SPIRE_STATUS_DEVICE_ERROR;
  return SPIRE_STATUS_INTERNAL;
}

template <typename F>
spire_status guarded(F&& f) {
  try {
    f();
    return nullptr;
  } catch (const std::bad_alloc&) {
    return make_status(SPIRE_STATUS_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return make_status(code_of(e), e.what());
  } catch (...) {
    return make_status(SPIRE_STATUS_INTERNAL, "an unknown error");
  }
}

inline void require(const void* p, const char* what) {
  if (!p) throw std::invalid_argument(std::string(what) + " is NULL");
}

}  // namespace spire::capi
