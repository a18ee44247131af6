# Heavy ops of the lowering: matmul, conv2d (+ gradients), pooling (+ gradients), softmax, cross-entropy.
#
# Two libraries:
#  * spire_heavy_kernels: the kernel templates (lowering/heavy_kernels/*_kernels.cpp), which know only
#    ir/kernel, so they are tested and reused without a graph;
#  * spire_heavy_lowering: lower_matmul.cpp, lower_conv2d.cpp, lower_pool2d.cpp, lower_softmax.cpp (graph
#    nodes -> template shapes -> ctx.launch), and what tunable lowerings share (tunable.cpp: a node's
#    config space and program; device_type.cpp: how graph dtypes are stored on devices).
# lowering/CMakeLists.txt includes this file after add_library(spire_lowering ...); spire_lowering then links
# spire_heavy_lowering. tests/lowering_heavy includes it on its own when the lowering library is not built.
if(NOT TARGET spire_heavy_kernels)
  add_library(spire_heavy_kernels STATIC
    ${CMAKE_CURRENT_LIST_DIR}/heavy_kernels/heavy_kernel.cpp
    ${CMAKE_CURRENT_LIST_DIR}/heavy_kernels/workgroup_reduce.cpp
    ${CMAKE_CURRENT_LIST_DIR}/heavy_kernels/tuning_config.cpp
    ${CMAKE_CURRENT_LIST_DIR}/heavy_kernels/tiled_gemm.cpp
    ${CMAKE_CURRENT_LIST_DIR}/heavy_kernels/split_sum_kernel.cpp
    ${CMAKE_CURRENT_LIST_DIR}/heavy_kernels/zero_fill_kernel.cpp
    ${CMAKE_CURRENT_LIST_DIR}/heavy_kernels/widen_kernel.cpp
    ${CMAKE_CURRENT_LIST_DIR}/heavy_kernels/channels_last_kernel.cpp
    ${CMAKE_CURRENT_LIST_DIR}/heavy_kernels/matmul_kernel.cpp
    ${CMAKE_CURRENT_LIST_DIR}/heavy_kernels/conv2d_grad_weight_images_kernel.cpp
    ${CMAKE_CURRENT_LIST_DIR}/heavy_kernels/conv2d_image_strips_kernel.cpp
    ${CMAKE_CURRENT_LIST_DIR}/heavy_kernels/conv2d_images_kernel.cpp
    ${CMAKE_CURRENT_LIST_DIR}/heavy_kernels/staged_copy.cpp
    ${CMAKE_CURRENT_LIST_DIR}/heavy_kernels/matmul_mma_kernel.cpp
    ${CMAKE_CURRENT_LIST_DIR}/heavy_kernels/matmul_packed_kernel.cpp
    ${CMAKE_CURRENT_LIST_DIR}/heavy_kernels/conv2d_mma_kernel.cpp
    ${CMAKE_CURRENT_LIST_DIR}/heavy_kernels/matmul_wgmma_kernel.cpp
    ${CMAKE_CURRENT_LIST_DIR}/heavy_kernels/matmul_workgroup_mma_kernel.cpp
    ${CMAKE_CURRENT_LIST_DIR}/heavy_kernels/tile_order.cpp
    ${CMAKE_CURRENT_LIST_DIR}/heavy_kernels/conv2d_kernels.cpp
    ${CMAKE_CURRENT_LIST_DIR}/heavy_kernels/conv2d_gemm_kernels.cpp
    ${CMAKE_CURRENT_LIST_DIR}/heavy_kernels/conv2d_winograd_kernels.cpp
    ${CMAKE_CURRENT_LIST_DIR}/heavy_kernels/pool2d_kernels.cpp
    ${CMAKE_CURRENT_LIST_DIR}/heavy_kernels/pooled_side_output.cpp
    ${CMAKE_CURRENT_LIST_DIR}/heavy_kernels/softmax_kernels.cpp)
  target_link_libraries(spire_heavy_kernels PUBLIC spire_kernel_ir fmt::fmt)

  add_library(spire_heavy_lowering STATIC
    ${CMAKE_CURRENT_LIST_DIR}/heavy_kernels/heavy_lowering.cpp
    ${CMAKE_CURRENT_LIST_DIR}/tunable.cpp
    ${CMAKE_CURRENT_LIST_DIR}/device_type.cpp
    ${CMAKE_CURRENT_LIST_DIR}/lower_matmul.cpp
    ${CMAKE_CURRENT_LIST_DIR}/lower_conv2d.cpp
    ${CMAKE_CURRENT_LIST_DIR}/lower_pool2d.cpp
    ${CMAKE_CURRENT_LIST_DIR}/lower_softmax.cpp)
  target_link_libraries(spire_heavy_lowering PUBLIC spire_heavy_kernels spire_graph spire_runtime fmt::fmt)
endif()

if(TARGET spire_lowering)
  target_link_libraries(spire_lowering PUBLIC spire_heavy_lowering)
endif()
