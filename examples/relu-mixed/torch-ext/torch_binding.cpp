#include <torch/library.h>

#if defined(CUDA_KERNEL)
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#endif

#include "registration.h"
#include "torch_binding.h"

namespace {

void check_out(at::Tensor const& out, at::Tensor const& input) {
  TORCH_CHECK(out.device() == input.device(),
              "out and input must be on the same device");
  TORCH_CHECK(out.scalar_type() == input.scalar_type(),
              "out and input must have the same dtype");
  TORCH_CHECK(out.sizes() == input.sizes(),
              "out and input must have the same shape, got ", out.sizes(),
              " and ", input.sizes());
}

}  // namespace

#if defined(CPU_KERNEL)
void leaky_relu(at::Tensor& out, at::Tensor const& input,
                double negative_slope) {
  TORCH_CHECK(input.device().is_cpu(), "leaky_relu: input must be on CPU");
  TORCH_CHECK(input.scalar_type() == at::kFloat,
              "leaky_relu: only float32 is supported, got ",
              input.scalar_type());
  check_out(out, input);
  at::Tensor const src = input.contiguous();
  at::Tensor dst = out.is_contiguous() ? out : at::empty_like(src);
  leaky_relu_rs_f32(dst.data_ptr<float>(), src.const_data_ptr<float>(),
                    static_cast<std::size_t>(src.numel()),
                    static_cast<float>(negative_slope));
  if (!dst.is_same(out)) {
    out.copy_(dst);
  }
}
#endif

#if defined(CUDA_KERNEL)
// Uses only libc10: the device guard and the current stream dispatch to the
// CUDA implementation registered by torch (libc10_cuda) at run time.
void relu(at::Tensor& out, at::Tensor const& input) {
  TORCH_CHECK(input.is_cuda(), "relu: input must be a CUDA tensor");
  check_out(out, input);
  if (input.numel() == 0) {
    return;
  }
  c10::DeviceGuard const device_guard(input.device());
  void* const stream = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)
                           ->getStream(input.device())
                           .native_handle();
  at::Tensor const src = input.contiguous();
  at::Tensor dst = out.is_contiguous() ? out : at::empty_like(src);
  int error = 0;
  switch (src.scalar_type()) {
    case at::kFloat:
      error = relu_cuda_f32(dst.data_ptr<float>(), src.const_data_ptr<float>(),
                            src.numel(), stream);
      break;
    case at::kDouble:
      error = relu_cuda_f64(dst.data_ptr<double>(),
                            src.const_data_ptr<double>(), src.numel(), stream);
      break;
    default:
      TORCH_CHECK(false, "relu: unsupported dtype ", src.scalar_type());
  }
  TORCH_CHECK(error == 0, "relu: kernel launch failed: ",
              relu_cuda_error_string(error));
  if (!dst.is_same(out)) {
    out.copy_(dst);
  }
}
#endif

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("relu(Tensor! out, Tensor input) -> ()");
  ops.def("leaky_relu(Tensor! out, Tensor input, float negative_slope) -> ()");
#if defined(CPU_KERNEL)
  ops.impl("relu", torch::kCPU, &relu);
  ops.impl("leaky_relu", torch::kCPU, &leaky_relu);
#elif defined(CUDA_KERNEL)
  ops.impl("relu", torch::kCUDA, &relu);
#endif
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
