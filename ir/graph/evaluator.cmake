# The reference evaluator (evaluator.h): the driver and the references that many ops share (a heavy op's
# reference is in its family file, ops/*_ops.cpp).
target_sources(spire_graph PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/evaluator.cpp
  ${CMAKE_CURRENT_LIST_DIR}/eval_pointwise.cpp
  ${CMAKE_CURRENT_LIST_DIR}/eval_reduce.cpp
  ${CMAKE_CURRENT_LIST_DIR}/eval_shape.cpp
)
