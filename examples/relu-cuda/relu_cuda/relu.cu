// ReLU for CUDA tensors.
//
// Only libc10 and the CUDA runtime are used on the host side (no
// libc10_cuda / libtorch_cuda): the device guard and the current stream come
// from c10's backend-neutral DeviceGuard and Stream::native_handle(), which
// dispatch to the CUDA implementation that torch registers at run time.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace {

template <typename T>
__global__ void relu_kernel(T* __restrict__ out, T const* __restrict__ input,
                            int64_t n) {
  int64_t const stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride) {
    T const x = input[i];
    // torch.relu semantics: NaN and -0.0 pass through.
    out[i] = static_cast<float>(x) < 0.0f ? T(0) : x;
  }
}

template <>
__global__ void relu_kernel<double>(double* __restrict__ out,
                                    double const* __restrict__ input,
                                    int64_t n) {
  int64_t const stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride) {
    double const x = input[i];
    out[i] = x < 0.0 ? 0.0 : x;
  }
}

}  // namespace

void relu(at::Tensor& out, at::Tensor const& input) {
  TORCH_CHECK(input.is_cuda(), "relu: input must be a CUDA tensor");
  TORCH_CHECK(out.device() == input.device(),
              "relu: out and input must be on the same device");
  TORCH_CHECK(out.scalar_type() == input.scalar_type(),
              "relu: out and input must have the same dtype, got ",
              out.scalar_type(), " and ", input.scalar_type());
  TORCH_CHECK(out.sizes() == input.sizes(),
              "relu: out and input must have the same shape, got ",
              out.sizes(), " and ", input.sizes());

  int64_t const n = input.numel();
  if (n == 0) {
    return;
  }

  c10::DeviceGuard const device_guard(input.device());
  c10::Stream const stream =
      c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)
          ->getStream(input.device());
  auto const cuda_stream = static_cast<cudaStream_t>(stream.native_handle());

  at::Tensor const src = input.contiguous();
  at::Tensor dst = out.is_contiguous() ? out : at::empty_like(src);

  int const threads = 256;
  int64_t const blocks = std::min<int64_t>((n + threads - 1) / threads, 65535);

  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::kHalf, at::kBFloat16, src.scalar_type(), "relu_cuda", [&] {
        relu_kernel<scalar_t><<<blocks, threads, 0, cuda_stream>>>(
            dst.data_ptr<scalar_t>(), src.const_data_ptr<scalar_t>(), n);
      });
  cudaError_t const err = cudaGetLastError();
  TORCH_CHECK(err == cudaSuccess, "relu: kernel launch failed: ",
              cudaGetErrorString(err));

  if (!dst.is_same(out)) {
    out.copy_(dst);
  }
}
