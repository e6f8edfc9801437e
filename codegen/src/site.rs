//! The source position of a failing instruction in the device's error record: packed
//! above the error code (codes are below 256), so that the record keeps its layout and the
//! first failure still wins on the code alone. The CUDA generator packs it
//! ([`crate::scalar`]), the CUDA runtime unpacks it.

/// The source position `line`, `col` packed above an error code of the error record (codes
/// are below 256): `line << 8 | col << 36`; `None` when either does not fit (28 and 26 bits).
/// [`site_of`] unpacks it.
pub fn site_code(line: u32, col: u32) -> Option<i64> {
    if line == 0 || line >= 1 << 28 || col >= 1 << 26 {
        return None;
    }
    Some((i64::from(line) << 8) | (i64::from(col) << 36))
}

/// A record's code split into the error code and the source line and column packed with it
/// by [`site_code`] (`None`: no position).
pub fn site_of(packed: i64) -> (i64, Option<(u32, u32)>) {
    let code = packed & 0xff;
    let line = ((packed >> 8) & ((1 << 28) - 1)) as u32;
    let col = ((packed >> 36) & ((1 << 26) - 1)) as u32;
    (code, (line > 0).then_some((line, col)))
}
