//! `erf_f32` and `erfc_f32` on every `f32` argument where the result is not a constant,
//! against eqfuse's `f64` `erf` and `erfc` (within 0.94 and 1.77 `f64` ulps, about `2^-28`
//! of an `f32` ulp): `erf` on `0 <= x <= 3.95` (it is odd by construction, the sign bit set
//! aside first; above, the argument is clamped to 3.95 and the result is 1), `erfc` on
//! `0 <= x <= 10.1` (above, 0) and on `-3.95 <= x < 0` (below, 2). The constant ranges, the
//! oddness and `NaN` are checked on a stride up to infinity. The bounds the docs state
//! (docs/math.md) are the largest errors found here, rounded up.
//!
//! The `f64` references are slow: every argument takes about six minutes on two cores, too
//! long for each CI run. So a run checks every `EQFUSE_ERF_STRIDE`-th bit pattern (default
//! 8; 1 checks every argument, as the docs' figures were measured) from an offset drawn
//! fresh each run and printed (`EQFUSE_ERF_OFFSET` replays one): eight runs cover every
//! argument on average.

#[path = "common/sweep.rs"]
mod sweep;

use eqfuse_ir::math::{erf_f32, erf_f64, erfc_f32, erfc_f64};
use sweep::{worst_parallel, Step};

/// One stride and offset for the whole run.
static STRIDE: std::sync::OnceLock<Step> = std::sync::OnceLock::new();

/// The stride and the offset of the bit patterns a run checks (see the module docs).
fn stride() -> Step {
    let var = |k: &str| std::env::var(k).ok().and_then(|v| v.trim().parse::<u32>().ok());
    let stride = var("EQFUSE_ERF_STRIDE").unwrap_or(8).max(1);
    let fresh = || {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        t ^ std::process::id().rotate_left(16)
    };
    let offset = var("EQFUSE_ERF_OFFSET").unwrap_or_else(fresh) % stride;
    println!("every {stride}th bit pattern from offset {offset} (EQFUSE_ERF_STRIDE={stride} EQFUSE_ERF_OFFSET={offset})");
    Step { stride, offset }
}

#[test]
fn erf_f32_is_within_0_52_ulp_for_every_argument() {
    let top = 3.95f32.to_bits() + 1;
    let (err, at) = worst_parallel(erf_f32, erf_f64, 0, top, *STRIDE.get_or_init(stride));
    println!("erf_f32: {top} arguments, largest error {err:.4} ulp, at x = {at:e} ({:#010x})", at.to_bits());
    assert!(err <= 0.52, "erf_f32({at:e}) is {err} ulp from erf x");
}

#[test]
fn erfc_f32_is_within_0_53_ulp_for_every_positive_argument() {
    let top = 10.1f32.to_bits() + 1;
    let (err, at) = worst_parallel(erfc_f32, erfc_f64, 0, top, *STRIDE.get_or_init(stride));
    println!(
        "erfc_f32 (x >= 0): {top} arguments, largest error {err:.4} ulp, at x = {at:e} ({:#010x})",
        at.to_bits()
    );
    assert!(err <= 0.53, "erfc_f32({at:e}) is {err} ulp from erfc x");
}

#[test]
fn erfc_f32_is_within_0_53_ulp_for_every_negative_argument() {
    let (lo, hi) = (0x8000_0000u32, (-3.95f32).to_bits() + 1);
    let (err, at) = worst_parallel(erfc_f32, erfc_f64, lo, hi, *STRIDE.get_or_init(stride));
    println!(
        "erfc_f32 (x < 0): {} arguments, largest error {err:.4} ulp, at x = {at:e} ({:#010x})",
        hi - lo,
        at.to_bits()
    );
    assert!(err <= 0.53, "erfc_f32({at:e}) is {err} ulp from erfc x");
}

#[test]
fn erf_f32_is_odd_and_the_constant_ranges_are_constant() {
    for b in (0..=0x7f80_0000u32).step_by(4099) {
        let x = f32::from_bits(b);
        assert_eq!(erf_f32(-x).to_bits(), (-erf_f32(x)).to_bits(), "erf_f32(-{x:e})");
        if x > 3.95 {
            assert_eq!(erf_f32(x), 1.0, "erf_f32({x:e})");
            assert_eq!(erfc_f32(-x), 2.0, "erfc_f32(-{x:e})");
        }
        if x > 10.1 {
            assert_eq!(erfc_f32(x).to_bits(), 0, "erfc_f32({x:e})");
        }
    }
    assert_eq!(erf_f32(f32::INFINITY), 1.0);
    assert_eq!(erfc_f32(f32::NEG_INFINITY), 2.0);
    assert!(erf_f32(f32::NAN).is_nan() && erfc_f32(-f32::NAN).is_nan());
}
