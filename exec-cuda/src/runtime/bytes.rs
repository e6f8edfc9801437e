//! Values as the bytes a device buffer holds: little-endian elements, row-major.

use super::internal;
use eqfuse_ir::error::Result;
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::{Scalar, Value};
use ndarray::{ArrayD, IxDyn};

/// The bytes of a value's elements, little-endian, row-major.
pub(crate) fn value_bytes(v: &Value) -> Vec<u8> {
    match v {
        Value::Bool(a) => a.iter().map(|&b| u8::from(b)).collect(),
        Value::I8(a) => a.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Value::I16(a) => a.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Value::I32(a) => a.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Value::I64(a) => a.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Value::U8(a) => a.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Value::U16(a) => a.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Value::U32(a) => a.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Value::U64(a) => a.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Value::F32(a) => a.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Value::F64(a) => a.iter().flat_map(|x| x.to_le_bytes()).collect(),
    }
}

/// A value from its bytes.
pub(crate) fn bytes_value(elem: ElemType, shape: &[usize], bytes: &[u8]) -> Result<Value> {
    let n: usize = shape.iter().product();
    let need = n * elem.size_bytes();
    let b = bytes.get(..need).ok_or_else(|| internal("a download shorter than its array"))?;
    let sh = IxDyn(shape);
    let bad = |_| internal("an array whose elements do not fill its shape");
    macro_rules! num {
        ($t:ty, $v:ident) => {{
            let data: Vec<$t> = b
                .chunks_exact(std::mem::size_of::<$t>())
                .map(|c| {
                    let mut a = [0u8; std::mem::size_of::<$t>()];
                    a.copy_from_slice(c);
                    <$t>::from_le_bytes(a)
                })
                .collect();
            Value::$v(ArrayD::from_shape_vec(sh, data).map_err(bad)?)
        }};
    }
    Ok(match elem {
        ElemType::Bool => {
            Value::Bool(ArrayD::from_shape_vec(sh, b.iter().map(|&x| x != 0).collect()).map_err(bad)?)
        }
        ElemType::I8 => num!(i8, I8),
        ElemType::I16 => num!(i16, I16),
        ElemType::I32 => num!(i32, I32),
        ElemType::I64 => num!(i64, I64),
        ElemType::U8 => num!(u8, U8),
        ElemType::U16 => num!(u16, U16),
        ElemType::U32 => num!(u32, U32),
        ElemType::U64 => num!(u64, U64),
        ElemType::F32 => num!(f32, F32),
        ElemType::F64 => num!(f64, F64),
    })
}

/// A 0-d value from its bytes.
pub(super) fn scalar_from_bytes(elem: ElemType, b: &[u8]) -> Result<Scalar> {
    let v = bytes_value(elem, &[1], b)?;
    v.get_flat(0).ok_or_else(|| internal("an empty download"))
}
