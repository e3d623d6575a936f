//! Leaky ReLU for CPU, exported with the C ABI for the torch binding.
//!
//! The binding passes contiguous buffers. `out` may equal `input` (in place);
//! other overlaps are not allowed.

/// Writes `x if x > 0 else x * negative_slope` for every element, like
/// `torch.nn.functional.leaky_relu`.
///
/// # Safety
///
/// `input` must be valid for `n` reads and `out` for `n` writes of `f32`;
/// `out` must either equal `input` or not overlap it.
#[no_mangle]
pub unsafe extern "C" fn leaky_relu_rs_f32(
    out: *mut f32,
    input: *const f32,
    n: usize,
    negative_slope: f32,
) {
    for i in 0..n {
        let x = *input.add(i);
        *out.add(i) = if x > 0.0 { x } else { x * negative_slope };
    }
}

#[cfg(test)]
mod tests {
    use super::leaky_relu_rs_f32;

    #[test]
    fn scales_negative_values() {
        let input = [-2.0f32, -0.5, 0.0, 1.5];
        let mut out = [0.0f32; 4];
        unsafe { leaky_relu_rs_f32(out.as_mut_ptr(), input.as_ptr(), 4, 0.1) };
        assert_eq!(out, [-2.0 * 0.1, -0.5 * 0.1, 0.0, 1.5]);
    }
}
