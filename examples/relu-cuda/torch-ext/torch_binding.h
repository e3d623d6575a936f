#pragma once

#include <torch/all.h>

void relu(at::Tensor& out, at::Tensor const& input);
