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

template <typename F>
spire_status guarded(F&& f) {
  try {
    f();
    return nullptr;
  } catch (const spire::bundle::BundleNotFound& e) {
    return make_status(SPIRE_STATUS_NOT_FOUND, e.what());
  } catch (const spire::bundle::BundleError& e) {
    return make_status(SPIRE_STATUS_BAD_BUNDLE, e.what());
  } catch (const spire::rt::MissingFeature& e) {
    return make_status(SPIRE_STATUS_UNSUPPORTED, e.what());
  } catch (const spire::rt::OutOfMemory& e) {
    return make_status(SPIRE_STATUS_OUT_OF_MEMORY, e.what());
  } catch (const spire::rt::InvalidUse& e) {
    return make_status(SPIRE_STATUS_INVALID_ARGUMENT, e.what());
  } catch (const spire::rt::Error& e) {
    return make_status(SPIRE_STATUS_DEVICE_ERROR, e.what());
  } catch (const std::out_of_range& e) {
    return make_status(SPIRE_STATUS_NOT_FOUND, e.what());
  } catch (const std::invalid_argument& e) {
    return make_status(SPIRE_STATUS_INVALID_ARGUMENT, e.what());
  } catch (const std::bad_alloc&) {
    return make_status(SPIRE_STATUS_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return make_status(SPIRE_STATUS_INTERNAL, e.what());
  } catch (...) {
    return make_status(SPIRE_STATUS_INTERNAL, "an unknown error");
  }
}

inline void require(const void* p, const char* what) {
  if (!p) throw std::invalid_argument(std::string(what) + " is NULL");
}

}  // namespace spire::capi
