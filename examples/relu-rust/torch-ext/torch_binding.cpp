#include <torch/library.h>

#include "registration.h"
#include "torch_binding.h"

#if defined(CPU_KERNEL)
// The Rust kernel works on contiguous buffers; strides are handled here.
void relu(at::Tensor& out, at::Tensor const& input) {
  TORCH_CHECK(input.device().is_cpu(), "relu: input must be a CPU tensor");
  TORCH_CHECK(out.device() == input.device(),
              "relu: out and input must be on the same device");
  TORCH_CHECK(out.scalar_type() == input.scalar_type(),
              "relu: out and input must have the same dtype, got ",
              out.scalar_type(), " and ", input.scalar_type());
  TORCH_CHECK(out.sizes() == input.sizes(),
              "relu: out and input must have the same shape, got ",
              out.sizes(), " and ", input.sizes());

  at::Tensor const src = input.contiguous();
  at::Tensor dst = out.is_contiguous() ? out : at::empty_like(src);
  auto const n = static_cast<std::size_t>(src.numel());

  switch (src.scalar_type()) {
    case at::kFloat:
      relu_rs_f32(dst.data_ptr<float>(), src.const_data_ptr<float>(), n);
      break;
    case at::kDouble:
      relu_rs_f64(dst.data_ptr<double>(), src.const_data_ptr<double>(), n);
      break;
    default:
      TORCH_CHECK(false, "relu: unsupported dtype ", src.scalar_type(),
                  " (float32 and float64 are supported)");
  }

  if (!dst.is_same(out)) {
    out.copy_(dst);
  }
}
#endif

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("relu(Tensor! out, Tensor input) -> ()");
#if defined(CPU_KERNEL)
  ops.impl("relu", torch::kCPU, &relu);
#endif
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
