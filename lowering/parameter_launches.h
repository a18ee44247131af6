// Launches that compute only from parameters and constants: a half weight widened to f32, a Winograd weight
// transform, a weight moved channels last. Their results hold until a parameter changes, so the executor runs them in
// the first step and after set() of a parameter, not in every step (an inference at batch 1 is mostly small launches,
// and these are a fifth of resnet18's). A parameter that the graph's state updates change (training), or that a launch
// writes, is not a fixed input: launches reading it run every step.
#pragma once

#include <vector>

#include "lowering/plan.h"

namespace spire::lowering {

// Sets Launch::parameters_only: a launch qualifies when everything it reads is a fixed parameter, a constant, or a
// result of launches that qualify, and everything it writes is an intermediate no other launch writes.
void mark_parameter_launches(Plan& plan);

// The buffers that parameters-only launches write and other launches read: they must keep their values from one step
// to the next (plan_memory gives them the whole step's lifetime in the arena).
std::vector<bool> kept_across_steps(const Plan& plan);

}  // namespace spire::lowering
