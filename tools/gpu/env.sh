# Sourced at the start of every run script on the lent GPU machine (the repository root is the working directory):
# Debian's Vulkan loader (into /), the validation layers and libfmt (into /tmp/gl, so nothing else of the image is
# touched), NVIDIA's ICD; then the pack that tools/gpu/prepare.sh made here, unpacked into .gpu/ once.
for f in .gl/libvulkan1*.deb .gl/libegl1*.deb .gl/libglvnd0*.deb .gl/libopengl0*.deb .gl/libgl1*.deb .gl/libglx0*.deb .gl/libgles2*.deb; do dpkg -x "$f" /; done
ldconfig
mkdir -p /tmp/gl
for f in .gl/vulkan-validationlayers*.deb .gl/libfmt9*.deb; do dpkg -x "$f" /tmp/gl; done
# spire links libonnx1 and libprotobuf32 where the ONNX importer was built (frontend/onnx): fetch them into
# .gl once, beside the others (apt-get download libonnx1 libprotobuf32), or the binary will not start there.
for f in .gl/libonnx1*.deb .gl/libprotobuf32*.deb; do [ -f "$f" ] && dpkg -x "$f" /tmp/gl; done
[ -f .gpu/pack.tar.xz ] && [ ! -x .gpu/bin/spire ] && tar xJf .gpu/pack.tar.xz -C .gpu
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/tmp/gl/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export VK_LAYER_PATH=/tmp/gl/usr/share/vulkan/explicit_layer.d
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export PATH=/usr/local/cuda/bin:$PATH
B=.gpu/bin
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader

# One line of a spire tuning cache that forces CONFIG on one kernel, under the key the tuner writes on this machine:
#   cache_line BACKEND(cuda|vulkan) OP SHAPE DTYPE CONFIG
# e.g. cache_line vulkan matmul m8192_k8192_n8192_abf16_bbf16 f32 "tile_m=128,...". A cached config that is not among
# the op's candidates is ignored with a warning (the benchmarks print it), so a forced tiling must be a candidate.
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
vulkan_driver="NVIDIA $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
cuda_driver="CUDA driver 13.0"
cache_line() {
  local drv=$cuda_driver
  [ "$1" = vulkan ] && drv=$vulkan_driver
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t1\t1\n' "$1" "$gpu_name" "$drv" "$2" "$3" "$4" "$5"
}
# A tuning cache file holding the lines given on stdin (none: the heuristics everywhere).
cache_file() { { printf "# spire tuning cache 1\n"; cat; } > "$1"; }
