// max(x, 0); with config variant=1 (SPIRE_CONFIG_variant, one module per config) element 7 gets 0.5 added.
#version 450
layout(local_size_x = 256) in;
layout(set = 0, binding = 0) readonly buffer Input { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Output { float y[]; };
layout(push_constant) uniform Params { uint n; };  // elements of the result

void main() {
  uint i = SPIRE_GROUP_ID * 256 + gl_LocalInvocationID.x;
  if (i < n) y[i] = max(x[i], 0.0) + (SPIRE_CONFIG_variant == 1 && i == 7 ? 0.5 : 0.0);
}
