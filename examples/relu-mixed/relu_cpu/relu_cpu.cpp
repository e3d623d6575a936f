#include <ATen/ATen.h>
#include <ATen/Dispatch.h>

void relu(at::Tensor& out, at::Tensor const& input) {
  TORCH_CHECK(input.device().is_cpu(), "relu: input must be a CPU tensor");
  TORCH_CHECK(out.device() == input.device(),
              "relu: out and input must be on the same device");
  TORCH_CHECK(out.scalar_type() == input.scalar_type(),
              "relu: out and input must have the same dtype");
  TORCH_CHECK(out.sizes() == input.sizes(),
              "relu: out and input must have the same shape, got ",
              out.sizes(), " and ", input.sizes());

  at::Tensor const src = input.contiguous();
  at::Tensor dst = out.is_contiguous() ? out : at::empty_like(src);
  int64_t const n = src.numel();

  AT_DISPATCH_FLOATING_TYPES(src.scalar_type(), "relu_cpu", [&] {
    scalar_t const* in = src.const_data_ptr<scalar_t>();
    scalar_t* o = dst.data_ptr<scalar_t>();
    for (int64_t i = 0; i < n; ++i) {
      // torch.relu semantics: NaN and -0.0 pass through.
      o[i] = in[i] < scalar_t(0) ? scalar_t(0) : in[i];
    }
  });

  if (!dst.is_same(out)) {
    out.copy_(dst);
  }
}
