#pragma once

#include <cstdint>

#ifndef RELU_CPU_BLOCK
#error "RELU_CPU_BLOCK must be set through the kernel's cxx-flags"
#endif

namespace relu_cpu {

// torch.relu semantics: negative values become 0; NaN and -0.0 pass through.
template <typename T>
inline T relu_one(T x) {
  return static_cast<float>(x) < 0.0f ? T(0) : x;
}

template <>
inline double relu_one<double>(double x) {
  return x < 0.0 ? 0.0 : x;
}

// Processes the input in blocks of RELU_CPU_BLOCK elements; the inner loop has
// a constant trip count, which the compiler vectorizes.
template <typename T>
void relu_contiguous(T* out, T const* input, int64_t n) {
  int64_t i = 0;
  for (; i + RELU_CPU_BLOCK <= n; i += RELU_CPU_BLOCK) {
    for (int64_t j = 0; j < RELU_CPU_BLOCK; ++j) {
      out[i + j] = relu_one(input[i + j]);
    }
  }
  for (; i < n; ++i) {
    out[i] = relu_one(input[i]);
  }
}

}  // namespace relu_cpu
