//! Element types, dimensions, shapes and the types of expressions.

use std::fmt;

/// The element types of docs/language-reference.md.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ElemType {
    /// `bool`
    Bool,
    /// `i8`
    I8,
    /// `i16`
    I16,
    /// `i32`
    I32,
    /// `i64`
    I64,
    /// `u8`
    U8,
    /// `u16`
    U16,
    /// `u32`
    U32,
    /// `u64`
    U64,
    /// `f32`
    F32,
    /// `f64`
    F64,
}

impl ElemType {
    /// All element types.
    pub const ALL: [ElemType; 11] = [
        ElemType::Bool,
        ElemType::I8,
        ElemType::I16,
        ElemType::I32,
        ElemType::I64,
        ElemType::U8,
        ElemType::U16,
        ElemType::U32,
        ElemType::U64,
        ElemType::F32,
        ElemType::F64,
    ];

    /// The element types of language version 1 (`bool i32 i64 f32 f64`).
    pub const V1: [ElemType; 5] =
        [ElemType::Bool, ElemType::I32, ElemType::I64, ElemType::F32, ElemType::F64];

    /// The eight integer types.
    pub const INTS: [ElemType; 8] = [
        ElemType::I8,
        ElemType::I16,
        ElemType::I32,
        ElemType::I64,
        ElemType::U8,
        ElemType::U16,
        ElemType::U32,
        ElemType::U64,
    ];

    /// The keyword spelling: `bool`, `i32`, ...
    pub fn name(self) -> &'static str {
        match self {
            ElemType::Bool => "bool",
            ElemType::I8 => "i8",
            ElemType::I16 => "i16",
            ElemType::I32 => "i32",
            ElemType::I64 => "i64",
            ElemType::U8 => "u8",
            ElemType::U16 => "u16",
            ElemType::U32 => "u32",
            ElemType::U64 => "u64",
            ElemType::F32 => "f32",
            ElemType::F64 => "f64",
        }
    }

    /// Parses a type name.
    pub fn from_name(s: &str) -> Option<ElemType> {
        ElemType::ALL.iter().copied().find(|t| t.name() == s)
    }

    /// One of the eight integer types.
    pub fn is_int(self) -> bool {
        self.int_bits().is_some()
    }

    /// A signed integer type (`i8 i16 i32 i64`).
    pub fn is_signed_int(self) -> bool {
        matches!(self, ElemType::I8 | ElemType::I16 | ElemType::I32 | ElemType::I64)
    }

    /// An unsigned integer type (`u8 u16 u32 u64`).
    pub fn is_unsigned(self) -> bool {
        matches!(self, ElemType::U8 | ElemType::U16 | ElemType::U32 | ElemType::U64)
    }

    /// The width in bits of an integer type; `None` for `bool` and floats.
    pub fn int_bits(self) -> Option<u32> {
        match self {
            ElemType::I8 | ElemType::U8 => Some(8),
            ElemType::I16 | ElemType::U16 => Some(16),
            ElemType::I32 | ElemType::U32 => Some(32),
            ElemType::I64 | ElemType::U64 => Some(64),
            _ => None,
        }
    }

    /// The smallest and largest value of an integer type, as `i128`.
    pub fn int_range(self) -> Option<(i128, i128)> {
        let bits = self.int_bits()?;
        Some(if self.is_unsigned() {
            (0, (1i128 << bits) - 1)
        } else {
            (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
        })
    }

    /// Whether this is an element type of language version 1 (`bool i32 i64 f32 f64`).
    pub fn is_v1(self) -> bool {
        ElemType::V1.contains(&self)
    }

    /// `f32` or `f64`.
    pub fn is_float(self) -> bool {
        matches!(self, ElemType::F32 | ElemType::F64)
    }

    /// Integer or float.
    pub fn is_numeric(self) -> bool {
        self != ElemType::Bool
    }

    /// Bytes per element.
    pub fn size_bytes(self) -> usize {
        match self {
            ElemType::Bool | ElemType::I8 | ElemType::U8 => 1,
            ElemType::I16 | ElemType::U16 => 2,
            ElemType::I32 | ElemType::U32 | ElemType::F32 => 4,
            ElemType::I64 | ElemType::U64 | ElemType::F64 => 8,
        }
    }
}

impl fmt::Display for ElemType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One dimension of a shape as known before the program runs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    /// A literal size: `f32[1024]`.
    Known(i64),
    /// A size name bound from the inputs' shapes: `f32[n]`.
    Size(String),
    /// A size computed by an expression (`generate [n - 1] ...`, `slice xs 0 k`); the text is
    /// the expression's printed form, so two equal texts denote equal sizes.
    Expr(String),
    /// Known only at run time (the length of a `filter`'s result, a shape chosen by `if`).
    Dynamic,
    /// `mul * name + add` in an input type (`i64[m + 1]`, `f32[2 * n]`, `f32[n - 1]`): the
    /// input's shape binds `name`. `mul >= 1`; printed as written (`m + 1`, `2 * n`).
    Affine {
        /// The size name the dimension binds.
        name: String,
        /// The factor `k` of `k * name` (1 otherwise).
        mul: i64,
        /// The constant added (negative for `name - k`).
        add: i64,
    },
}

impl Dim {
    /// The plain size name that stands for the affine dimension `mul * name + add` where a
    /// stage knows plain size names only (the optimiser's rewrite of input types): the
    /// binding of inputs binds it too, to the dimension's extent.
    pub fn affine_stand_in(name: &str, mul: i64, add: i64) -> String {
        format!("{name}'{mul}x{}", add.to_string().replace('-', "m"))
    }

    /// Whether two dimensions are certainly equal (`Some(true)`), certainly different
    /// (`Some(false)`), or unknown until run time (`None`).
    pub fn agrees(&self, other: &Dim) -> Option<bool> {
        match (self, other) {
            (Dim::Known(a), Dim::Known(b)) => Some(a == b),
            (Dim::Size(a), Dim::Size(b)) if a == b => Some(true),
            (Dim::Expr(a), Dim::Expr(b)) if a == b => Some(true),
            (Dim::Affine { .. }, Dim::Affine { .. }) if self == other => Some(true),
            _ => None,
        }
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Known(n) => write!(f, "{n}"),
            Dim::Size(s) => f.write_str(s),
            Dim::Expr(e) => write!(f, "({e})"),
            Dim::Dynamic => f.write_str("?"),
            Dim::Affine { name, mul, add } => {
                if *mul != 1 {
                    write!(f, "{mul} * ")?;
                }
                f.write_str(name)?;
                match add.cmp(&0) {
                    std::cmp::Ordering::Greater => write!(f, " + {add}"),
                    std::cmp::Ordering::Less => write!(f, " - {}", add.unsigned_abs()),
                    std::cmp::Ordering::Equal => Ok(()),
                }
            }
        }
    }
}

/// The type of a value or expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Type {
    /// A scalar.
    Scalar(ElemType),
    /// An array of rank `shape.len()` (at least 1).
    Array {
        /// Element type.
        elem: ElemType,
        /// One entry per dimension, outermost first.
        shape: Vec<Dim>,
    },
    /// A tuple of scalars (2 or more): a lambda's parameter or result, an index function's
    /// result, an `iterate` state.
    Tuple(Vec<ElemType>),
    /// A tuple at array level (2 or more parts, each a scalar or an array): a *group* of
    /// arrays of one shape that `reduce`, `scan` and the segment operations consume or
    /// produce, or a loop's state. Never an output, never an element of an array.
    Group(Vec<Type>),
    /// A scalar function (a lambda, a named function, an operator section, a builtin used as
    /// a value such as `max` in `scan max ...`).
    Func {
        /// Parameter types: each a `Type::Scalar` or a `Type::Tuple`.
        params: Vec<Type>,
        /// Result: a scalar or a tuple.
        ret: Box<Type>,
    },
    /// A shape argument `[d1, ..., dr]` of rank r.
    ShapeArg(usize),
}

impl Type {
    /// Element type of a scalar or array.
    pub fn elem(&self) -> Option<ElemType> {
        match self {
            Type::Scalar(e) | Type::Array { elem: e, .. } => Some(*e),
            _ => None,
        }
    }

    /// Rank: 0 for scalars, the number of dimensions for arrays.
    pub fn rank(&self) -> Option<usize> {
        match self {
            Type::Scalar(_) => Some(0),
            Type::Array { shape, .. } => Some(shape.len()),
            _ => None,
        }
    }

    /// `true` for arrays.
    pub fn is_array(&self) -> bool {
        matches!(self, Type::Array { .. })
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Scalar(e) => write!(f, "{e}"),
            Type::Array { elem, shape } => {
                write!(f, "{elem}[")?;
                for (i, d) in shape.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{d}")?;
                }
                f.write_str("]")
            }
            Type::Tuple(ts) => write_parts(f, ts),
            Type::Func { params, ret } => {
                for p in params {
                    write!(f, "{p} -> ")?;
                }
                write!(f, "{ret}")
            }
            Type::Group(ts) => write_parts(f, ts),
            Type::ShapeArg(r) => write!(f, "shape of rank {r}"),
        }
    }
}

/// `(a, b, ...)`: the parts of a tuple or a group.
fn write_parts<T: fmt::Display>(f: &mut fmt::Formatter<'_>, parts: &[T]) -> fmt::Result {
    f.write_str("(")?;
    for (i, t) in parts.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{t}")?;
    }
    f.write_str(")")
}
