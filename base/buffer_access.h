// How a kernel touches a buffer it binds: what the kernel IR declares, what a kernel interface carries to the runtime,
// and what the runtime orders launches by (runtime/launch_hazards.h).
#pragma once

#include <cstdint>
#include <string_view>

namespace spire {

enum class Access : uint8_t { Read, Write, ReadWrite };

inline std::string_view access_name(Access a) {
  switch (a) {
    case Access::Read: return "read";
    case Access::Write: return "write";
    case Access::ReadWrite: return "readwrite";
  }
  return "?";
}

}  // namespace spire
