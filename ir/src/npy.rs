//! `.npy` files: reading inputs and writing outputs as [`Value`]s.
//!
//! Reading accepts the element types of the language (`|b1`, `<i4`, `<i8`, `<f4`, `<f8`,
//! and their big-endian forms), C or Fortran order, and 0-d files for scalars; the result is
//! always a row-major (C order) array. The file is checked against its header before any
//! array is allocated: a header that lies about its length, a huge declared shape, a
//! truncated file or an unsupported dtype is an `E-INPUT` error, never an abort. Writing
//! produces little-endian, C-order files (ndarray-npy).

mod header;

use crate::error::{Error, Result};
use crate::types::ElemType;
use crate::value::Value;
use ndarray::{ArrayD, IxDyn, ShapeBuilder};
use ndarray_npy::WriteNpyExt;
use std::path::Path;

/// What a header says about the data that follows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NpyInfo {
    /// Element type.
    pub elem: ElemType,
    /// Shape as declared.
    pub shape: Vec<usize>,
    /// Fortran (column-major) order.
    pub fortran: bool,
    /// The raw dtype descriptor (`<f4`).
    pub descr: String,
}

/// Maps a NumPy dtype descriptor to an element type, when the language has it.
pub fn elem_of_descr(descr: &str) -> Option<ElemType> {
    Some(match descr {
        "|b1" | "<b1" | ">b1" | "=b1" => ElemType::Bool,
        "<i4" | ">i4" => ElemType::I32,
        "<i8" | ">i8" => ElemType::I64,
        "|i1" | "<i1" | ">i1" | "=i1" => ElemType::I8,
        "<i2" | ">i2" => ElemType::I16,
        "|u1" | "<u1" | ">u1" | "=u1" => ElemType::U8,
        "<u2" | ">u2" => ElemType::U16,
        "<u4" | ">u4" => ElemType::U32,
        "<u8" | ">u8" => ElemType::U64,
        "<f4" | ">f4" => ElemType::F32,
        "<f8" | ">f8" => ElemType::F64,
        _ => return None,
    })
}

/// Reads the `.npy` file at `path`, refusing an array over the machine's physical memory
/// (see [`read_value_with`]).
pub fn read_value(path: &Path) -> Result<Value> {
    read_value_with(path, crate::ast::default_memory_limit())
}

/// Longest header accepted, in bytes (NumPy itself writes a few hundred and reads at most
/// 10 000 unless told otherwise).
const MAX_HEADER_BYTES: usize = 1 << 20;

/// Reads the `.npy` file at `path`; an array whose data would take more than
/// `max_array_bytes` is `E-LIMIT` before it is read or allocated.
///
/// The header is read and checked first: a header that lies about the length of the data
/// (against the file's size), a shape too large to exist, a header longer than 1 MiB, or a
/// dtype the language does not have is `E-INPUT`. Then exactly the declared data is read
/// (so an endless file, a pipe or `/dev/zero`, costs no more than the declared size).
pub fn read_value_with(path: &Path, max_array_bytes: u64) -> Result<Value> {
    use std::io::Read;
    let what = path.display().to_string();
    let cannot = |e: std::io::Error| Error::input(format!("cannot read `{what}`: {e}"));
    let mut file = std::fs::File::open(path).map_err(cannot)?;
    let file_len = file.metadata().ok().filter(|m| m.is_file()).map(|m| m.len());
    let mut bytes = Vec::new();
    // the magic string, the version and the header length
    (&mut file).take(12).read_to_end(&mut bytes).map_err(cannot)?;
    let header_end = header_end(&bytes, &what)?;
    let rest = u64::try_from(header_end.saturating_sub(bytes.len())).unwrap_or(u64::MAX);
    (&mut file).take(rest).read_to_end(&mut bytes).map_err(cannot)?;
    let (info, header_len) = read_info(&bytes, &what)?;
    let data = data_bytes(&info, &what)?;
    if let Some(len) = file_len {
        let header_len = u64::try_from(header_len).unwrap_or(u64::MAX);
        if len.checked_sub(header_len) != Some(data) {
            return Err(Error::input(format!(
                "`{what}`: the header declares shape {:?} of {} ({data} bytes of data) but the file holds \
                 {} bytes of data",
                info.shape,
                info.descr,
                len.saturating_sub(header_len)
            )));
        }
    }
    if data > max_array_bytes {
        return Err(Error::new(
            crate::error::Code::Limit,
            format!(
                "`{what}` holds an array of shape {:?} of {} ({data} bytes), over the limit of \
                 {max_array_bytes} bytes",
                info.shape, info.descr
            ),
        ));
    }
    // one byte more than declared, to see a file that is longer than its header says
    file.take(data.saturating_add(1)).read_to_end(&mut bytes).map_err(cannot)?;
    read_value_bytes(&bytes, &what)
}

/// The bytes of data a header declares: `E-INPUT` for a shape too large to exist.
fn data_bytes(info: &NpyInfo, what: &str) -> Result<u64> {
    let count = info.shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(u64::try_from(d).ok()?));
    let bytes = count.and_then(|c| c.checked_mul(info.elem.size_bytes() as u64));
    bytes.filter(|&b| b <= i64::MAX as u64).ok_or_else(|| {
        Error::input(format!("`{what}`: the declared shape {:?} is too large to exist", info.shape))
    })
}

/// Where the header of a `.npy` file ends, from its first 12 bytes (or fewer: a truncated
/// file is `E-INPUT`).
fn header_end(bytes: &[u8], what: &str) -> Result<usize> {
    let bad = |m: &str| Error::input(format!("`{what}` is not a valid .npy file: {m}"));
    if bytes.len() < 10 || !bytes.starts_with(b"\x93NUMPY") {
        return Err(bad("it does not start with the .npy magic string"));
    }
    let (len, prefix) = match bytes[6] {
        1 => (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), 10usize),
        2 | 3 => {
            let b = bytes.get(8..12).ok_or_else(|| bad("truncated header"))?;
            let n = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            (usize::try_from(n).map_err(|_| bad("header too long"))?, 12)
        }
        v => return Err(bad(&format!("unsupported format version {v}"))),
    };
    if len > MAX_HEADER_BYTES {
        return Err(bad(&format!(
            "the header claims {len} bytes, more than the {MAX_HEADER_BYTES} accepted"
        )));
    }
    Ok(prefix + len)
}

/// Reads a `.npy` file held in memory. `what` names it in messages.
pub fn read_value_bytes(bytes: &[u8], what: &str) -> Result<Value> {
    let (info, header_len) = read_info(bytes, what)?;
    let data_len = bytes.len() - header_len;
    let need = data_bytes(&info, what)?;
    if u64::try_from(data_len).ok() != Some(need) {
        return Err(Error::input(format!(
            "`{what}`: the header declares shape {:?} of {} ({need} bytes of data) but the file holds \
             {data_len} bytes of data",
            info.shape, info.descr
        )));
    }
    let data = &bytes[header_len..];
    let big = info.descr.starts_with('>');
    Ok(match info.elem {
        ElemType::Bool => {
            let mut v = Vec::with_capacity(data.len());
            for &b in data {
                v.push(match b {
                    0 => false,
                    1 => true,
                    _ => {
                        return Err(Error::input(format!("`{what}` holds a bool byte {b}, neither 0 nor 1")))
                    }
                });
            }
            Value::Bool(shaped(v, &info, what)?)
        }
        ElemType::I32 => {
            Value::I32(shaped(decode(data, big, i32::from_le_bytes, i32::from_be_bytes), &info, what)?)
        }
        ElemType::I64 => {
            Value::I64(shaped(decode(data, big, i64::from_le_bytes, i64::from_be_bytes), &info, what)?)
        }
        ElemType::I8 => {
            Value::I8(shaped(decode(data, big, i8::from_le_bytes, i8::from_be_bytes), &info, what)?)
        }
        ElemType::I16 => {
            Value::I16(shaped(decode(data, big, i16::from_le_bytes, i16::from_be_bytes), &info, what)?)
        }
        ElemType::U8 => {
            Value::U8(shaped(decode(data, big, u8::from_le_bytes, u8::from_be_bytes), &info, what)?)
        }
        ElemType::U16 => {
            Value::U16(shaped(decode(data, big, u16::from_le_bytes, u16::from_be_bytes), &info, what)?)
        }
        ElemType::U32 => {
            Value::U32(shaped(decode(data, big, u32::from_le_bytes, u32::from_be_bytes), &info, what)?)
        }
        ElemType::U64 => {
            Value::U64(shaped(decode(data, big, u64::from_le_bytes, u64::from_be_bytes), &info, what)?)
        }
        ElemType::F32 => {
            Value::F32(shaped(decode(data, big, f32::from_le_bytes, f32::from_be_bytes), &info, what)?)
        }
        ElemType::F64 => {
            Value::F64(shaped(decode(data, big, f64::from_le_bytes, f64::from_be_bytes), &info, what)?)
        }
    })
}

/// The elements of `data`, `N` bytes each, little- or big-endian.
fn decode<T, const N: usize>(data: &[u8], big: bool, le: fn([u8; N]) -> T, be: fn([u8; N]) -> T) -> Vec<T> {
    data.chunks_exact(N)
        .map(|c| {
            let mut b = [0u8; N];
            b.copy_from_slice(c);
            if big {
                be(b)
            } else {
                le(b)
            }
        })
        .collect()
}

/// The elements in the header's shape and order, as a row-major (C order) array.
fn shaped<T: Clone>(v: Vec<T>, info: &NpyInfo, what: &str) -> Result<ArrayD<T>> {
    let dim = IxDyn(&info.shape);
    let a = if info.fortran { ArrayD::from_shape_vec(dim.f(), v) } else { ArrayD::from_shape_vec(dim, v) };
    let a = a.map_err(|e| {
        Error::input(format!("`{what}`: the data does not fit the shape {:?}: {e}", info.shape))
    })?;
    Ok(if a.is_standard_layout() { a } else { a.as_standard_layout().into_owned() })
}

/// Parses just the header of an in-memory `.npy` file: its element type, shape and order,
/// and the number of bytes before the data.
pub fn read_info(bytes: &[u8], what: &str) -> Result<(NpyInfo, usize)> {
    let bad = |m: &str| Error::input(format!("`{what}` is not a valid .npy file: {m}"));
    let end = header_end(bytes, what)?;
    if end > bytes.len() {
        return Err(bad("truncated header"));
    }
    let prefix = if bytes[6] == 1 { 10 } else { 12 };
    let text = std::str::from_utf8(&bytes[prefix..end]).map_err(|_| bad("the header is not UTF-8"))?;
    let header = header::parse(text).map_err(|m| bad(&m))?;
    let Some(descr) = header.descr else {
        return Err(Error::input(format!(
            "`{what}` has a structured dtype; eqfuse reads bool, i32, i64, f32 and f64"
        )));
    };
    let elem = elem_of_descr(&descr).ok_or_else(|| {
        Error::input(format!("`{what}` has dtype '{descr}'; eqfuse reads bool, i32, i64, f32 and f64"))
    })?;
    Ok((NpyInfo { elem, shape: header.shape, fortran: header.fortran, descr }, end))
}

/// Writes `value` to `path` (little-endian, C order; a 0-d file for a scalar).
pub fn write_value(path: &Path, value: &Value) -> Result<()> {
    let what = path.display();
    let file =
        std::fs::File::create(path).map_err(|e| Error::output(format!("cannot create `{what}`: {e}")))?;
    write_value_to(&file, value).map_err(|e| Error::output(format!("cannot write `{what}`: {e}")))
}

/// Writes `value` as `.npy` to `file`, flushed to the file (not synced to the disk).
pub fn write_value_to(file: &std::fs::File, value: &Value) -> std::io::Result<()> {
    use std::io::Write;
    let mut w = std::io::BufWriter::new(file);
    let r = crate::with_array!(value, a => a.write_npy(&mut w));
    r.map_err(std::io::Error::other)?;
    w.flush()
}

/// Encodes `value` as `.npy` bytes.
pub fn to_bytes(value: &Value) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let r = crate::with_array!(value, a => a.write_npy(&mut out));
    r.map_err(|e| Error::input(format!("cannot encode .npy: {e}")))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{arr1, arr2, IxDyn};

    fn header_bytes(dict: &str) -> Vec<u8> {
        let mut h = dict.to_string();
        while !(10 + h.len() + 1).is_multiple_of(64) {
            h.push(' ');
        }
        h.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&u16::try_from(h.len()).unwrap_or(0).to_le_bytes());
        out.extend_from_slice(h.as_bytes());
        out
    }

    fn code_of(r: Result<Value>) -> String {
        match r {
            Ok(v) => format!("ok {v:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn round_trips_every_type_and_scalars() {
        let vals = vec![
            Value::F32(arr1(&[1.5f32, -2.0]).into_dyn()),
            Value::F64(arr2(&[[1.0f64, 2.0], [3.0, 4.0]]).into_dyn()),
            Value::I32(arr1(&[i32::MIN, 7]).into_dyn()),
            Value::I64(ArrayD::from_elem(IxDyn(&[]), 42i64)),
            Value::Bool(arr1(&[true, false, true]).into_dyn()),
            Value::F32(ArrayD::zeros(IxDyn(&[0, 3]))),
            Value::I8(arr1(&[i8::MIN, -1, 7]).into_dyn()),
            Value::I16(arr1(&[i16::MIN, 300]).into_dyn()),
            Value::U8(arr1(&[0u8, 255]).into_dyn()),
            Value::U16(arr1(&[65535u16, 1]).into_dyn()),
            Value::U32(arr2(&[[u32::MAX, 0], [1, 2]]).into_dyn()),
            Value::U64(arr1(&[u64::MAX, 0xff51afd7ed558ccd]).into_dyn()),
        ];
        for v in vals {
            let b = to_bytes(&v).expect("encode");
            assert_eq!(read_value_bytes(&b, "t").expect("decode"), v);
        }
    }

    #[test]
    fn big_endian_and_fortran_are_converted() {
        let mut b = header_bytes("{'descr': '>i4', 'fortran_order': True, 'shape': (2, 3), }");
        // column-major data of [[1,2,3],[4,5,6]]: 1 4 2 5 3 6, big-endian
        for v in [1i32, 4, 2, 5, 3, 6] {
            b.extend_from_slice(&v.to_be_bytes());
        }
        let v = read_value_bytes(&b, "t").expect("read");
        assert_eq!(v, Value::I32(arr2(&[[1, 2, 3], [4, 5, 6]]).into_dyn()));
        assert!(matches!(&v, Value::I32(a) if a.is_standard_layout()));
    }

    #[test]
    fn lying_and_hostile_headers_are_input_errors() {
        let mut short = header_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }");
        short.extend_from_slice(&[0u8; 12]);
        assert!(code_of(read_value_bytes(&short, "t")).contains("E-INPUT"));
        let huge =
            header_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (100000000000, 100000000000), }");
        assert!(code_of(read_value_bytes(&huge, "t")).contains("E-INPUT"));
        let odd = header_bytes("{'descr': '<f2', 'fortran_order': False, 'shape': (1,), }");
        assert!(code_of(read_value_bytes(&odd, "t")).contains("dtype '<f2'"));
        let deep = header_bytes(&format!("{{'descr': {}'<f4'{}, }}", "[".repeat(5000), "]".repeat(5000)));
        assert!(code_of(read_value_bytes(&deep, "t")).contains("E-INPUT"));
        assert!(code_of(read_value_bytes(b"\x93NUMPY\x01\x00\xff\xff{", "t")).contains("E-INPUT"));
        assert!(code_of(read_value_bytes(b"hello", "t")).contains("E-INPUT"));
        let mut bad_bool = header_bytes("{'descr': '|b1', 'fortran_order': False, 'shape': (1,), }");
        bad_bool.push(7);
        assert!(code_of(read_value_bytes(&bad_bool, "t")).contains("E-INPUT"));
        let mut non_utf8 = b"\x93NUMPY\x01\x00\x04\x00".to_vec();
        non_utf8.extend_from_slice(&[0xff, 0xfe, 0xfd, 0x0a]);
        assert!(code_of(read_value_bytes(&non_utf8, "t")).contains("not UTF-8"));
    }

    #[test]
    fn every_prefix_of_a_file_is_an_error_not_a_panic() {
        let b = to_bytes(&Value::F64(arr1(&[1.0, 2.0, 3.0]).into_dyn())).expect("encode");
        for n in 0..b.len() {
            assert!(read_value_bytes(&b[..n], "t").is_err(), "prefix {n} accepted");
        }
    }

    fn f4(shape: &str) -> String {
        format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}")
    }

    fn err(r: Result<Value>) -> crate::error::Error {
        match r {
            Ok(v) => panic!("accepted: {v:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn truncated_and_overlong_data_are_input_errors() {
        let mut b = header_bytes(&f4("(3,)"));
        b.extend_from_slice(&[0u8; 8]);
        let e = err(read_value_bytes(&b, "t"));
        assert_eq!(e.code, crate::error::Code::Input);
        assert!(e.message.contains("(12 bytes of data) but the file holds 8"), "{e}");
        b.extend_from_slice(&[0u8; 8]);
        assert!(err(read_value_bytes(&b, "t")).message.contains("holds 16 bytes"));
    }

    #[test]
    fn huge_declared_shapes_are_input_errors() {
        for shape in ["(18446744073709551615, 2)", "(4611686018427387904, 4)", "(100000000000, 100000000000)"]
        {
            let e = err(read_value_bytes(&header_bytes(&f4(shape)), "t"));
            assert_eq!(e.code, crate::error::Code::Input, "{shape}: {e}");
        }
        let e = err(read_value_bytes(&header_bytes(&f4("(18446744073709551615, 2)")), "t"));
        assert!(e.message.contains("too large to exist"), "{e}");
    }

    #[test]
    fn unsupported_dtypes_name_the_dtype() {
        for d in ["<f2", "<c8", "|O", "<U3", "=i4", "<i16", "|V4"] {
            let b = header_bytes(&format!("{{'descr': '{d}', 'fortran_order': False, 'shape': (1,), }}"));
            let e = err(read_value_bytes(&b, "t"));
            assert!(e.message.contains(&format!("dtype '{d}'")), "{d}: {e}");
        }
        let b = header_bytes("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }");
        assert!(err(read_value_bytes(&b, "t")).message.contains("structured dtype"));
    }

    #[test]
    fn empty_arrays_of_every_rank_and_fortran_scalars_read() {
        for (shape, dims) in
            [("(0,)", vec![0]), ("(0, 3)", vec![0, 3]), ("(3, 0)", vec![3, 0]), ("(2, 0, 4)", vec![2, 0, 4])]
        {
            for order in ["False", "True"] {
                let b = header_bytes(&format!(
                    "{{'descr': '>f8', 'fortran_order': {order}, 'shape': {shape}, }}"
                ));
                assert_eq!(
                    read_value_bytes(&b, "t").expect("reads"),
                    Value::F64(ArrayD::zeros(IxDyn(&dims)))
                );
            }
        }
        let mut b = header_bytes("{'descr': '>i8', 'fortran_order': True, 'shape': (), }");
        b.extend_from_slice(&(-5i64).to_be_bytes());
        assert_eq!(read_value_bytes(&b, "t").expect("reads"), Value::I64(ArrayD::from_elem(IxDyn(&[]), -5)));
    }

    #[test]
    fn nan_and_infinities_read_bit_for_bit() {
        let xs = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0];
        let mut b = header_bytes(&f4("(4,)"));
        for x in xs {
            b.extend_from_slice(&x.to_le_bytes());
        }
        let Value::F32(a) = read_value_bytes(&b, "t").expect("reads") else { panic!("not f32") };
        let bits: Vec<u32> = a.iter().map(|x| x.to_bits()).collect();
        assert_eq!(bits, xs.iter().map(|x| x.to_bits()).collect::<Vec<u32>>());
    }

    #[test]
    fn header_lengths_that_lie_are_input_errors() {
        // version 2 header claiming 2 GiB
        let mut b = b"\x93NUMPY\x02\x00\xff\xff\xff\x7f{'descr'".to_vec();
        assert!(err(read_value_bytes(&b, "t")).message.contains("the header claims"));
        b[6] = 9;
        assert!(err(read_value_bytes(&b, "t")).message.contains("unsupported format version 9"));
        // version 1 header longer than the file
        let e = err(read_value_bytes(b"\x93NUMPY\x01\x00\x50\x00{'descr': '<f4'", "t"));
        assert!(e.message.contains("truncated header"), "{e}");
    }

    /// The `npy_read` fuzz target's first finding: a 250-byte header that a general
    /// Python-literal parser took minutes over. Now an immediate `E-INPUT`.
    #[test]
    fn regression_fuzz_slow_header() {
        let b = include_bytes!("../tests/fuzz-regressions/npy_slow_header.npy");
        let started = std::time::Instant::now();
        assert_eq!(err(read_value_bytes(b, "t")).code, crate::error::Code::Input);
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
    }

    fn scratch_file(name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("eqfuse-npy-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let p = dir.join(name);
        std::fs::write(&p, bytes).expect("write");
        p
    }

    #[test]
    fn files_over_the_memory_limit_are_limit_errors_before_reading() {
        let v = Value::F64(arr1(&[1.0, 2.0, 3.0]).into_dyn());
        let p = scratch_file("three.npy", &to_bytes(&v).expect("encode"));
        assert_eq!(read_value_with(&p, 24).expect("fits"), v);
        let e = err(read_value_with(&p, 23));
        assert_eq!(e.code, crate::error::Code::Limit, "{e}");
        // a header that lies about the data is E-INPUT, whatever the limit
        let mut lying = header_bytes(&f4("(1000000000000,)"));
        lying.extend_from_slice(&[0u8; 4]);
        let p = scratch_file("lying.npy", &lying);
        assert_eq!(err(read_value_with(&p, 16)).code, crate::error::Code::Input);
        assert_eq!(err(read_value(&p)).code, crate::error::Code::Input);
    }

    #[test]
    fn endless_and_missing_files_are_input_errors() {
        if Path::new("/dev/zero").exists() {
            assert_eq!(err(read_value(Path::new("/dev/zero"))).code, crate::error::Code::Input);
        }
        assert_eq!(err(read_value(Path::new("/nonexistent/x.npy"))).code, crate::error::Code::Input);
    }
}
