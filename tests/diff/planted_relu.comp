// max(x, 0), but every 61st element (from the 7th) gets 0.5 added: a kernel wrong in a few elements.
#version 450
layout(local_size_x = 256) in;
layout(set = 0, binding = 0) readonly buffer Input { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Output { float y[]; };
layout(push_constant) uniform Params { uint n; };  // elements of the result

void main() {
  uint i = SPIRE_GROUP_ID * 256 + gl_LocalInvocationID.x;
  if (i < n) y[i] = max(x[i], 0.0) + (i % 61 == 7 ? 0.5 : 0.0);
}
