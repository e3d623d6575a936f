//! ReLU for CPU, exported with the C ABI for the torch binding.
//!
//! The binding (`torch-ext/torch_binding.cpp`) makes the tensors contiguous
//! and passes raw pointers. `out` may equal `input` (in place); other
//! overlaps are not allowed.

/// torch.relu semantics: negative values become 0; NaN and -0.0 pass through.
#[inline(always)]
fn relu_f32(x: f32) -> f32 {
    if x < 0.0 {
        0.0
    } else {
        x
    }
}

#[inline(always)]
fn relu_f64(x: f64) -> f64 {
    if x < 0.0 {
        0.0
    } else {
        x
    }
}

#[cfg(not(feature = "chunked"))]
unsafe fn map<T: Copy>(out: *mut T, input: *const T, n: usize, f: impl Fn(T) -> T) {
    for i in 0..n {
        *out.add(i) = f(*input.add(i));
    }
}

#[cfg(feature = "chunked")]
unsafe fn map<T: Copy>(out: *mut T, input: *const T, n: usize, f: impl Fn(T) -> T) {
    const CHUNK: usize = 16;
    let mut i = 0;
    while i + CHUNK <= n {
        // Read the whole chunk before writing, so that out == input is fine.
        let chunk: [T; CHUNK] = core::ptr::read_unaligned(input.add(i) as *const [T; CHUNK]);
        for (j, x) in chunk.into_iter().enumerate() {
            *out.add(i + j) = f(x);
        }
        i += CHUNK;
    }
    while i < n {
        *out.add(i) = f(*input.add(i));
        i += 1;
    }
}

/// Writes `relu(input[i])` to `out[i]` for `i < n`.
///
/// # Safety
///
/// `input` must be valid for `n` reads and `out` for `n` writes of `f32`;
/// `out` must either equal `input` or not overlap it.
#[no_mangle]
pub unsafe extern "C" fn relu_rs_f32(out: *mut f32, input: *const f32, n: usize) {
    map(out, input, n, relu_f32);
}

/// Writes `relu(input[i])` to `out[i]` for `i < n`.
///
/// # Safety
///
/// As for [`relu_rs_f32`], with `f64` elements.
#[no_mangle]
pub unsafe extern "C" fn relu_rs_f64(out: *mut f64, input: *const f64, n: usize) {
    map(out, input, n, relu_f64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_definition() {
        let input: Vec<f32> = (0..37).map(|i| (i as f32 - 18.0) * 0.5).collect();
        let mut out = vec![42.0f32; input.len()];
        unsafe { relu_rs_f32(out.as_mut_ptr(), input.as_ptr(), input.len()) };
        for (x, y) in input.iter().zip(&out) {
            assert_eq!(*y, if *x < 0.0 { 0.0 } else { *x });
        }
    }

    #[test]
    fn in_place_and_special_values() {
        let mut v = vec![f64::NAN, -0.0, -1.0, 2.0, f64::INFINITY, f64::NEG_INFINITY];
        let p = v.as_mut_ptr();
        unsafe { relu_rs_f64(p, p, v.len()) };
        assert!(v[0].is_nan());
        assert!(v[1] == 0.0 && v[1].is_sign_negative());
        assert_eq!(&v[2..], &[0.0, 2.0, f64::INFINITY, 0.0]);
    }
}
