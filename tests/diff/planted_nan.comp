// max(x, 0), but element 5 is NaN: a NaN planted in an intermediate value.
#version 450
layout(local_size_x = 256) in;
layout(set = 0, binding = 0) readonly buffer Input { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Output { float y[]; };
layout(push_constant) uniform Params { uint n; };  // elements of the result

void main() {
  uint i = SPIRE_GROUP_ID * 256 + gl_LocalInvocationID.x;
  // 0/0 from a value the compiler cannot fold: x[i] - x[i] is 0 for every finite x.
  float zero = x[i] - x[i];
  if (i < n) y[i] = i == 5 ? zero / zero : max(x[i], 0.0);
}
