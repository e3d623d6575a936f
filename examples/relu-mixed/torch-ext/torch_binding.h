#pragma once

#include <cstddef>
#include <cstdint>

#include <torch/all.h>

#if defined(CPU_KERNEL)
// relu_cpu/relu_cpu.cpp (cpp-cpu kernel `relu_cpu`).
void relu(at::Tensor& out, at::Tensor const& input);

// leaky_relu_rs/src/lib.rs (rust-cpu kernel `leaky_relu_rs`).
extern "C" void leaky_relu_rs_f32(float* out, float const* input,
                                  std::size_t n, float negative_slope);
void leaky_relu(at::Tensor& out, at::Tensor const& input,
                double negative_slope);
#endif

#if defined(CUDA_KERNEL)
// relu_cuda/relu_cuda.cu (cpp-cuda kernel `relu_cuda`); the stream is a
// cudaStream_t, passed as void* so this file needs no CUDA headers.
extern "C" {
int relu_cuda_f32(float* out, float const* input, int64_t n, void* stream);
int relu_cuda_f64(double* out, double const* input, int64_t n, void* stream);
char const* relu_cuda_error_string(int error);
}
void relu(at::Tensor& out, at::Tensor const& input);
#endif
