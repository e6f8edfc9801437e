//! `.npy` files: reading inputs and writing outputs as [`Value`]s.
//!
//! Reading accepts the element types of the language (`|b1`, `<i4`, `<i8`, `<f4`, `<f8`,
//! and their big-endian forms), C or Fortran order, and 0-d files for scalars; the result is
//! always a row-major (C order) array. The file is checked against its header before any
//! array is allocated: a header that lies about its length, a huge declared shape, a
//! truncated file or an unsupported dtype is an `E-INPUT` error, never an abort. Writing
//! produces little-endian, C-order files (ndarray-npy).

use crate::error::{Error, Result};
use crate::types::ElemType;
use crate::value::Value;
use ndarray::ArrayD;
use ndarray_npy::npy::header::Header;
use ndarray_npy::{ReadNpyExt, WriteNpyExt};
use std::io::Cursor;
use std::path::Path;

/// Deepest bracket nesting accepted in a header (real headers nest 2 levels).
const MAX_HEADER_NESTING: usize = 16;

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
        "<f4" | ">f4" => ElemType::F32,
        "<f8" | ">f8" => ElemType::F64,
        _ => return None,
    })
}

/// Reads the `.npy` file at `path`. `what` names it in messages (`input `xs``).
pub fn read_value(path: &Path) -> Result<Value> {
    let what = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| Error::input(format!("cannot read `{what}`: {e}")))?;
    read_value_bytes(&bytes, &what)
}

/// Reads a `.npy` file held in memory. `what` names it in messages.
pub fn read_value_bytes(bytes: &[u8], what: &str) -> Result<Value> {
    let (info, header_len) = read_info(bytes, what)?;
    let data_len = bytes.len() - header_len;
    let count = info.shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
    let need = count.and_then(|c| c.checked_mul(info.elem.size_bytes()));
    match need {
        Some(n) if n == data_len => {}
        Some(n) => {
            return Err(Error::input(format!(
                "`{what}`: the header declares shape {:?} of {} ({n} bytes of data) but the file holds \
                 {data_len} bytes of data",
                info.shape, info.descr
            )))
        }
        None => {
            return Err(Error::input(format!(
                "`{what}`: the declared shape {:?} is too large to exist",
                info.shape
            )))
        }
    }
    let mut cursor = Cursor::new(bytes);
    let fail = |e: ndarray_npy::ReadNpyError| Error::input(format!("`{what}` is not a valid .npy file: {e}"));
    fn standard<T: Clone>(a: ArrayD<T>) -> ArrayD<T> {
        if a.is_standard_layout() {
            a
        } else {
            a.as_standard_layout().into_owned()
        }
    }
    Ok(match info.elem {
        ElemType::Bool => Value::Bool(standard(ArrayD::<bool>::read_npy(&mut cursor).map_err(fail)?)),
        ElemType::I32 => Value::I32(standard(ArrayD::<i32>::read_npy(&mut cursor).map_err(fail)?)),
        ElemType::I64 => Value::I64(standard(ArrayD::<i64>::read_npy(&mut cursor).map_err(fail)?)),
        ElemType::F32 => Value::F32(standard(ArrayD::<f32>::read_npy(&mut cursor).map_err(fail)?)),
        ElemType::F64 => Value::F64(standard(ArrayD::<f64>::read_npy(&mut cursor).map_err(fail)?)),
    })
}

/// Parses just the header of an in-memory `.npy` file: its element type, shape and order,
/// and the number of bytes before the data.
pub fn read_info(bytes: &[u8], what: &str) -> Result<(NpyInfo, usize)> {
    let bad = |m: &str| Error::input(format!("`{what}` is not a valid .npy file: {m}"));
    if bytes.len() < 10 || !bytes.starts_with(b"\x93NUMPY") {
        return Err(bad("it does not start with the .npy magic string"));
    }
    let (major, prefix) = (bytes[6], 10usize);
    let (len, prefix) = match major {
        1 => (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), prefix),
        2 | 3 => {
            let b = bytes.get(8..12).ok_or_else(|| bad("truncated header"))?;
            let n = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            (usize::try_from(n).map_err(|_| bad("header too long"))?, 12)
        }
        v => return Err(bad(&format!("unsupported format version {v}"))),
    };
    let end = prefix.checked_add(len).filter(|&e| e <= bytes.len()).ok_or_else(|| bad("truncated header"))?;
    let text = std::str::from_utf8(&bytes[prefix..end]).map_err(|_| bad("the header is not UTF-8"))?;
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '[' | '(' | '{' => {
                depth += 1;
                if depth > MAX_HEADER_NESTING {
                    return Err(bad("the header is nested too deeply"));
                }
            }
            ']' | ')' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    let header = Header::from_reader(&mut Cursor::new(&bytes[..end])).map_err(|e| bad(&e.to_string()))?;
    let descr = match &header.type_descriptor {
        py_literal::Value::String(s) => s.clone(),
        other => {
            return Err(Error::input(format!(
                "`{what}` has a structured dtype {other}; eqfuse reads bool, i32, i64, f32 and f64"
            )))
        }
    };
    let elem = elem_of_descr(&descr).ok_or_else(|| {
        Error::input(format!("`{what}` has dtype '{descr}'; eqfuse reads bool, i32, i64, f32 and f64"))
    })?;
    Ok((NpyInfo { elem, shape: header.shape.clone(), fortran: header.layout.is_fortran(), descr }, end))
}

/// Writes `value` to `path` (little-endian, C order; a 0-d file for a scalar).
pub fn write_value(path: &Path, value: &Value) -> Result<()> {
    let what = path.display();
    let file =
        std::fs::File::create(path).map_err(|e| Error::input(format!("cannot create `{what}`: {e}")))?;
    let w = std::io::BufWriter::new(file);
    let r = crate::with_array!(value, a => a.write_npy(w));
    r.map_err(|e| Error::input(format!("cannot write `{what}`: {e}")))
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
        while (10 + h.len() + 1) % 64 != 0 {
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
        let odd = header_bytes("{'descr': '<u2', 'fortran_order': False, 'shape': (1,), }");
        assert!(code_of(read_value_bytes(&odd, "t")).contains("dtype '<u2'"));
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
}
