// SiLU, x * sigmoid(x) (seed 001's Triton silu kernel), one element per invocation.
#version 450
layout(local_size_x = 256) in;
layout(set = 0, binding = 0) readonly buffer Input { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Output { float y[]; };
layout(push_constant) uniform Params { uint n; };

void main() {
  uint i = SPIRE_GROUP_ID * 256 + gl_LocalInvocationID.x;
  if (i < n) {
    float v = x[i];
    y[i] = v / (1.0 + exp(-v));
  }
}
