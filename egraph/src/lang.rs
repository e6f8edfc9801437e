//! `ArrayLang`: the e-graph language of array programs.
//!
//! Every operation of the language reference (docs/language-reference.md) is a node. Scalar lambdas are terms with De Bruijn
//! parameters, so that functions live in the same e-graph as the arrays they build.
//!
//! # Leaves
//!
//! | text | node | meaning |
//! | --- | --- | --- |
//! | `1.5:f32`, `-3:i64`, `true:bool`, `inf:f32`, `-0.0:f64` | [`ArrayLang::Lit`] | a typed literal ([`Literal`]) |
//! | `$0:f32`, `$1:i64` | [`ArrayLang::Param`] | a lambda parameter ([`DeBruijn`]), typed |
//! | `@xs` | [`ArrayLang::Input`] | a program input ([`InputName`]) |
//! | `#n` | [`ArrayLang::Size`] | a size name, an `i64` ([`SizeName`]) |
//! | `<f32,i64>` | [`ArrayLang::Params`] | a lambda's parameter types ([`ParamTypes`]): its arity |
//!
//! # De Bruijn convention
//!
//! `(lam <t1,..,tK> body)` binds `K` consecutive indices; its first child, a
//! [`ParamTypes`] leaf, gives the parameters' types in source order (so `K` is its length).
//! The lambda's own class must record the parameter types: a body that ignores a parameter
//! would otherwise make `\x -> 0` on `f32` and on `i64` one class. **The last parameter is `$0`, the first is
//! `$(K-1)`**; a parameter of an enclosing lambda is numbered past all of them. So
//! `\x y -> x - y` is `(lam <f32,f32> (- $1:f32 $0:f32))`, and in
//! `\x -> iterate 3 (\y -> y * x) x` the inner `x` is `$1` and the outer one `$0`:
//! `(lam <f32> (iterate 3:i64 (lam <f32> (* $0:f32 $1:f32)) $0:f32))`.
//!
//! Parameters carry their element type (`$0:f32`). Without it, hash-consing would make
//! `\x -> x + x` on `f32` and on `i64` one e-class, and any type-dependent rewrite (or a type
//! in the analysis) would be unsound. With it, every e-class has exactly one type.
//!
//! # Operations
//!
//! Scalar: `+ - * / % == != < <= > >= && || & | ^ << >>` (binary; egg prints the remainder's
//! operator quoted, `("%" a b)`, and reads it either way; `&&`, `||` evaluate their right operand
//! lazily), `neg not`, `min max abs sqrt exp log sin cos tan tanh floor ceil round pow atan2
//! clamp log2 log10 exp2 expm1 log1p erf erfc lgamma popcount clz isnan isinf`, conversions
//! `to_i8 to_i16 to_i32 to_i64 to_u8 to_u16 to_u32 to_u64 to_f32 to_f64`, `(if c t e)` (lazy),
//! `(iterate n f init)`, `(tuple e1 .. ek)`, `(index a i1 .. ir)`, `(length a)`, `(dim a k)`.
//!
//! Functions: `(lam <types> body)`; `(app f a1 .. ak)` applies a function class (a `lam`, e.g. a
//! named function) to scalars. Operator sections and `min`/`max` used as an `op` are lambdas:
//! `(+)` on `f32` is `(lam <f32,f32> (+ $1:f32 $0:f32))`.
//!
//! Arrays: `(shape d1 .. dr)`, `(map f a1 .. ak)`, `(generate shape f)`, `(iota n)`,
//! `(fill shape x)`, `(reduce op ne a)`, `(scan op ne a)`, `(scan_ex op ne a)`,
//! `(filter p a)`, `(gather a idx)`, `(backpermute shape f a)`, `(permute op dest f a)`,
//! `(transpose a)`, `(reverse a)`, `(reshape shape a)`, `(slice a start len)`,
//! `(concat a b)`.
//!
//! Program root: `(outputs o1 .. ok)`, in the program's output order.
//!
//! # Reserved fused forms (used by the rules stage; never produced by `encode`)
//!
//! - `(redomap op ne shape f)` = `(reduce op ne (generate shape f))`
//! - `(scanomap op ne shape f)` = `(scan op ne (generate shape f))`
//! - `(filtermap p shape f)` = `(filter p (generate shape f))` (rank-1 `shape`)
//! - `(permutemap op dest g shape f)` = `(permute op dest g (generate shape f))`
//! - `(scanexomap op ne shape f)` = `(scan_ex op ne (generate shape f))`
//! - `(multi shape l1 .. lk)`: k results computed in one pass over the index space `shape`
//!   (horizontal fusion). Each lane is `(lgen f)` (the array `generate shape f`) or
//!   `(lred op ne f)` (the reduction `redomap op ne shape f`). Lanes are their own nodes, not
//!   the classes of the results they stand for, so that `(proj k m)` can join a result's
//!   class without making a cycle.
//! - `(proj k x)`: result `k` (a literal `i64`) of a `multi`, or element `k` of a scalar
//!   tuple (an index function's result).
//!
//! All decode to their definitions (`proj` of a `multi` to the lane's own operation).
//!
//! # Reductions and scans over groups (version 2; made by `encode`)
//!
//! A group of `w` arrays is never a value of the e-graph: its members are separate classes,
//! and an operation over a group reads them through an index function.
//!
//! - `(greduce op ne shape f check)`: the reduction of the innermost dimension of the
//!   group `generate shape f` (`f` returns a `(tuple ..)` of `w` components) with `op` (a
//!   `lam` of `2w` parameters, the accumulator's `w` then the element's, returning `w`)
//!   from `ne` (a `(tuple ..)` of `w`); its results are `(proj k g)`, `k < w`. `check`
//!   (a literal `i64`): `1` for `argmin`, `2` for `argmax`, whose empty innermost dimension
//!   is `E-SHAPE`; `0` otherwise.
//! - `(gscan op ne shape f exclusive)`: the inclusive (`exclusive` a literal `false`) or
//!   exclusive scan of the same, results `(proj k g)`.
//! - `(iterate n f (tuple ..))`: `iterate` over a tuple state of `w` components (`f` a `lam`
//!   of `w` parameters returning a `(tuple ..)` of `w`); its components are `(proj k it)`.
//!
//! A tuple parameter of a function is `w` parameters, its components in order.
//!
//! Index-space reads are `index` nodes: `(index (generate sh f) j..)` is what the beta rule
//! of docs/design-decisions.md decision 1 rewrites to `(app f j..)`.

use eqfuse_ir::ast::BinOp;
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::Scalar;
use std::fmt;
use std::str::FromStr;

/// A typed scalar constant. Floats are stored as bits, so `NaN`, `-0.0` and `0.0` are
/// distinct and equality, ordering and hashing are total.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Literal {
    /// `true:bool`
    Bool(bool),
    /// `-3:i32`
    I32(i32),
    /// `-3:i64`
    I64(i64),
    /// `-3:i8`
    I8(i8),
    /// `-3:i16`
    I16(i16),
    /// `3:u8`
    U8(u8),
    /// `3:u16`
    U16(u16),
    /// `3:u32`
    U32(u32),
    /// `3:u64`
    U64(u64),
    /// `1.5:f32`, stored as its bits.
    F32(u32),
    /// `1.5:f64`, stored as its bits.
    F64(u64),
}

impl Literal {
    /// The literal's element type.
    pub fn elem_type(self) -> ElemType {
        match self {
            Literal::Bool(_) => ElemType::Bool,
            Literal::I32(_) => ElemType::I32,
            Literal::I64(_) => ElemType::I64,
            Literal::I8(_) => ElemType::I8,
            Literal::I16(_) => ElemType::I16,
            Literal::U8(_) => ElemType::U8,
            Literal::U16(_) => ElemType::U16,
            Literal::U32(_) => ElemType::U32,
            Literal::U64(_) => ElemType::U64,
            Literal::F32(_) => ElemType::F32,
            Literal::F64(_) => ElemType::F64,
        }
    }

    /// The value as an interpreter scalar.
    pub fn to_scalar(self) -> Scalar {
        match self {
            Literal::Bool(b) => Scalar::Bool(b),
            Literal::I32(v) => Scalar::I32(v),
            Literal::I64(v) => Scalar::I64(v),
            Literal::I8(v) => Scalar::I8(v),
            Literal::I16(v) => Scalar::I16(v),
            Literal::U8(v) => Scalar::U8(v),
            Literal::U16(v) => Scalar::U16(v),
            Literal::U32(v) => Scalar::U32(v),
            Literal::U64(v) => Scalar::U64(v),
            Literal::F32(b) => Scalar::F32(f32::from_bits(b)),
            Literal::F64(b) => Scalar::F64(f64::from_bits(b)),
        }
    }

    /// The literal holding an interpreter scalar (bit for bit).
    pub fn from_scalar(s: Scalar) -> Literal {
        match s {
            Scalar::Bool(b) => Literal::Bool(b),
            Scalar::I32(v) => Literal::I32(v),
            Scalar::I64(v) => Literal::I64(v),
            Scalar::I8(v) => Literal::I8(v),
            Scalar::I16(v) => Literal::I16(v),
            Scalar::U8(v) => Literal::U8(v),
            Scalar::U16(v) => Literal::U16(v),
            Scalar::U32(v) => Literal::U32(v),
            Scalar::U64(v) => Literal::U64(v),
            Scalar::F32(v) => Literal::F32(v.to_bits()),
            Scalar::F64(v) => Literal::F64(v.to_bits()),
        }
    }

    /// Whether it is a float NaN (which `.eqf` text cannot spell as a literal).
    pub fn is_nan(self) -> bool {
        match self {
            Literal::F32(b) => f32::from_bits(b).is_nan(),
            Literal::F64(b) => f64::from_bits(b).is_nan(),
            _ => false,
        }
    }
}

impl fmt::Display for Literal {
    /// `value:type`; floats in Rust's shortest round-trip form (`1.5`, `1e-7`, `inf`,
    /// `-0.0`), NaN as `nan_<hex bits>` so that its payload survives.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Literal::Bool(b) => write!(f, "{b}:bool"),
            Literal::I32(v) => write!(f, "{v}:i32"),
            Literal::I64(v) => write!(f, "{v}:i64"),
            Literal::I8(v) => write!(f, "{v}:i8"),
            Literal::I16(v) => write!(f, "{v}:i16"),
            Literal::U8(v) => write!(f, "{v}:u8"),
            Literal::U16(v) => write!(f, "{v}:u16"),
            Literal::U32(v) => write!(f, "{v}:u32"),
            Literal::U64(v) => write!(f, "{v}:u64"),
            Literal::F32(b) if f32::from_bits(b).is_nan() => write!(f, "nan_{b:x}:f32"),
            Literal::F64(b) if f64::from_bits(b).is_nan() => write!(f, "nan_{b:x}:f64"),
            Literal::F32(b) => write!(f, "{:?}:f32", f32::from_bits(b)),
            Literal::F64(b) => write!(f, "{:?}:f64", f64::from_bits(b)),
        }
    }
}

impl FromStr for Literal {
    type Err = String;

    fn from_str(s: &str) -> Result<Literal, String> {
        let (v, t) = s.rsplit_once(':').ok_or_else(|| format!("`{s}` is not a typed literal"))?;
        let bad = |_| format!("bad literal `{s}`");
        let ty = ElemType::from_name(t).ok_or_else(|| format!("bad literal type in `{s}`"))?;
        Ok(match ty {
            ElemType::Bool => Literal::Bool(v.parse().map_err(|_| format!("bad literal `{s}`"))?),
            ElemType::I32 => Literal::I32(v.parse().map_err(bad)?),
            ElemType::I64 => Literal::I64(v.parse().map_err(bad)?),
            ElemType::I8 => Literal::I8(v.parse().map_err(bad)?),
            ElemType::I16 => Literal::I16(v.parse().map_err(bad)?),
            ElemType::U8 => Literal::U8(v.parse().map_err(bad)?),
            ElemType::U16 => Literal::U16(v.parse().map_err(bad)?),
            ElemType::U32 => Literal::U32(v.parse().map_err(bad)?),
            ElemType::U64 => Literal::U64(v.parse().map_err(bad)?),
            ElemType::F32 => match v.strip_prefix("nan_") {
                Some(h) => Literal::F32(u32::from_str_radix(h, 16).map_err(bad)?),
                None => Literal::F32(v.parse::<f32>().map_err(|_| format!("bad literal `{s}`"))?.to_bits()),
            },
            ElemType::F64 => match v.strip_prefix("nan_") {
                Some(h) => Literal::F64(u64::from_str_radix(h, 16).map_err(bad)?),
                None => Literal::F64(v.parse::<f64>().map_err(|_| format!("bad literal `{s}`"))?.to_bits()),
            },
        })
    }
}

/// A De Bruijn parameter with its element type: `$k:t` (see the module docs for the
/// numbering).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DeBruijn {
    /// 0 is the innermost bound parameter (the last parameter of the innermost lambda).
    pub index: u32,
    /// The parameter's element type.
    pub ty: ElemType,
}

impl fmt::Display for DeBruijn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "${}:{}", self.index, self.ty)
    }
}

impl FromStr for DeBruijn {
    type Err = String;

    fn from_str(s: &str) -> Result<DeBruijn, String> {
        let rest = s.strip_prefix('$').ok_or_else(|| format!("`{s}` is not a parameter"))?;
        let (i, t) = rest.split_once(':').ok_or_else(|| format!("`{s}` has no type"))?;
        let index = i.parse().map_err(|_| format!("bad parameter `{s}`"))?;
        let ty = ElemType::from_name(t).ok_or_else(|| format!("bad parameter type in `{s}`"))?;
        Ok(DeBruijn { index, ty })
    }
}

/// The parameter types of a `lam`, in source order: `<f32,i64>`. Its length is the arity.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ParamTypes(pub Vec<ElemType>);

impl ParamTypes {
    /// The arity.
    pub fn arity(&self) -> u32 {
        self.0.len() as u32
    }
}

impl fmt::Display for ParamTypes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.0.iter().map(|t| t.name()).collect();
        write!(f, "<{}>", names.join(","))
    }
}

impl FromStr for ParamTypes {
    type Err = String;

    fn from_str(s: &str) -> Result<ParamTypes, String> {
        let inner = s
            .strip_prefix('<')
            .and_then(|r| r.strip_suffix('>'))
            .ok_or_else(|| format!("`{s}` is not a parameter list"))?;
        let tys: Option<Vec<ElemType>> = inner.split(',').map(ElemType::from_name).collect();
        match tys {
            Some(t) if !t.is_empty() => Ok(ParamTypes(t)),
            _ => Err(format!("bad parameter list `{s}`")),
        }
    }
}

macro_rules! named_leaf {
    ($(#[$doc:meta])* $name:ident, $sigil:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub egg::Symbol);

        impl $name {
            /// Makes one from a name.
            pub fn new(name: &str) -> $name {
                $name(egg::Symbol::from(name))
            }

            /// The name.
            pub fn as_str(&self) -> &'static str {
                self.0.as_str()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}{}", $sigil, self.0)
            }
        }

        impl FromStr for $name {
            type Err = String;

            fn from_str(s: &str) -> Result<$name, String> {
                match s.strip_prefix($sigil) {
                    Some(n) if !n.is_empty() => Ok($name::new(n)),
                    _ => Err(format!("`{s}` does not start with `{}`", $sigil)),
                }
            }
        }
    };
}

named_leaf!(
    /// A program input: `@xs`.
    InputName,
    '@'
);
named_leaf!(
    /// A size name (an `i64`): `#n`.
    SizeName,
    '#'
);

egg::define_language! {
    /// The e-graph language of array programs (see the module docs).
    pub enum ArrayLang {
        // ---- scalar arithmetic, comparison, logic
        "+" = Add([egg::Id; 2]),
        "-" = Sub([egg::Id; 2]),
        "*" = Mul([egg::Id; 2]),
        "/" = Div([egg::Id; 2]),
        "%" = Rem([egg::Id; 2]),
        "==" = Eq([egg::Id; 2]),
        "!=" = Ne([egg::Id; 2]),
        "<" = Lt([egg::Id; 2]),
        "<=" = Le([egg::Id; 2]),
        ">" = Gt([egg::Id; 2]),
        ">=" = Ge([egg::Id; 2]),
        "&&" = And([egg::Id; 2]),
        "||" = Or([egg::Id; 2]),
        "&" = BitAnd([egg::Id; 2]),
        "|" = BitOr([egg::Id; 2]),
        "^" = BitXor([egg::Id; 2]),
        "<<" = Shl([egg::Id; 2]),
        ">>" = Shr([egg::Id; 2]),
        "neg" = Neg([egg::Id; 1]),
        "not" = Not([egg::Id; 1]),
        // ---- scalar builtins
        "min" = Min([egg::Id; 2]),
        "max" = Max([egg::Id; 2]),
        "abs" = Abs([egg::Id; 1]),
        "sqrt" = Sqrt([egg::Id; 1]),
        "exp" = Exp([egg::Id; 1]),
        "log" = Log([egg::Id; 1]),
        "sin" = Sin([egg::Id; 1]),
        "cos" = Cos([egg::Id; 1]),
        "tan" = Tan([egg::Id; 1]),
        "tanh" = Tanh([egg::Id; 1]),
        "floor" = Floor([egg::Id; 1]),
        "ceil" = Ceil([egg::Id; 1]),
        "round" = Round([egg::Id; 1]),
        "pow" = Pow([egg::Id; 2]),
        "atan2" = Atan2([egg::Id; 2]),
        "clamp" = Clamp([egg::Id; 3]),
        "to_i32" = ToI32([egg::Id; 1]),
        "to_i64" = ToI64([egg::Id; 1]),
        "to_f32" = ToF32([egg::Id; 1]),
        "to_f64" = ToF64([egg::Id; 1]),
        "to_i8" = ToI8([egg::Id; 1]),
        "to_i16" = ToI16([egg::Id; 1]),
        "to_u8" = ToU8([egg::Id; 1]),
        "to_u16" = ToU16([egg::Id; 1]),
        "to_u32" = ToU32([egg::Id; 1]),
        "to_u64" = ToU64([egg::Id; 1]),
        "log2" = Log2([egg::Id; 1]),
        "log10" = Log10([egg::Id; 1]),
        "exp2" = Exp2([egg::Id; 1]),
        "expm1" = Expm1([egg::Id; 1]),
        "log1p" = Log1p([egg::Id; 1]),
        "erf" = Erf([egg::Id; 1]),
        "erfc" = Erfc([egg::Id; 1]),
        "lgamma" = Lgamma([egg::Id; 1]),
        "popcount" = Popcount([egg::Id; 1]),
        "clz" = Clz([egg::Id; 1]),
        "isnan" = IsNan([egg::Id; 1]),
        "isinf" = IsInf([egg::Id; 1]),
        "if" = If([egg::Id; 3]),
        "iterate" = Iterate([egg::Id; 3]),
        "tuple" = Tuple(Box<[egg::Id]>),
        "index" = Index(Box<[egg::Id]>),
        "length" = Length([egg::Id; 1]),
        "dim" = Dim([egg::Id; 2]),
        // ---- functions
        "lam" = Lam([egg::Id; 2]),
        "app" = App(Box<[egg::Id]>),
        // ---- arrays
        "shape" = Shape(Box<[egg::Id]>),
        "map" = Map(Box<[egg::Id]>),
        "generate" = Generate([egg::Id; 2]),
        "iota" = Iota([egg::Id; 1]),
        "fill" = Fill([egg::Id; 2]),
        "reduce" = Reduce([egg::Id; 3]),
        "scan" = Scan([egg::Id; 3]),
        "scan_ex" = ScanEx([egg::Id; 3]),
        "filter" = Filter([egg::Id; 2]),
        "gather" = Gather([egg::Id; 2]),
        "backpermute" = Backpermute([egg::Id; 3]),
        "permute" = Permute([egg::Id; 4]),
        "transpose" = Transpose([egg::Id; 1]),
        "reverse" = Reverse([egg::Id; 1]),
        "reshape" = Reshape([egg::Id; 2]),
        "slice" = Slice([egg::Id; 3]),
        "concat" = Concat([egg::Id; 2]),
        // ---- reserved fused forms (rules stage)
        "redomap" = Redomap([egg::Id; 4]),
        "scanomap" = Scanomap([egg::Id; 4]),
        "filtermap" = Filtermap([egg::Id; 3]),
        "permutemap" = Permutemap([egg::Id; 5]),
        "scanexomap" = Scanexomap([egg::Id; 4]),
        "multi" = Multi(Box<[egg::Id]>),
        "lgen" = LaneGen([egg::Id; 1]),
        "lred" = LaneRed([egg::Id; 3]),
        "proj" = Proj([egg::Id; 2]),
        // ---- reductions and scans over groups (version 2)
        "greduce" = GReduce([egg::Id; 5]),
        "gscan" = GScan([egg::Id; 5]),
        // ---- the offsets of `reduce_segments` / `scan_segments`, checked (version 2)
        "segcheck" = SegCheck([egg::Id; 3]),
        // ---- program root
        "outputs" = Outputs(Box<[egg::Id]>),
        // ---- leaves
        Lit(Literal),
        Param(DeBruijn),
        Input(InputName),
        Size(SizeName),
        Params(ParamTypes),
    }
}

impl ArrayLang {
    /// The binary operator of a scalar binary node.
    pub fn bin_op(&self) -> Option<(BinOp, [egg::Id; 2])> {
        Some(match *self {
            ArrayLang::Add(c) => (BinOp::Add, c),
            ArrayLang::Sub(c) => (BinOp::Sub, c),
            ArrayLang::Mul(c) => (BinOp::Mul, c),
            ArrayLang::Div(c) => (BinOp::Div, c),
            ArrayLang::Rem(c) => (BinOp::Rem, c),
            ArrayLang::Eq(c) => (BinOp::Eq, c),
            ArrayLang::Ne(c) => (BinOp::Ne, c),
            ArrayLang::Lt(c) => (BinOp::Lt, c),
            ArrayLang::Le(c) => (BinOp::Le, c),
            ArrayLang::Gt(c) => (BinOp::Gt, c),
            ArrayLang::Ge(c) => (BinOp::Ge, c),
            ArrayLang::And(c) => (BinOp::And, c),
            ArrayLang::Or(c) => (BinOp::Or, c),
            ArrayLang::BitAnd(c) => (BinOp::BitAnd, c),
            ArrayLang::BitOr(c) => (BinOp::BitOr, c),
            ArrayLang::BitXor(c) => (BinOp::BitXor, c),
            ArrayLang::Shl(c) => (BinOp::Shl, c),
            ArrayLang::Shr(c) => (BinOp::Shr, c),
            _ => return None,
        })
    }

    /// The node for `a op b`.
    pub fn binary(op: BinOp, a: egg::Id, b: egg::Id) -> ArrayLang {
        let c = [a, b];
        match op {
            BinOp::Add => ArrayLang::Add(c),
            BinOp::Sub => ArrayLang::Sub(c),
            BinOp::Mul => ArrayLang::Mul(c),
            BinOp::Div => ArrayLang::Div(c),
            BinOp::Rem => ArrayLang::Rem(c),
            BinOp::Eq => ArrayLang::Eq(c),
            BinOp::Ne => ArrayLang::Ne(c),
            BinOp::Lt => ArrayLang::Lt(c),
            BinOp::Le => ArrayLang::Le(c),
            BinOp::Gt => ArrayLang::Gt(c),
            BinOp::Ge => ArrayLang::Ge(c),
            BinOp::And => ArrayLang::And(c),
            BinOp::Or => ArrayLang::Or(c),
            BinOp::BitAnd => ArrayLang::BitAnd(c),
            BinOp::BitOr => ArrayLang::BitOr(c),
            BinOp::BitXor => ArrayLang::BitXor(c),
            BinOp::Shl => ArrayLang::Shl(c),
            BinOp::Shr => ArrayLang::Shr(c),
        }
    }

    /// The `.eqf` builtin name of a scalar builtin node (`min`, `sqrt`, `f32`, ...).
    pub fn scalar_builtin(&self) -> Option<&'static str> {
        Some(match self {
            ArrayLang::Min(_) => "min",
            ArrayLang::Max(_) => "max",
            ArrayLang::Abs(_) => "abs",
            ArrayLang::Sqrt(_) => "sqrt",
            ArrayLang::Exp(_) => "exp",
            ArrayLang::Log(_) => "log",
            ArrayLang::Sin(_) => "sin",
            ArrayLang::Cos(_) => "cos",
            ArrayLang::Tan(_) => "tan",
            ArrayLang::Tanh(_) => "tanh",
            ArrayLang::Floor(_) => "floor",
            ArrayLang::Ceil(_) => "ceil",
            ArrayLang::Round(_) => "round",
            ArrayLang::Pow(_) => "pow",
            ArrayLang::Atan2(_) => "atan2",
            ArrayLang::Clamp(_) => "clamp",
            ArrayLang::ToI32(_) => "i32",
            ArrayLang::ToI64(_) => "i64",
            ArrayLang::ToF32(_) => "f32",
            ArrayLang::ToF64(_) => "f64",
            ArrayLang::ToI8(_) => "i8",
            ArrayLang::ToI16(_) => "i16",
            ArrayLang::ToU8(_) => "u8",
            ArrayLang::ToU16(_) => "u16",
            ArrayLang::ToU32(_) => "u32",
            ArrayLang::ToU64(_) => "u64",
            ArrayLang::Log2(_) => "log2",
            ArrayLang::Log10(_) => "log10",
            ArrayLang::Exp2(_) => "exp2",
            ArrayLang::Expm1(_) => "expm1",
            ArrayLang::Log1p(_) => "log1p",
            ArrayLang::Erf(_) => "erf",
            ArrayLang::Erfc(_) => "erfc",
            ArrayLang::Lgamma(_) => "lgamma",
            ArrayLang::Popcount(_) => "popcount",
            ArrayLang::Clz(_) => "clz",
            ArrayLang::IsNan(_) => "isnan",
            ArrayLang::IsInf(_) => "isinf",
            _ => return None,
        })
    }

    /// The node for the scalar builtin `name` (`min`, `sqrt`, `f32`, ...) applied to `args`,
    /// when the count is right.
    pub fn from_scalar_builtin(name: &str, args: &[egg::Id]) -> Option<ArrayLang> {
        Some(match (name, args) {
            ("min", &[a, b]) => ArrayLang::Min([a, b]),
            ("max", &[a, b]) => ArrayLang::Max([a, b]),
            ("pow", &[a, b]) => ArrayLang::Pow([a, b]),
            ("atan2", &[a, b]) => ArrayLang::Atan2([a, b]),
            ("clamp", &[a, b, c]) => ArrayLang::Clamp([a, b, c]),
            ("abs", &[a]) => ArrayLang::Abs([a]),
            ("sqrt", &[a]) => ArrayLang::Sqrt([a]),
            ("exp", &[a]) => ArrayLang::Exp([a]),
            ("log", &[a]) => ArrayLang::Log([a]),
            ("sin", &[a]) => ArrayLang::Sin([a]),
            ("cos", &[a]) => ArrayLang::Cos([a]),
            ("tan", &[a]) => ArrayLang::Tan([a]),
            ("tanh", &[a]) => ArrayLang::Tanh([a]),
            ("floor", &[a]) => ArrayLang::Floor([a]),
            ("ceil", &[a]) => ArrayLang::Ceil([a]),
            ("round", &[a]) => ArrayLang::Round([a]),
            ("i32", &[a]) => ArrayLang::ToI32([a]),
            ("i64", &[a]) => ArrayLang::ToI64([a]),
            ("f32", &[a]) => ArrayLang::ToF32([a]),
            ("f64", &[a]) => ArrayLang::ToF64([a]),
            ("i8", &[a]) => ArrayLang::ToI8([a]),
            ("i16", &[a]) => ArrayLang::ToI16([a]),
            ("u8", &[a]) => ArrayLang::ToU8([a]),
            ("u16", &[a]) => ArrayLang::ToU16([a]),
            ("u32", &[a]) => ArrayLang::ToU32([a]),
            ("u64", &[a]) => ArrayLang::ToU64([a]),
            ("log2", &[a]) => ArrayLang::Log2([a]),
            ("log10", &[a]) => ArrayLang::Log10([a]),
            ("exp2", &[a]) => ArrayLang::Exp2([a]),
            ("expm1", &[a]) => ArrayLang::Expm1([a]),
            ("log1p", &[a]) => ArrayLang::Log1p([a]),
            ("erf", &[a]) => ArrayLang::Erf([a]),
            ("erfc", &[a]) => ArrayLang::Erfc([a]),
            ("lgamma", &[a]) => ArrayLang::Lgamma([a]),
            ("popcount", &[a]) => ArrayLang::Popcount([a]),
            ("clz", &[a]) => ArrayLang::Clz([a]),
            ("isnan", &[a]) => ArrayLang::IsNan([a]),
            ("isinf", &[a]) => ArrayLang::IsInf([a]),
            _ => return None,
        })
    }

    /// The `.eqf` name of an array operation node (`map`, `reduce`, ...; the reserved fused
    /// forms give their own names).
    pub fn array_op(&self) -> Option<&'static str> {
        Some(match self {
            ArrayLang::Map(_) => "map",
            ArrayLang::Generate(_) => "generate",
            ArrayLang::Iota(_) => "iota",
            ArrayLang::Fill(_) => "fill",
            ArrayLang::Reduce(_) => "reduce",
            ArrayLang::Scan(_) => "scan",
            ArrayLang::ScanEx(_) => "scan_exclusive",
            ArrayLang::Filter(_) => "filter",
            ArrayLang::Gather(_) => "gather",
            ArrayLang::Backpermute(_) => "backpermute",
            ArrayLang::Permute(_) => "permute",
            ArrayLang::Transpose(_) => "transpose",
            ArrayLang::Reverse(_) => "reverse",
            ArrayLang::Reshape(_) => "reshape",
            ArrayLang::Slice(_) => "slice",
            ArrayLang::Concat(_) => "concat",
            ArrayLang::Redomap(_) => "redomap",
            ArrayLang::Scanomap(_) => "scanomap",
            ArrayLang::Filtermap(_) => "filtermap",
            ArrayLang::Permutemap(_) => "permutemap",
            ArrayLang::Scanexomap(_) => "scanexomap",
            ArrayLang::Multi(_) => "multi",
            ArrayLang::GReduce(_) => "greduce",
            ArrayLang::GScan(_) => "gscan",
            ArrayLang::SegCheck(_) => "segcheck",
            _ => return None,
        })
    }

    /// Whether its results are `proj`ections of it: a `multi`, a `greduce` or a `gscan`.
    pub fn has_results(&self) -> bool {
        matches!(self, ArrayLang::Multi(_) | ArrayLang::GReduce(_) | ArrayLang::GScan(_))
    }

    /// Whether it is a leaf (literal, parameter, input, size, parameter types).
    pub fn is_leaf(&self) -> bool {
        matches!(
            self,
            ArrayLang::Lit(_)
                | ArrayLang::Param(_)
                | ArrayLang::Input(_)
                | ArrayLang::Size(_)
                | ArrayLang::Params(_)
        )
    }
}
