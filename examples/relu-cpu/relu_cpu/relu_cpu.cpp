#include <ATen/ATen.h>
#include <ATen/Dispatch.h>

#include "relu_impl.h"

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
  // Write straight into `out` when it is contiguous, else through a buffer.
  at::Tensor dst = out.is_contiguous() ? out : at::empty_like(src);

  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::kHalf, at::kBFloat16, src.scalar_type(), "relu_cpu", [&] {
        relu_cpu::relu_contiguous<scalar_t>(dst.data_ptr<scalar_t>(),
                                            src.const_data_ptr<scalar_t>(),
                                            src.numel());
      });

  if (!dst.is_same(out)) {
    out.copy_(dst);
  }
}
