// Shows a kernel as text, one statement per line, for `spire kernel NAME --print` and for error reports.
#pragma once

#include <string>

#include "ir/kernel/kernel.h"

namespace spire::kir {

std::string print(const Kernel& k);

}  // namespace spire::kir
