// The seed article's Triton ReLU as a GLSL compute shader: each workgroup owns a block of 1024 elements
// (256 invocations x 4, strided so that neighbouring invocations touch neighbouring elements) and masks the
// tail of the last block, as tl.arange(0, block_size) with mask = offsets < num_elem does.
#version 450
layout(local_size_x = 256) in;
layout(set = 0, binding = 0) readonly buffer Input { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Output { float y[]; };
layout(push_constant) uniform Params { uint n; };  // elements of the result

const uint kBlock = 1024;

void main() {
  uint block_start = SPIRE_GROUP_ID * kBlock;
  for (uint k = 0; k < kBlock / 256; ++k) {
    uint i = block_start + gl_LocalInvocationID.x + k * 256;
    if (i < n) y[i] = max(x[i], 0.0);
  }
}
