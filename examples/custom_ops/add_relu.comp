// Fused add + ReLU (seed 004: relu(x + param) becomes one kernel instead of two): one element per
// invocation, both inputs of the result's shape.
#version 450
layout(local_size_x = 256) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) writeonly buffer Output { float y[]; };
layout(push_constant) uniform Params { uint n; };

void main() {
  uint i = SPIRE_GROUP_ID * 256 + gl_LocalInvocationID.x;
  if (i < n) y[i] = max(a[i] + b[i], 0.0);
}
