// A PTX interpreter for the subset backends/ptx emits: parses a module and runs an entry over a grid on the
// host, thread by thread, with barriers, shared memory and global memory as host memory.
//
// It is a test oracle, not a product: the mock driver (tests/runtime/cuda/mock_driver) runs kernels with it, so the
// runtime, the PTX backend and the lowering can be checked end to end against CPU references on a machine
// without a GPU. Arithmetic follows the PTX ISA's definitions (IEEE round-to-nearest for .rn, saturating
// float-to-int conversions, PTX's results for integer division by zero); ex2.approx is modelled as the
// correctly rounded 2^x. Anything outside the subset is refused when the module is parsed, naming the line.
// Warp-collective instructions (shfl.sync; wmma.load, wmma.mma and wmma.store of shape m16n16k16) run for a whole
// warp once all 32 of its lanes reach them; wmma fragments are spread over the lanes in a layout of the
// interpreter's own (PTX leaves it opaque: see warp_wmma in ptx_interp.cpp).
//
// Hopper (sm_90a, ptx_interp_hopper.h): mbarrier objects; tensor copies (cp.async.bulk.tensor) that land at once from
// maps in the mock driver's format (tests/runtime/cuda/mock_driver/mock_tensor_map.h), passed by value as 128-byte parameters
// and named by their generic address (cvta.param); and warpgroup MMA (wgmma), run for the 128 threads of a warpgroup
// once all reach it, each multiply applied when a wgmma.wait_group covers its batch. A try_wait that returns false
// lets the block's other threads run before its thread polls again; a block whose live threads can only poll phases
// that never complete faults as a deadlock.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace spire::ptx::interp {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Param {
  std::string name;
  int bytes = 0;
};

struct Entry {
  std::string name;
  std::vector<Param> params;
  std::array<unsigned, 3> reqntid{0, 0, 0};  // 0: no .reqntid
};

// Called before every global memory access; throws (any exception) to fault the launch.
using GlobalCheck = std::function<void(uint64_t address, uint32_t bytes)>;

class Module {
 public:
  static std::unique_ptr<Module> parse(const std::string& ptx);  // throws Error naming the line
  ~Module();
  const std::vector<Entry>& entries() const;
  const Entry* find(const std::string& name) const;
  // Runs `entry` with the parameter values `params` (cuLaunchKernel's kernelParams) and `dynamic_shared_bytes`
  // for the module's .extern .shared array (placed after the static ones, at its alignment). A parameter's entry in
  // `params` points at its bytes (8 for a scalar or pointer, 128 for a tensor map). Throws Error on a fault (the check's
  // exception is wrapped, naming the instruction), a shared memory overrun, a deadlock, or a launch that runs over
  // `max_instructions` in all.
  void launch(const Entry& entry, std::array<unsigned, 3> grid, std::array<unsigned, 3> block, void** params,
              const GlobalCheck& check, uint32_t dynamic_shared_bytes = 0,
              uint64_t max_instructions = 20'000'000'000ull) const;

 private:
  struct Impl;
  explicit Module(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace spire::ptx::interp
