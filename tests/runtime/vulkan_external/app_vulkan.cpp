#include "tests/runtime/vulkan_external/app_vulkan.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace spire::test_app {

namespace {

void check(VkResult r, const char* what) {
  if (r != VK_SUCCESS) throw std::runtime_error(std::string("the test app's ") + what + " failed: " + std::to_string(r));
}

bool has_extension(const std::vector<VkExtensionProperties>& exts, const char* name) {
  return std::any_of(exts.begin(), exts.end(), [&](const auto& e) { return std::strcmp(e.extensionName, name) == 0; });
}

}  // namespace

std::unique_ptr<AppVulkan> AppVulkan::create(const AppOptions& options, std::string* why) {
  std::unique_ptr<AppVulkan> app(new AppVulkan());
  // The app's own loader entry. (The library stays loaded: spire may use the same one, and unloading a Vulkan
  // loader with layers inside a test process gains nothing.)
  app->library_ = ::dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!app->library_) {
    *why = "no Vulkan loader (libvulkan.so.1)";
    return nullptr;
  }
  app->get_instance_proc_addr_ =
      reinterpret_cast<PFN_vkGetInstanceProcAddr>(::dlsym(app->library_, "vkGetInstanceProcAddr"));
  auto gipa = app->get_instance_proc_addr_;
  app->vkCreateInstance = reinterpret_cast<PFN_vkCreateInstance>(gipa(nullptr, "vkCreateInstance"));
  app->vkEnumerateInstanceLayerProperties =
      reinterpret_cast<PFN_vkEnumerateInstanceLayerProperties>(gipa(nullptr, "vkEnumerateInstanceLayerProperties"));
  auto enumerate_version =
      reinterpret_cast<PFN_vkEnumerateInstanceVersion>(gipa(nullptr, "vkEnumerateInstanceVersion"));
  uint32_t loader_version = VK_API_VERSION_1_0;
  if (enumerate_version) enumerate_version(&loader_version);
  if (loader_version < VK_API_VERSION_1_1) {
    *why = "the Vulkan loader is older than 1.1";
    return nullptr;
  }
  app->api_version_ = std::min<uint32_t>(loader_version, VK_API_VERSION_1_3);

  VkApplicationInfo info{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  info.pApplicationName = "spire embedding test app";
  info.apiVersion = app->api_version_;
  std::vector<const char*> layers, extensions;
  if (options.validation) {
    layers.push_back("VK_LAYER_KHRONOS_validation");
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &info;
  ci.enabledLayerCount = uint32_t(layers.size());
  ci.ppEnabledLayerNames = layers.data();
  ci.enabledExtensionCount = uint32_t(extensions.size());
  ci.ppEnabledExtensionNames = extensions.data();
  if (options.validation && options.messenger) ci.pNext = options.messenger;
  if (app->vkCreateInstance(&ci, nullptr, &app->instance_) != VK_SUCCESS) {
    *why = "vkCreateInstance failed";
    return nullptr;
  }
  app->load_instance_functions();
  if (options.validation && options.messenger)
    check(app->vkCreateDebugUtilsMessengerEXT(app->instance_, options.messenger, nullptr, &app->messenger_),
          "vkCreateDebugUtilsMessengerEXT");

  // The first device of Vulkan 1.1 or newer with a compute queue.
  uint32_t n = 0;
  app->vkEnumeratePhysicalDevices(app->instance_, &n, nullptr);
  std::vector<VkPhysicalDevice> pds(n);
  app->vkEnumeratePhysicalDevices(app->instance_, &n, pds.data());
  for (VkPhysicalDevice pd : pds) {
    VkPhysicalDeviceProperties props{};
    app->vkGetPhysicalDeviceProperties(pd, &props);
    if (props.apiVersion < VK_API_VERSION_1_1) continue;
    uint32_t families = 0;
    app->vkGetPhysicalDeviceQueueFamilyProperties(pd, &families, nullptr);
    std::vector<VkQueueFamilyProperties> fams(families);
    app->vkGetPhysicalDeviceQueueFamilyProperties(pd, &families, fams.data());
    for (uint32_t i = 0; i < families && !app->physical_; ++i) {
      if (fams[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
        app->physical_ = pd;
        app->queue_family_ = i;
      }
    }
    if (app->physical_) break;
  }
  if (!app->physical_) {
    *why = "no Vulkan 1.1 device with a compute queue";
    return nullptr;
  }
  app->create_device(options.features);
  return app;
}

void AppVulkan::load_instance_functions() {
#define SPIRE_APP_LOAD(name) name = reinterpret_cast<PFN_##name>(get_instance_proc_addr_(instance_, #name));
  SPIRE_APP_FUNCTIONS(SPIRE_APP_LOAD)
#undef SPIRE_APP_LOAD
}

void AppVulkan::create_device(AppFeatures features) {
  VkPhysicalDeviceProperties props{};
  vkGetPhysicalDeviceProperties(physical_, &props);
  uint32_t n = 0;
  vkEnumerateDeviceExtensionProperties(physical_, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> exts(n);
  vkEnumerateDeviceExtensionProperties(physical_, nullptr, &n, exts.data());
  if (features == AppFeatures::VulkanVersionStructs && props.apiVersion < VK_API_VERSION_1_2)
    features = AppFeatures::PerFeatureStructs;  // the 1.2 structures need a 1.2 device

  features2_.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  vulkan11_.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  vulkan12_.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  storage16_.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
  float16_.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
  atomic_float_.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT;
  // Ask what the device supports, then enable of it what spire can use, as an app that wants every feature would.
  std::vector<const char*> enabled_extensions;
  void** tail = &features2_.pNext;
  auto append = [&](auto& s) {
    *tail = &s;
    tail = &s.pNext;
  };
  const bool atomic_float = has_extension(exts, VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
  if (features == AppFeatures::VulkanVersionStructs) {
    append(vulkan11_);
    append(vulkan12_);
  } else if (features == AppFeatures::PerFeatureStructs) {
    append(storage16_);
    append(float16_);
  }
  if (features != AppFeatures::None && atomic_float) append(atomic_float_);
  vkGetPhysicalDeviceFeatures2(physical_, &features2_);  // fills in what is supported
  // Enable, of what is supported, exactly the features spire can use (zero the rest, keep sType and pNext).
  auto keep_only = [](auto& s, auto... members) {
    auto copy = s;
    auto type = s.sType;
    void* next = s.pNext;
    std::memset(&s, 0, sizeof(s));
    s.sType = type;
    s.pNext = next;
    ((s.*members = copy.*members), ...);
  };
  VkPhysicalDeviceFeatures core{};
  core.shaderFloat64 = features2_.features.shaderFloat64;
  core.shaderInt64 = features2_.features.shaderInt64;
  features2_.features = core;
  keep_only(vulkan11_, &VkPhysicalDeviceVulkan11Features::storageBuffer16BitAccess,
            &VkPhysicalDeviceVulkan11Features::storagePushConstant16);
  keep_only(vulkan12_, &VkPhysicalDeviceVulkan12Features::shaderFloat16);
  keep_only(storage16_, &VkPhysicalDevice16BitStorageFeatures::storageBuffer16BitAccess,
            &VkPhysicalDevice16BitStorageFeatures::storagePushConstant16);
  keep_only(float16_, &VkPhysicalDeviceShaderFloat16Int8Features::shaderFloat16);
  keep_only(atomic_float_, &VkPhysicalDeviceShaderAtomicFloatFeaturesEXT::shaderBufferFloat32AtomicAdd);
  if (features != AppFeatures::None && atomic_float && atomic_float_.shaderBufferFloat32AtomicAdd)
    enabled_extensions.push_back(VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
  if (props.apiVersion < VK_API_VERSION_1_2 && features == AppFeatures::PerFeatureStructs && float16_.shaderFloat16)
    enabled_extensions.push_back(VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  if (has_extension(exts, "VK_KHR_portability_subset")) enabled_extensions.push_back("VK_KHR_portability_subset");
  has_chain_ = features != AppFeatures::None;

  float priority = 1.0f;
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = queue_family_;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  VkDeviceCreateInfo ci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  ci.pNext = has_chain_ ? &features2_ : nullptr;
  ci.queueCreateInfoCount = 1;
  ci.pQueueCreateInfos = &qi;
  ci.enabledExtensionCount = uint32_t(enabled_extensions.size());
  ci.ppEnabledExtensionNames = enabled_extensions.data();
  check(vkCreateDevice(physical_, &ci, nullptr, &device_), "vkCreateDevice");
  vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
  VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pi.queueFamilyIndex = queue_family_;
  check(vkCreateCommandPool(device_, &pi, nullptr, &pool_), "vkCreateCommandPool");
}

AppVulkan::~AppVulkan() {
  if (device_) {
    vkDeviceWaitIdle(device_);
    for (auto& b : buffers_) {
      vkDestroyBuffer(device_, b->buffer, nullptr);
      vkFreeMemory(device_, b->memory, nullptr);
    }
    if (pool_) vkDestroyCommandPool(device_, pool_, nullptr);
    vkDestroyDevice(device_, nullptr);
  }
  if (messenger_) vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
  if (instance_) vkDestroyInstance(instance_, nullptr);
}

rt::vulkan::ExternalVulkan AppVulkan::external() const {
  rt::vulkan::ExternalVulkan e;
  e.instance = instance_;
  e.physical_device = physical_;
  e.device = device_;
  e.queue_family = queue_family_;
  e.queue = queue_;
  e.get_instance_proc_addr = get_instance_proc_addr_;
  e.api_version = api_version_;
  e.enabled_features = has_chain_ ? &features2_ : nullptr;
  return e;
}

AppBuffer& AppVulkan::create_buffer(uint64_t bytes) {
  auto b = std::make_unique<AppBuffer>();
  b->bytes = bytes;
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = bytes;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(vkCreateBuffer(device_, &bi, nullptr, &b->buffer), "vkCreateBuffer");
  VkMemoryRequirements req{};
  vkGetBufferMemoryRequirements(device_, b->buffer, &req);
  VkPhysicalDeviceMemoryProperties mp{};
  vkGetPhysicalDeviceMemoryProperties(physical_, &mp);
  constexpr VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  uint32_t type = ~0u;
  for (uint32_t i = 0; i < mp.memoryTypeCount && type == ~0u; ++i)
    if ((req.memoryTypeBits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want) type = i;
  if (type == ~0u) throw std::runtime_error("the test app found no host-visible coherent memory");
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = type;
  check(vkAllocateMemory(device_, &ai, nullptr, &b->memory), "vkAllocateMemory");
  check(vkBindBufferMemory(device_, b->buffer, b->memory, 0), "vkBindBufferMemory");
  check(vkMapMemory(device_, b->memory, 0, VK_WHOLE_SIZE, 0, &b->mapped), "vkMapMemory");
  buffers_.push_back(std::move(b));
  return *buffers_.back();
}

void AppVulkan::fill_with_own_commands(const AppBuffer& buffer, uint32_t pattern) {
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  check(vkAllocateCommandBuffers(device_, &ai, &cmd), "vkAllocateCommandBuffers");
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
  vkCmdFillBuffer(cmd, buffer.buffer, 0, VK_WHOLE_SIZE, pattern);
  VkMemoryBarrier to_host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  to_host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0, nullptr, 0,
                       nullptr);
  check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
  VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkFence fence = VK_NULL_HANDLE;
  check(vkCreateFence(device_, &fi, nullptr, &fence), "vkCreateFence");
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cmd;
  check(vkQueueSubmit(queue_, 1, &si, fence), "vkQueueSubmit");
  check(vkWaitForFences(device_, 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
  vkDestroyFence(device_, fence, nullptr);
  vkFreeCommandBuffers(device_, pool_, 1, &cmd);
}

bool AppVulkan::device_supports_float64() const {
  VkPhysicalDeviceFeatures2 f{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  vkGetPhysicalDeviceFeatures2(physical_, &f);
  return f.features.shaderFloat64;
}

std::string AppVulkan::device_name() const {
  VkPhysicalDeviceProperties props{};
  vkGetPhysicalDeviceProperties(physical_, &props);
  return props.deviceName;
}

}  // namespace spire::test_app
