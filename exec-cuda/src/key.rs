//! The stable hash that names cached modules ([`crate::cache`]) and dumped sources
//! ([`crate::nvrtc`]).

/// A stable hash of `parts` (FNV-1a, twice with different offsets, each part followed by a
/// separator), as 32 hex digits. Stable across runs, platforms and Rust versions.
pub fn key(parts: &[&str]) -> String {
    let mut a: u64 = 0xcbf2_9ce4_8422_2325;
    let mut b: u64 = 0x6c62_272e_07bb_0142;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    for part in parts {
        for &byte in part.as_bytes().iter().chain(&[0xff]) {
            a = (a ^ u64::from(byte)).wrapping_mul(PRIME);
            b = (b ^ u64::from(byte.rotate_left(3))).wrapping_mul(PRIME);
            b = b.rotate_left(5);
        }
    }
    format!("{a:016x}{b:016x}")
}
