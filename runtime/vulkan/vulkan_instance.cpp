#include "runtime/vulkan/vulkan_instance.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/vulkan/vulkan_validation.h"

namespace spire::rt::vulkan {

namespace {

bool env_is_one(const char* name) {
  const char* v = std::getenv(name);
  return v && std::strcmp(v, "1") == 0;
}

// Diagnostics about a missing loader are noise for a user without a GPU, so they are printed only on request.
void note(const char* what) {
  if (std::getenv("SPIRE_VULKAN_VALIDATION") || env_is_one("SPIRE_VULKAN_VERBOSE"))
    std::fprintf(stderr, "spire: Vulkan unavailable: %s\n", what);
}

bool has_layer(const char* name) {
  uint32_t n = 0;
  if (vkEnumerateInstanceLayerProperties(&n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkLayerProperties> layers(n);
  if (vkEnumerateInstanceLayerProperties(&n, layers.data()) < 0) return false;
  return std::any_of(layers.begin(), layers.begin() + n, [&](const auto& l) { return std::strcmp(l.layerName, name) == 0; });
}

std::vector<VkExtensionProperties> instance_extensions(const char* layer) {
  uint32_t n = 0;
  if (vkEnumerateInstanceExtensionProperties(layer, &n, nullptr) != VK_SUCCESS) return {};
  std::vector<VkExtensionProperties> exts(n);
  if (vkEnumerateInstanceExtensionProperties(layer, &n, exts.data()) < 0) return {};
  exts.resize(n);
  return exts;
}

Instance* create_instance() {
  if (volkInitialize() != VK_SUCCESS) {
    note("no Vulkan loader (libvulkan.so.1) found");
    return nullptr;
  }
  auto* inst = new Instance();
  // Vulkan 1.1 is the floor (SPIR-V 1.3, subgroup and 16-bit storage core); ask for up to 1.3 where the loader
  // knows it. Since 1.1 this is the highest version the application uses, so older devices still enumerate.
  uint32_t loader = volkGetInstanceVersion();
  if (loader < VK_API_VERSION_1_1) {
    note("the Vulkan loader is older than 1.1");
    delete inst;
    return nullptr;
  }
  inst->api_version = std::min<uint32_t>(loader, VK_API_VERSION_1_3);

  std::vector<const char*> layers, extensions;
  auto exts = instance_extensions(nullptr);
  // MoltenVK and other non-conformant drivers only enumerate with portability enumeration.
  bool portability = has_extension(exts, VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
  if (portability) extensions.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);

  // "1": core validation. "sync": also synchronization validation (missing barriers between dispatches), slower.
  const char* validation_env = std::getenv("SPIRE_VULKAN_VALIDATION");
  bool want_sync = validation_env && std::strcmp(validation_env, "sync") == 0;
  bool want_validation = env_is_one("SPIRE_VULKAN_VALIDATION") || want_sync;
  bool validation = false;
  if (want_validation) {
    const char* layer = "VK_LAYER_KHRONOS_validation";
    if (!has_layer(layer)) {
      std::fprintf(stderr,
                   "spire: SPIRE_VULKAN_VALIDATION=1 but VK_LAYER_KHRONOS_validation is not installed "
                   "(Debian: vulkan-validationlayers); running without validation\n");
    } else {
      bool debug_utils = has_extension(exts, VK_EXT_DEBUG_UTILS_EXTENSION_NAME) ||
                         has_extension(instance_extensions(layer), VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
      if (!debug_utils) {
        std::fprintf(stderr, "spire: VK_EXT_debug_utils is missing: validation messages cannot be counted; "
                             "running without validation\n");
      } else {
        layers.push_back(layer);
        extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
        validation = true;
        if (want_sync) {
          if (has_extension(instance_extensions(layer), VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME))
            extensions.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
          else {
            std::fprintf(stderr, "spire: the validation layer lacks VK_EXT_validation_features: no synchronization validation\n");
            want_sync = false;
          }
        }
      }
    }
  }

  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "spire";
  app.pEngineName = "spire";
  app.apiVersion = inst->api_version;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  ci.enabledLayerCount = uint32_t(layers.size());
  ci.ppEnabledLayerNames = layers.data();
  ci.enabledExtensionCount = uint32_t(extensions.size());
  ci.ppEnabledExtensionNames = extensions.data();
  if (portability) ci.flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
  // Chained so that messages about instance creation itself are reported too.
  VkDebugUtilsMessengerCreateInfoEXT messenger_info = debug_messenger_create_info();
  VkValidationFeatureEnableEXT sync_feature = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
  VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  features.enabledValidationFeatureCount = 1;
  features.pEnabledValidationFeatures = &sync_feature;
  if (validation) ci.pNext = &messenger_info;
  if (validation && want_sync) messenger_info.pNext = &features;

  VkResult r = vkCreateInstance(&ci, nullptr, &inst->handle);
  if (r != VK_SUCCESS) {
    std::string why = std::string("vkCreateInstance failed with ") + std::string(result_name(r));
    note(why.c_str());
    delete inst;
    return nullptr;
  }
  volkLoadInstance(inst->handle);
  try {
    inst->functions = InstanceFunctions::load(vkGetInstanceProcAddr, inst->handle);
  } catch (const std::exception& e) {
    note(e.what());
    vkDestroyInstance(inst->handle, nullptr);
    delete inst;
    return nullptr;
  }
  if (validation) {
    VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
    // The messenger lives as long as the instance, which lives as long as the process.
    messenger_info.pNext = nullptr;
    if (vkCreateDebugUtilsMessengerEXT(inst->handle, &messenger_info, nullptr, &messenger) != VK_SUCCESS) {
      std::fprintf(stderr, "spire: vkCreateDebugUtilsMessengerEXT failed: validation messages will not be counted\n");
    }
  }
  inst->validation = validation;
  set_validation_enabled(validation);
  return inst;
}

}  // namespace

const Instance* instance() {
  // Created once and never destroyed: devices may outlive any static object that would own it.
  static std::once_flag once;
  static Instance* inst = nullptr;
  std::call_once(once, [] { inst = create_instance(); });
  return inst;
}

}  // namespace spire::rt::vulkan
