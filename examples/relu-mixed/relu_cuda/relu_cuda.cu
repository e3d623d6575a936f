// ReLU on raw device buffers, with a C ABI; no torch headers.
// The torch binding (torch-ext/torch_binding.cpp) declares these functions,
// handles tensors, the device and the current stream.
#include <cuda_runtime.h>

#include <cstdint>

namespace {

template <typename T>
__global__ void relu_kernel(T* __restrict__ out, T const* __restrict__ input,
                            int64_t n) {
  int64_t const stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride) {
    T const x = input[i];
    out[i] = x < T(0) ? T(0) : x;  // NaN and -0.0 pass through
  }
}

template <typename T>
int launch(T* out, T const* input, int64_t n, void* stream) {
  if (n <= 0) {
    return cudaSuccess;
  }
  int const threads = 256;
  int64_t blocks = (n + threads - 1) / threads;
  if (blocks > 65535) {
    blocks = 65535;
  }
  relu_kernel<T><<<static_cast<unsigned>(blocks), threads, 0,
                   static_cast<cudaStream_t>(stream)>>>(out, input, n);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

extern "C" int relu_cuda_f32(float* out, float const* input, int64_t n,
                             void* stream) {
  return launch(out, input, n, stream);
}

extern "C" int relu_cuda_f64(double* out, double const* input, int64_t n,
                             void* stream) {
  return launch(out, input, n, stream);
}

extern "C" char const* relu_cuda_error_string(int error) {
  return cudaGetErrorString(static_cast<cudaError_t>(error));
}
