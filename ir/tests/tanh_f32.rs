//! `tanh_f32` on every `f32` argument of magnitude at most 10 (above 9.1 the argument is
//! clamped to 9.1 and the result is 1, checked on a stride up to infinity), against eqfuse's
//! `f64` `tanh` (within one `f64` ulp, about `2^-29` of an `f32` ulp). `tanh_f32(-x)` is
//! `-tanh_f32(x)` by construction (the sign bit is set aside first), so the positive floats
//! stand for both signs; a stride of negative ones checks it. The bound the docs state
//! (docs/math.md) is the largest error found here, rounded up: 0.52 ulp, that is the one
//! rounding to `f32` and `2^-29.8` (relative) of the rational function's own error.

#[path = "common/sweep.rs"]
mod sweep;

use eqfuse_ir::math::{tanh_f32, tanh_f64};
use sweep::worst_parallel;

#[test]
fn tanh_f32_is_within_0_52_ulp_for_every_argument() {
    let top = 10.0f32.to_bits() + 1;
    let (err, at) = worst_parallel(tanh_f32, tanh_f64, 0, top, sweep::EVERY);
    println!("tanh_f32: {top} arguments, largest error {err:.4} ulp, at x = {at:e} ({:#010x})", at.to_bits());
    assert!(err <= 0.52, "tanh_f32({at:e}) is {err} ulp from tanh x");
}

#[test]
fn tanh_f32_is_odd_and_one_above_ten() {
    for b in (0..=0x7f80_0000u32).step_by(4099) {
        let x = f32::from_bits(b);
        assert_eq!(tanh_f32(-x).to_bits(), (-tanh_f32(x)).to_bits(), "tanh_f32(-{x:e})");
        if x > 10.0 {
            assert_eq!(tanh_f32(x), 1.0, "tanh_f32({x:e})");
        }
    }
    assert_eq!(tanh_f32(f32::INFINITY), 1.0);
    assert!(tanh_f32(f32::NAN).is_nan());
}
