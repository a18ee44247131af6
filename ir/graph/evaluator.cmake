# The reference evaluator (evaluator.h): the driver and one source per op family.
target_sources(spire_graph PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/evaluator.cpp
  ${CMAKE_CURRENT_LIST_DIR}/eval_pointwise.cpp
  ${CMAKE_CURRENT_LIST_DIR}/eval_reduce.cpp
  ${CMAKE_CURRENT_LIST_DIR}/eval_shape.cpp
  ${CMAKE_CURRENT_LIST_DIR}/eval_matmul.cpp
  ${CMAKE_CURRENT_LIST_DIR}/eval_conv.cpp
  ${CMAKE_CURRENT_LIST_DIR}/eval_pool.cpp
  ${CMAKE_CURRENT_LIST_DIR}/eval_softmax_loss.cpp
)
