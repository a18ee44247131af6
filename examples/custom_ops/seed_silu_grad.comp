// The gradient of SiLU (seed 001's backward kernel): grad * s * (1 + x (1 - s)), s = sigmoid(x).
#version 450
layout(local_size_x = 256) in;
layout(set = 0, binding = 0) readonly buffer Grad { float g[]; };
layout(set = 0, binding = 1) readonly buffer Input { float x[]; };
layout(set = 0, binding = 2) writeonly buffer Output { float dx[]; };
layout(push_constant) uniform Params { uint n; };

void main() {
  uint i = SPIRE_GROUP_ID * 256 + gl_LocalInvocationID.x;
  if (i < n) {
    float v = x[i];
    float s = 1.0 / (1.0 + exp(-v));
    dx[i] = g[i] * s * (1.0 + v * (1.0 - s));
  }
}
