//! Arbitrary bytes as a `.npy` file: an error or a value, never a panic or an abort.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(v) = eqfuse_ir::npy::read_value_bytes(data, "fuzz.npy") {
        let bytes = eqfuse_ir::npy::to_bytes(&v).expect("a value read must encode");
        let back = eqfuse_ir::npy::read_value_bytes(&bytes, "again").expect("and read back");
        assert_eq!(back.shape(), v.shape());
    }
});
