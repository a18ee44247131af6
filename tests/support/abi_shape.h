// What the CUDA ABI tests compare (tests/runtime/cuda/cuda_abi_test.cpp, tests/runtime/cache/cuda_linker_abi_test.cpp):
// the ABI shape of a type, so that spire's own declarations of driver entry points can be checked against NVIDIA's
// PFN typedefs without including cuda.h where they are declared.
#pragma once

#include <cstddef>
#include <type_traits>

namespace spire::testing_support::abi {

// Integers and enums by width, every pointer to an object as void* unless it points to something whose shape matters
// (pointers to integers, pointers to pointers), function pointers by the shapes of their result and parameters.
template <std::size_t N> struct Int {};
template <class T, class = void> struct Shape { using type = T; };
template <class T>
struct Shape<T, std::enable_if_t<std::is_integral_v<T> || std::is_enum_v<T>>> { using type = Int<sizeof(T)>; };
template <class T>
struct Shape<T*, void> {
  using pointee = std::remove_cv_t<T>;
  using type = std::conditional_t<std::is_class_v<pointee> || std::is_void_v<pointee>, void*,
                                  typename Shape<pointee>::type*>;
};
template <class R, class... A>
struct Shape<R (*)(A...), void> { using type = typename Shape<R>::type (*)(typename Shape<A>::type...); };

template <class A, class B>
constexpr bool same_abi = std::is_same_v<typename Shape<A>::type, typename Shape<B>::type>;

}  // namespace spire::testing_support::abi
