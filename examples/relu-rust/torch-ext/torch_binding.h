#pragma once

#include <cstddef>

#include <torch/all.h>

// Exported by the Rust staticlib `relu_rs` (relu_rs/src/lib.rs).
extern "C" {
void relu_rs_f32(float* out, float const* input, std::size_t n);
void relu_rs_f64(double* out, double const* input, std::size_t n);
}

void relu(at::Tensor& out, at::Tensor const& input);
