// ReLU for XPU tensors, as a SYCL kernel on torch's current XPU queue.
//
// The queue comes from c10's backend-neutral Stream::native_handle() (a
// sycl::queue* for XPU), so no libc10_xpu / libtorch_xpu header or symbol is
// needed here.
#include <sycl/sycl.hpp>

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <cstdint>

void relu(at::Tensor& out, at::Tensor const& input) {
  TORCH_CHECK(input.is_xpu(), "relu: input must be an XPU tensor");
  TORCH_CHECK(out.device() == input.device(),
              "relu: out and input must be on the same device");
  TORCH_CHECK(out.scalar_type() == input.scalar_type(),
              "relu: out and input must have the same dtype");
  TORCH_CHECK(out.sizes() == input.sizes(),
              "relu: out and input must have the same shape, got ",
              out.sizes(), " and ", input.sizes());

  int64_t const n = input.numel();
  if (n == 0) {
    return;
  }

  c10::DeviceGuard const device_guard(input.device());
  sycl::queue& queue = *static_cast<sycl::queue*>(
      c10::impl::getDeviceGuardImpl(c10::DeviceType::XPU)
          ->getStream(input.device())
          .native_handle());

  at::Tensor const src = input.contiguous();
  at::Tensor dst = out.is_contiguous() ? out : at::empty_like(src);

  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::kHalf, at::kBFloat16, src.scalar_type(), "relu_xpu", [&] {
        scalar_t const* in = src.const_data_ptr<scalar_t>();
        scalar_t* o = dst.data_ptr<scalar_t>();
        queue.parallel_for(sycl::range<1>(static_cast<size_t>(n)),
                           [=](sycl::id<1> idx) {
                             scalar_t const x = in[idx[0]];
                             // torch.relu semantics: NaN and -0.0 pass through.
                             o[idx[0]] = static_cast<float>(x) < 0.0f
                                             ? scalar_t(0)
                                             : x;
                           });
      });

  if (!dst.is_same(out)) {
    out.copy_(dst);
  }
}
