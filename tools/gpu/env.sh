# Sourced at the start of every run on the lent GPU machine: Debian's Vulkan loader (into /), the
# validation layers and libfmt (into /tmp/gl, so nothing else of the image is touched), NVIDIA's ICD.
for f in .gl/libvulkan1*.deb .gl/libegl1*.deb .gl/libglvnd0*.deb .gl/libopengl0*.deb .gl/libgl1*.deb .gl/libglx0*.deb .gl/libgles2*.deb; do dpkg -x "$f" /; done
ldconfig
mkdir -p /tmp/gl
for f in .gl/vulkan-validationlayers*.deb .gl/libfmt9*.deb; do dpkg -x "$f" /tmp/gl; done
# spire links libonnx1 and libprotobuf32 where the ONNX importer was built (frontend/onnx): fetch them into
# .gl once, beside the others (apt-get download libonnx1 libprotobuf32), or the binary will not start there.
for f in .gl/libonnx1*.deb .gl/libprotobuf32*.deb; do [ -f "$f" ] && dpkg -x "$f" /tmp/gl; done
export LD_LIBRARY_PATH=/tmp/gl/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export VK_LAYER_PATH=/tmp/gl/usr/share/vulkan/explicit_layer.d
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export PATH=/usr/local/cuda/bin:$PATH
B=.gpu/bin
