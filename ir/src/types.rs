//! Element types, dimensions, shapes and the types of expressions.

use std::fmt;

/// The element types of docs/language-reference.md.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ElemType {
    /// `bool`
    Bool,
    /// `i32`
    I32,
    /// `i64`
    I64,
    /// `f32`
    F32,
    /// `f64`
    F64,
}

impl ElemType {
    /// All element types.
    pub const ALL: [ElemType; 5] =
        [ElemType::Bool, ElemType::I32, ElemType::I64, ElemType::F32, ElemType::F64];

    /// The keyword spelling: `bool`, `i32`, ...
    pub fn name(self) -> &'static str {
        match self {
            ElemType::Bool => "bool",
            ElemType::I32 => "i32",
            ElemType::I64 => "i64",
            ElemType::F32 => "f32",
            ElemType::F64 => "f64",
        }
    }

    /// Parses a type name.
    pub fn from_name(s: &str) -> Option<ElemType> {
        ElemType::ALL.iter().copied().find(|t| t.name() == s)
    }

    /// `i32` or `i64`.
    pub fn is_int(self) -> bool {
        matches!(self, ElemType::I32 | ElemType::I64)
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
            ElemType::Bool => 1,
            ElemType::I32 | ElemType::F32 => 4,
            ElemType::I64 | ElemType::F64 => 8,
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
}

impl Dim {
    /// Whether two dimensions are certainly equal (`Some(true)`), certainly different
    /// (`Some(false)`), or unknown until run time (`None`).
    pub fn agrees(&self, other: &Dim) -> Option<bool> {
        match (self, other) {
            (Dim::Known(a), Dim::Known(b)) => Some(a == b),
            (Dim::Size(a), Dim::Size(b)) if a == b => Some(true),
            (Dim::Expr(a), Dim::Expr(b)) if a == b => Some(true),
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
    /// A tuple of scalars: only the result of an index function.
    Tuple(Vec<ElemType>),
    /// A scalar function (a lambda, a named function, an operator section, a builtin used as
    /// a value such as `max` in `scan max ...`).
    Func {
        /// Parameter types.
        params: Vec<ElemType>,
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
            Type::Tuple(ts) => {
                f.write_str("(")?;
                for (i, t) in ts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{t}")?;
                }
                f.write_str(")")
            }
            Type::Func { params, ret } => {
                for p in params {
                    write!(f, "{p} -> ")?;
                }
                write!(f, "{ret}")
            }
            Type::ShapeArg(r) => write!(f, "shape of rank {r}"),
        }
    }
}
