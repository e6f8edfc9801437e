//! Run-time values: scalars and n-dimensional arrays of one element type.
//!
//! A [`Value`] is an `ndarray` array (row-major) of one of the five element types; a scalar
//! is a 0-dimensional array. Inputs and outputs of every backend are `Value`s.

use crate::types::ElemType;
use ndarray::{ArrayD, ArrayViewD, IxDyn};
use std::fmt;

/// One scalar of any element type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// `bool`
    Bool(bool),
    /// `i32`
    I32(i32),
    /// `i64`
    I64(i64),
    /// `i8`
    I8(i8),
    /// `i16`
    I16(i16),
    /// `u8`
    U8(u8),
    /// `u16`
    U16(u16),
    /// `u32`
    U32(u32),
    /// `u64`
    U64(u64),
    /// `f32`
    F32(f32),
    /// `f64`
    F64(f64),
}

impl Scalar {
    /// Its element type.
    pub fn elem_type(self) -> ElemType {
        match self {
            Scalar::Bool(_) => ElemType::Bool,
            Scalar::I32(_) => ElemType::I32,
            Scalar::I64(_) => ElemType::I64,
            Scalar::I8(_) => ElemType::I8,
            Scalar::I16(_) => ElemType::I16,
            Scalar::U8(_) => ElemType::U8,
            Scalar::U16(_) => ElemType::U16,
            Scalar::U32(_) => ElemType::U32,
            Scalar::U64(_) => ElemType::U64,
            Scalar::F32(_) => ElemType::F32,
            Scalar::F64(_) => ElemType::F64,
        }
    }

    /// The value of an integer (or `bool`, as 0 or 1) scalar as an `i128`, exactly; `None`
    /// for floats.
    pub fn as_i128(self) -> Option<i128> {
        Some(match self {
            Scalar::Bool(b) => i128::from(b),
            Scalar::I8(v) => v.into(),
            Scalar::I16(v) => v.into(),
            Scalar::I32(v) => v.into(),
            Scalar::I64(v) => v.into(),
            Scalar::U8(v) => v.into(),
            Scalar::U16(v) => v.into(),
            Scalar::U32(v) => v.into(),
            Scalar::U64(v) => v.into(),
            Scalar::F32(_) | Scalar::F64(_) => return None,
        })
    }

    /// The scalar of integer type `ty` whose value is `v` modulo 2^bits (two's complement,
    /// as Rust's `as`); `bool` is `v != 0`; a float type gets `v` rounded to nearest.
    pub fn from_i128_wrapping(ty: ElemType, v: i128) -> Scalar {
        match ty {
            ElemType::Bool => Scalar::Bool(v != 0),
            ElemType::I8 => Scalar::I8(v as i8),
            ElemType::I16 => Scalar::I16(v as i16),
            ElemType::I32 => Scalar::I32(v as i32),
            ElemType::I64 => Scalar::I64(v as i64),
            ElemType::U8 => Scalar::U8(v as u8),
            ElemType::U16 => Scalar::U16(v as u16),
            ElemType::U32 => Scalar::U32(v as u32),
            ElemType::U64 => Scalar::U64(v as u64),
            ElemType::F32 => Scalar::F32(v as f32),
            ElemType::F64 => Scalar::F64(v as f64),
        }
    }

    /// The value as an `f64` (booleans as 0 or 1), for comparisons in tests and reports.
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => f64::from(u8::from(b)),
            Scalar::I32(v) => f64::from(v),
            Scalar::I64(v) => v as f64,
            Scalar::I8(v) => v as f64,
            Scalar::I16(v) => v as f64,
            Scalar::U8(v) => v as f64,
            Scalar::U16(v) => v as f64,
            Scalar::U32(v) => v as f64,
            Scalar::U64(v) => v as f64,
            Scalar::F32(v) => f64::from(v),
            Scalar::F64(v) => v,
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Bool(v) => write!(f, "{v}"),
            Scalar::I32(v) => write!(f, "{v}"),
            Scalar::I64(v) => write!(f, "{v}"),
            Scalar::I8(v) => write!(f, "{v}"),
            Scalar::I16(v) => write!(f, "{v}"),
            Scalar::U8(v) => write!(f, "{v}"),
            Scalar::U16(v) => write!(f, "{v}"),
            Scalar::U32(v) => write!(f, "{v}"),
            Scalar::U64(v) => write!(f, "{v}"),
            Scalar::F32(v) => write!(f, "{v:?}"),
            Scalar::F64(v) => write!(f, "{v:?}"),
        }
    }
}

/// An array (or, with no dimensions, a scalar) of one element type, row-major.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `bool` elements.
    Bool(ArrayD<bool>),
    /// `i32` elements.
    I32(ArrayD<i32>),
    /// `i64` elements.
    I64(ArrayD<i64>),
    /// `i8` elements.
    I8(ArrayD<i8>),
    /// `i16` elements.
    I16(ArrayD<i16>),
    /// `u8` elements.
    U8(ArrayD<u8>),
    /// `u16` elements.
    U16(ArrayD<u16>),
    /// `u32` elements.
    U32(ArrayD<u32>),
    /// `u64` elements.
    U64(ArrayD<u64>),
    /// `f32` elements.
    F32(ArrayD<f32>),
    /// `f64` elements.
    F64(ArrayD<f64>),
}

/// A borrowed array of one of the element types: an input read where it lies (a NumPy
/// array from Python, a memory-mapped file), never copied. The executors take their inputs
/// as anything that gives such a view ([`AsValueView`]); a [`Value`] does.
#[derive(Clone, Debug)]
pub enum ValueView<'a> {
    /// `bool` elements.
    Bool(ArrayViewD<'a, bool>),
    /// `i32` elements.
    I32(ArrayViewD<'a, i32>),
    /// `i64` elements.
    I64(ArrayViewD<'a, i64>),
    /// `i8` elements.
    I8(ArrayViewD<'a, i8>),
    /// `i16` elements.
    I16(ArrayViewD<'a, i16>),
    /// `u8` elements.
    U8(ArrayViewD<'a, u8>),
    /// `u16` elements.
    U16(ArrayViewD<'a, u16>),
    /// `u32` elements.
    U32(ArrayViewD<'a, u32>),
    /// `u64` elements.
    U64(ArrayViewD<'a, u64>),
    /// `f32` elements.
    F32(ArrayViewD<'a, f32>),
    /// `f64` elements.
    F64(ArrayViewD<'a, f64>),
}

impl ValueView<'_> {
    /// Its element type.
    pub fn elem_type(&self) -> ElemType {
        match self {
            ValueView::Bool(_) => ElemType::Bool,
            ValueView::I32(_) => ElemType::I32,
            ValueView::I64(_) => ElemType::I64,
            ValueView::I8(_) => ElemType::I8,
            ValueView::I16(_) => ElemType::I16,
            ValueView::U8(_) => ElemType::U8,
            ValueView::U16(_) => ElemType::U16,
            ValueView::U32(_) => ElemType::U32,
            ValueView::U64(_) => ElemType::U64,
            ValueView::F32(_) => ElemType::F32,
            ValueView::F64(_) => ElemType::F64,
        }
    }

    /// Its shape (empty for a scalar).
    pub fn shape(&self) -> &[usize] {
        match self {
            ValueView::Bool(a) => a.shape(),
            ValueView::I32(a) => a.shape(),
            ValueView::I64(a) => a.shape(),
            ValueView::I8(a) => a.shape(),
            ValueView::I16(a) => a.shape(),
            ValueView::U8(a) => a.shape(),
            ValueView::U16(a) => a.shape(),
            ValueView::U32(a) => a.shape(),
            ValueView::U64(a) => a.shape(),
            ValueView::F32(a) => a.shape(),
            ValueView::F64(a) => a.shape(),
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.shape().iter().product()
    }

    /// `true` when it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// An owned copy (for the backends that copy their inputs anyway: the reference
    /// interpreter, the GPU).
    pub fn to_value(&self) -> Value {
        match self {
            ValueView::Bool(a) => Value::Bool(a.to_owned()),
            ValueView::I32(a) => Value::I32(a.to_owned()),
            ValueView::I64(a) => Value::I64(a.to_owned()),
            ValueView::I8(a) => Value::I8(a.to_owned()),
            ValueView::I16(a) => Value::I16(a.to_owned()),
            ValueView::U8(a) => Value::U8(a.to_owned()),
            ValueView::U16(a) => Value::U16(a.to_owned()),
            ValueView::U32(a) => Value::U32(a.to_owned()),
            ValueView::U64(a) => Value::U64(a.to_owned()),
            ValueView::F32(a) => Value::F32(a.to_owned()),
            ValueView::F64(a) => Value::F64(a.to_owned()),
        }
    }
}

/// What an executor's input can be: anything that lends a [`ValueView`] of itself.
///
/// ```
/// use eqfuse_ir::value::{AsValueView, Value, ValueView};
/// let v = Value::from(ndarray::arr1(&[1.0f32, 2.0]).into_dyn());
/// let data = [1.0f32, 2.0];
/// let borrowed = ValueView::F32(ndarray::ArrayView1::from(&data[..]).into_dyn());
/// assert_eq!(v.as_view().shape(), borrowed.as_view().shape());
/// assert_eq!(borrowed.to_value(), v);
/// ```
pub trait AsValueView {
    /// The view.
    fn as_view(&self) -> ValueView<'_>;
}

impl AsValueView for Value {
    fn as_view(&self) -> ValueView<'_> {
        match self {
            Value::Bool(a) => ValueView::Bool(a.view()),
            Value::I32(a) => ValueView::I32(a.view()),
            Value::I64(a) => ValueView::I64(a.view()),
            Value::I8(a) => ValueView::I8(a.view()),
            Value::I16(a) => ValueView::I16(a.view()),
            Value::U8(a) => ValueView::U8(a.view()),
            Value::U16(a) => ValueView::U16(a.view()),
            Value::U32(a) => ValueView::U32(a.view()),
            Value::U64(a) => ValueView::U64(a.view()),
            Value::F32(a) => ValueView::F32(a.view()),
            Value::F64(a) => ValueView::F64(a.view()),
        }
    }
}

impl AsValueView for ValueView<'_> {
    fn as_view(&self) -> ValueView<'_> {
        match self {
            ValueView::Bool(a) => ValueView::Bool(a.view()),
            ValueView::I32(a) => ValueView::I32(a.view()),
            ValueView::I64(a) => ValueView::I64(a.view()),
            ValueView::I8(a) => ValueView::I8(a.view()),
            ValueView::I16(a) => ValueView::I16(a.view()),
            ValueView::U8(a) => ValueView::U8(a.view()),
            ValueView::U16(a) => ValueView::U16(a.view()),
            ValueView::U32(a) => ValueView::U32(a.view()),
            ValueView::U64(a) => ValueView::U64(a.view()),
            ValueView::F32(a) => ValueView::F32(a.view()),
            ValueView::F64(a) => ValueView::F64(a.view()),
        }
    }
}

/// Applies `$body` to the inner `ArrayD` of a [`Value`], whatever its element type.
#[macro_export]
macro_rules! with_array {
    ($value:expr, $a:ident => $body:expr) => {
        match $value {
            $crate::value::Value::Bool($a) => $body,
            $crate::value::Value::I32($a) => $body,
            $crate::value::Value::I64($a) => $body,
            $crate::value::Value::I8($a) => $body,
            $crate::value::Value::I16($a) => $body,
            $crate::value::Value::U8($a) => $body,
            $crate::value::Value::U16($a) => $body,
            $crate::value::Value::U32($a) => $body,
            $crate::value::Value::U64($a) => $body,
            $crate::value::Value::F32($a) => $body,
            $crate::value::Value::F64($a) => $body,
        }
    };
}

impl Value {
    /// Its element type.
    pub fn elem_type(&self) -> ElemType {
        match self {
            Value::Bool(_) => ElemType::Bool,
            Value::I32(_) => ElemType::I32,
            Value::I64(_) => ElemType::I64,
            Value::I8(_) => ElemType::I8,
            Value::I16(_) => ElemType::I16,
            Value::U8(_) => ElemType::U8,
            Value::U16(_) => ElemType::U16,
            Value::U32(_) => ElemType::U32,
            Value::U64(_) => ElemType::U64,
            Value::F32(_) => ElemType::F32,
            Value::F64(_) => ElemType::F64,
        }
    }

    /// Its shape (empty for a scalar).
    pub fn shape(&self) -> &[usize] {
        with_array!(self, a => a.shape())
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        with_array!(self, a => a.len())
    }

    /// `true` when it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A 0-dimensional value holding `s`.
    pub fn scalar(s: Scalar) -> Value {
        let sh = IxDyn(&[]);
        match s {
            Scalar::Bool(v) => Value::Bool(ArrayD::from_elem(sh, v)),
            Scalar::I32(v) => Value::I32(ArrayD::from_elem(sh, v)),
            Scalar::I64(v) => Value::I64(ArrayD::from_elem(sh, v)),
            Scalar::I8(v) => Value::I8(ArrayD::from_elem(sh, v)),
            Scalar::I16(v) => Value::I16(ArrayD::from_elem(sh, v)),
            Scalar::U8(v) => Value::U8(ArrayD::from_elem(sh, v)),
            Scalar::U16(v) => Value::U16(ArrayD::from_elem(sh, v)),
            Scalar::U32(v) => Value::U32(ArrayD::from_elem(sh, v)),
            Scalar::U64(v) => Value::U64(ArrayD::from_elem(sh, v)),
            Scalar::F32(v) => Value::F32(ArrayD::from_elem(sh, v)),
            Scalar::F64(v) => Value::F64(ArrayD::from_elem(sh, v)),
        }
    }

    /// The element at row-major position `flat` (`None` past the end).
    pub fn get_flat(&self, flat: usize) -> Option<Scalar> {
        match self {
            Value::Bool(a) => a.iter().nth(flat).map(|v| Scalar::Bool(*v)),
            Value::I32(a) => a.iter().nth(flat).map(|v| Scalar::I32(*v)),
            Value::I64(a) => a.iter().nth(flat).map(|v| Scalar::I64(*v)),
            Value::I8(a) => a.iter().nth(flat).map(|v| Scalar::I8(*v)),
            Value::I16(a) => a.iter().nth(flat).map(|v| Scalar::I16(*v)),
            Value::U8(a) => a.iter().nth(flat).map(|v| Scalar::U8(*v)),
            Value::U16(a) => a.iter().nth(flat).map(|v| Scalar::U16(*v)),
            Value::U32(a) => a.iter().nth(flat).map(|v| Scalar::U32(*v)),
            Value::U64(a) => a.iter().nth(flat).map(|v| Scalar::U64(*v)),
            Value::F32(a) => a.iter().nth(flat).map(|v| Scalar::F32(*v)),
            Value::F64(a) => a.iter().nth(flat).map(|v| Scalar::F64(*v)),
        }
    }

    /// All elements in row-major order, as scalars.
    pub fn to_scalars(&self) -> Vec<Scalar> {
        match self {
            Value::Bool(a) => a.iter().map(|v| Scalar::Bool(*v)).collect(),
            Value::I32(a) => a.iter().map(|v| Scalar::I32(*v)).collect(),
            Value::I64(a) => a.iter().map(|v| Scalar::I64(*v)).collect(),
            Value::I8(a) => a.iter().map(|v| Scalar::I8(*v)).collect(),
            Value::I16(a) => a.iter().map(|v| Scalar::I16(*v)).collect(),
            Value::U8(a) => a.iter().map(|v| Scalar::U8(*v)).collect(),
            Value::U16(a) => a.iter().map(|v| Scalar::U16(*v)).collect(),
            Value::U32(a) => a.iter().map(|v| Scalar::U32(*v)).collect(),
            Value::U64(a) => a.iter().map(|v| Scalar::U64(*v)).collect(),
            Value::F32(a) => a.iter().map(|v| Scalar::F32(*v)).collect(),
            Value::F64(a) => a.iter().map(|v| Scalar::F64(*v)).collect(),
        }
    }

    /// Builds a value of element type `elem` and `shape` from row-major scalars, which must
    /// all be of type `elem` and number the product of `shape` (`None` otherwise).
    pub fn from_scalars(elem: ElemType, shape: &[usize], data: &[Scalar]) -> Option<Value> {
        let sh = IxDyn(shape);
        macro_rules! build {
            ($variant:ident) => {{
                let v: Option<Vec<_>> =
                    data.iter().map(|s| if let Scalar::$variant(x) = s { Some(*x) } else { None }).collect();
                Value::$variant(ArrayD::from_shape_vec(sh, v?).ok()?)
            }};
        }
        Some(match elem {
            ElemType::Bool => build!(Bool),
            ElemType::I32 => build!(I32),
            ElemType::I64 => build!(I64),
            ElemType::I8 => build!(I8),
            ElemType::I16 => build!(I16),
            ElemType::U8 => build!(U8),
            ElemType::U16 => build!(U16),
            ElemType::U32 => build!(U32),
            ElemType::U64 => build!(U64),
            ElemType::F32 => build!(F32),
            ElemType::F64 => build!(F64),
        })
    }
}

macro_rules! value_from {
    ($t:ty, $variant:ident) => {
        impl From<ArrayD<$t>> for Value {
            fn from(a: ArrayD<$t>) -> Value {
                Value::$variant(a)
            }
        }
    };
}
value_from!(bool, Bool);
value_from!(i32, I32);
value_from!(i64, I64);
value_from!(i8, I8);
value_from!(i16, I16);
value_from!(u8, U8);
value_from!(u16, U16);
value_from!(u32, U32);
value_from!(u64, U64);
value_from!(f32, F32);
value_from!(f64, F64);

/// How closely two results must agree: per element `|got - want| <= atol + rtol * |want|`,
/// with at most `mismatch_fraction` of the elements allowed outside (the tolerances of
/// a conformance case's `case.toml`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// Relative tolerance.
    pub rtol: f64,
    /// Absolute tolerance.
    pub atol: f64,
    /// Fraction of elements allowed to differ by more.
    pub mismatch_fraction: f64,
}

impl Tolerance {
    /// Exact agreement.
    pub const EXACT: Tolerance = Tolerance { rtol: 0.0, atol: 0.0, mismatch_fraction: 0.0 };
}

/// Compares a result with the expected value: the element type and shape must be equal,
/// and the elements within `tol` (NaN matches NaN, an infinity matches itself). `Err` says
/// how many elements differ and shows the first.
///
/// ```
/// use eqfuse_ir::value::{compare, Tolerance, Value};
/// let a = Value::F32(ndarray::arr1(&[1.0, 2.0]).into_dyn());
/// let b = Value::F32(ndarray::arr1(&[1.0, 2.0001]).into_dyn());
/// assert!(compare(&a, &b, &Tolerance { rtol: 1e-3, ..Tolerance::EXACT }).is_ok());
/// assert!(compare(&a, &b, &Tolerance::EXACT).is_err());
/// ```
pub fn compare(got: &Value, want: &Value, tol: &Tolerance) -> Result<(), String> {
    if got.elem_type() != want.elem_type() {
        return Err(format!("element type {} but expected {}", got.elem_type(), want.elem_type()));
    }
    if got.shape() != want.shape() {
        return Err(format!("shape {:?} but expected {:?}", got.shape(), want.shape()));
    }
    let (g, w) = (got.to_scalars(), want.to_scalars());
    let mut bad = 0usize;
    let mut first = None;
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        if let (Some(a), Some(b)) = (a.as_i128(), b.as_i128()) {
            // integers compare exactly (a `u64` or an `i64` beyond 2^53 is not an `f64`)
            if a != b {
                bad += 1;
                first.get_or_insert((i, a as f64, b as f64));
            }
            continue;
        }
        let (a, b) = (a.as_f64(), b.as_f64());
        let ok = (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= tol.atol + tol.rtol * b.abs();
        if !ok {
            bad += 1;
            first.get_or_insert((i, a, b));
        }
    }
    let allowed = (tol.mismatch_fraction * w.len() as f64).floor() as usize;
    match first {
        Some((i, a, b)) if bad > allowed => Err(format!(
            "{bad} of {} elements differ (allowed {allowed}); first at flat index {i}: got {a}, expected {b}",
            w.len()
        )),
        _ => Ok(()),
    }
}
