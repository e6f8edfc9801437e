//! The syntax tree of a `.eqf` program, as the parser reads it and the builder makes it.
//!
//! The same tree serves before and after type checking: the checker fills [`Expr::ty`] on
//! every node (see [`crate::check`]). Equality (`==`) compares structure only: spans and
//! filled-in types are ignored, so `parse(print(p)) == p`.
//!
//! Every node records its nesting [`Expr::depth`], computed in constant time when the node
//! is made, so that passes can refuse a too-deep tree before they recurse over it.

use crate::error::Span;
use crate::types::{ElemType, Type};
use crate::value::Scalar;

/// Binary operators, loosest first as docs/language-reference.md orders them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// `||`
    Or,
    /// `&&`
    And,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Rem,
    /// `|` (bitwise or, on integers)
    BitOr,
    /// `^` (bitwise exclusive or)
    BitXor,
    /// `&` (bitwise and)
    BitAnd,
    /// `<<` (shift left; the amount masked to the width)
    Shl,
    /// `>>` (shift right: arithmetic on signed types, logical on unsigned ones)
    Shr,
}

impl BinOp {
    /// Every binary operator.
    pub const ALL: [BinOp; 18] = [
        BinOp::Or,
        BinOp::And,
        BinOp::Eq,
        BinOp::Ne,
        BinOp::Lt,
        BinOp::Le,
        BinOp::Gt,
        BinOp::Ge,
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::Div,
        BinOp::Rem,
        BinOp::BitOr,
        BinOp::BitXor,
        BinOp::BitAnd,
        BinOp::Shl,
        BinOp::Shr,
    ];

    /// The operator's spelling.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Or => "||",
            BinOp::And => "&&",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::BitAnd => "&",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
        }
    }

    /// Binding strength, Python's order: 1 (`||`), 2 (`&&`), 3 (comparisons), 4 (`|`),
    /// 5 (`^`), 6 (`&`), 7 (`<< >>`), 8 (`+ -`), 9 (`* / %`). All are left-associative.
    pub fn precedence(self) -> u8 {
        match self {
            BinOp::Or => 1,
            BinOp::And => 2,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => 3,
            BinOp::BitOr => 4,
            BinOp::BitXor => 5,
            BinOp::BitAnd => 6,
            BinOp::Shl | BinOp::Shr => 7,
            BinOp::Add | BinOp::Sub => 8,
            BinOp::Mul | BinOp::Div | BinOp::Rem => 9,
        }
    }

    /// The loosest precedence.
    pub const LOOSEST: u8 = 1;
    /// The tightest precedence of a binary operator.
    pub const TIGHTEST: u8 = 9;

    /// `& | ^ << >>` (integers only).
    pub fn is_bitwise(self) -> bool {
        matches!(self, BinOp::BitOr | BinOp::BitXor | BinOp::BitAnd | BinOp::Shl | BinOp::Shr)
    }

    /// `== != < <= > >=`
    pub fn is_comparison(self) -> bool {
        self.precedence() == 3
    }

    /// `&& ||`
    pub fn is_logical(self) -> bool {
        matches!(self, BinOp::And | BinOp::Or)
    }

    /// `+ - * / %`
    pub fn is_arithmetic(self) -> bool {
        matches!(self, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem)
    }
}

/// Unary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    /// `-x`
    Neg,
    /// `!x`
    Not,
}

impl UnOp {
    /// The operator's spelling.
    pub fn symbol(self) -> &'static str {
        match self {
            UnOp::Neg => "-",
            UnOp::Not => "!",
        }
    }
}

/// A literal. A `-` directly before a numeric literal is folded into it by the parser
/// (`-1000000`, `-inf`), so negative literals exist; the printer writes them in parentheses.
#[derive(Clone, Copy, Debug)]
pub enum Lit {
    /// An integer literal; its type (an integer or a float type) is decided by the checker.
    /// Held as an `i128` so that every `u64` (`0xff51afd7ed558ccd`) and every negative `i64`
    /// fit; whether it fits its type is checked (`E-TYPE`).
    Int(i128),
    /// A float literal (`1.5`, `1e-3`, `inf`); never NaN.
    Float(f64),
    /// `true` / `false`.
    Bool(bool),
    /// An integer literal written in hexadecimal (`0xFF`): the same as [`Lit::Int`] but
    /// printed in hexadecimal, so print → parse → print keeps it. Never negative.
    Hex(u64),
}

impl PartialEq for Lit {
    fn eq(&self, other: &Lit) -> bool {
        match (self, other) {
            (Lit::Int(a), Lit::Int(b)) => a == b,
            (Lit::Float(a), Lit::Float(b)) => a.to_bits() == b.to_bits(),
            (Lit::Bool(a), Lit::Bool(b)) => a == b,
            (Lit::Hex(a), Lit::Hex(b)) => a == b,
            _ => false,
        }
    }
}

impl Lit {
    /// The literal's value at the element type the checker resolved for it (`None`: the
    /// defaults, `i64` for integers and `f64` for floats). An integer literal may stand for a
    /// float; `None` when the type cannot hold this kind of literal (a float as an integer,
    /// a number as a bool), which the checker never allows.
    pub fn value_at(self, ty: Option<ElemType>) -> Option<Scalar> {
        Some(match (self, ty) {
            (Lit::Bool(b), None | Some(ElemType::Bool)) => Scalar::Bool(b),
            (Lit::Int(_) | Lit::Hex(_), Some(t)) if t.is_float() => {
                Scalar::from_i128_wrapping(t, self.int_value()?)
            }
            (Lit::Int(_) | Lit::Hex(_), t) => {
                let t = t.unwrap_or(ElemType::I64);
                let v = self.int_value()?;
                let (lo, hi) = t.int_range()?;
                if v < lo || v > hi {
                    return None;
                }
                Scalar::from_i128_wrapping(t, v)
            }
            (Lit::Float(f), None | Some(ElemType::F64)) => Scalar::F64(f),
            (Lit::Float(f), Some(ElemType::F32)) => Scalar::F32(f as f32),
            _ => return None,
        })
    }

    /// The value of an integer literal (decimal or hexadecimal); `None` for the others.
    pub fn int_value(self) -> Option<i128> {
        match self {
            Lit::Int(i) => Some(i),
            Lit::Hex(h) => Some(i128::from(h)),
            _ => None,
        }
    }
}

/// The forms of expression. One grammar serves array and scalar expressions.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// A literal.
    Lit(Lit),
    /// A name: an input, a `let`, an output, a size name, a lambda parameter, a local `let`,
    /// or a builtin (`map`, `exp`, `max`, `f32`, ...).
    Var(String),
    /// `let (a, b, ...) = value in body`: destructures a tuple or a group.
    LetTuple {
        /// Bound names, two or more.
        names: Vec<String>,
        /// A tuple or group of as many parts.
        value: Box<Expr>,
        /// Scope of the bindings.
        body: Box<Expr>,
    },
    /// `loop pat = init for var < count do body` or `loop pat = init while cond do body`.
    Loop {
        /// The state's names: one, or two or more for a tuple pattern.
        pat: Vec<String>,
        /// Whether the pattern was written as a tuple (`loop (x) = ...` is never written; a
        /// one-name pattern is `loop x = ...`).
        tuple: bool,
        /// The initial state.
        init: Box<Expr>,
        /// `for` or `while`.
        form: LoopForm,
        /// The next state, over the state's names (and the `for` variable).
        body: Box<Expr>,
    },
    /// `let name = value in body`
    Let {
        /// Bound name.
        name: String,
        /// Bound value (may be a lambda: a local named function).
        value: Box<Expr>,
        /// Scope of the binding.
        body: Box<Expr>,
    },
    /// `if cond then then_ else else_` (lazy).
    If {
        /// Condition (`bool`).
        cond: Box<Expr>,
        /// Taken when `cond` is true.
        then_: Box<Expr>,
        /// Taken when `cond` is false.
        else_: Box<Expr>,
    },
    /// `\p1 p2 -> body` (or `fn p1 p2 -> body`).
    Lambda {
        /// Parameter names (at least one).
        params: Vec<String>,
        /// Body.
        body: Box<Expr>,
    },
    /// `lhs op rhs`
    Binary {
        /// Operator.
        op: BinOp,
        /// Left operand.
        lhs: Box<Expr>,
        /// Right operand.
        rhs: Box<Expr>,
    },
    /// `-x`, `!x`
    Unary {
        /// Operator.
        op: UnOp,
        /// Operand.
        operand: Box<Expr>,
    },
    /// `func arg1 ... argk` (k >= 1): builtins, named functions, lambdas.
    Apply {
        /// The function.
        func: Box<Expr>,
        /// Arguments, at least one.
        args: Vec<Expr>,
    },
    /// `array[i1, ..., ir]`
    Index {
        /// The array.
        array: Box<Expr>,
        /// One index per dimension.
        indices: Vec<Expr>,
    },
    /// `(e1, ..., ek)`, k >= 2: a tuple of scalars, or a group of arrays (a tuple at array
    /// level).
    Tuple(Vec<Expr>),
    /// `(+)`: an operator as a function.
    Section(BinOp),
    /// `[d1, ..., dr]`: a shape, only as the shape argument of a builtin.
    Shape(Vec<Expr>),
}

/// How a [`ExprKind::Loop`] decides how many times it runs.
#[derive(Clone, Debug, PartialEq)]
pub enum LoopForm {
    /// `for var < count`: `count` evaluated once, `var` runs `0 .. count - 1`.
    For {
        /// The iteration variable (an `i64`).
        var: String,
        /// The number of iterations.
        count: Box<Expr>,
    },
    /// `while cond`: `cond` evaluated before every iteration, over the state.
    While {
        /// The condition (`bool`).
        cond: Box<Expr>,
    },
}

/// An expression with its position, its nesting depth and (after checking) its type.
#[derive(Clone, Debug)]
pub struct Expr {
    /// What the expression is.
    pub kind: ExprKind,
    /// Where it is in the text (a dummy span for builder-made nodes).
    pub span: Span,
    /// Filled by the checker; `None` before checking.
    pub ty: Option<Type>,
    /// Nesting depth: 1 for a leaf, 1 + the deepest child otherwise.
    pub depth: u32,
}

impl PartialEq for Expr {
    fn eq(&self, other: &Expr) -> bool {
        self.kind == other.kind
    }
}

impl Expr {
    /// Makes a node, computing its depth from its children.
    pub fn new(kind: ExprKind, span: Span) -> Expr {
        let depth = 1 + kind.children().map(|c| c.depth).max().unwrap_or(0);
        Expr { kind, span, ty: None, depth }
    }

    /// A variable reference.
    pub fn var(name: impl Into<String>, span: Span) -> Expr {
        Expr::new(ExprKind::Var(name.into()), span)
    }

    /// A literal.
    pub fn lit(lit: Lit, span: Span) -> Expr {
        Expr::new(ExprKind::Lit(lit), span)
    }

    /// The checked type; panics only on a program that did not pass the checker, which is a
    /// bug in the caller, never a user error.
    pub fn checked_ty(&self) -> Option<&Type> {
        self.ty.as_ref()
    }
}

impl ExprKind {
    /// Direct children, in source order.
    pub fn children(&self) -> Box<dyn Iterator<Item = &Expr> + '_> {
        match self {
            ExprKind::Lit(_) | ExprKind::Var(_) | ExprKind::Section(_) => Box::new(std::iter::empty()),
            ExprKind::Let { value, body, .. } | ExprKind::LetTuple { value, body, .. } => {
                Box::new([&**value, &**body].into_iter())
            }
            ExprKind::Loop { init, form, body, .. } => {
                let mid: &Expr = match form {
                    LoopForm::For { count, .. } => count,
                    LoopForm::While { cond } => cond,
                };
                Box::new([&**init, mid, &**body].into_iter())
            }
            ExprKind::If { cond, then_, else_ } => Box::new([&**cond, &**then_, &**else_].into_iter()),
            ExprKind::Lambda { body, .. } => Box::new(std::iter::once(&**body)),
            ExprKind::Binary { lhs, rhs, .. } => Box::new([&**lhs, &**rhs].into_iter()),
            ExprKind::Unary { operand, .. } => Box::new(std::iter::once(&**operand)),
            ExprKind::Apply { func, args } => Box::new(std::iter::once(&**func).chain(args.iter())),
            ExprKind::Index { array, indices } => Box::new(std::iter::once(&**array).chain(indices.iter())),
            ExprKind::Tuple(es) | ExprKind::Shape(es) => Box::new(es.iter()),
        }
    }
}

impl ExprKind {
    /// Direct children, mutably, in the order of [`ExprKind::children`].
    pub fn children_mut(&mut self) -> Vec<&mut Expr> {
        match self {
            ExprKind::Lit(_) | ExprKind::Var(_) | ExprKind::Section(_) => Vec::new(),
            ExprKind::Let { value, body, .. } | ExprKind::LetTuple { value, body, .. } => {
                vec![&mut **value, &mut **body]
            }
            ExprKind::Loop { init, form, body, .. } => {
                let mid: &mut Expr = match form {
                    LoopForm::For { count, .. } => count,
                    LoopForm::While { cond } => cond,
                };
                vec![&mut **init, mid, &mut **body]
            }
            ExprKind::If { cond, then_, else_ } => vec![&mut **cond, &mut **then_, &mut **else_],
            ExprKind::Lambda { body, .. } => vec![&mut **body],
            ExprKind::Binary { lhs, rhs, .. } => vec![&mut **lhs, &mut **rhs],
            ExprKind::Unary { operand, .. } => vec![&mut **operand],
            ExprKind::Apply { func, args } => std::iter::once(&mut **func).chain(args.iter_mut()).collect(),
            ExprKind::Index { array, indices } => {
                std::iter::once(&mut **array).chain(indices.iter_mut()).collect()
            }
            ExprKind::Tuple(es) | ExprKind::Shape(es) => es.iter_mut().collect(),
        }
    }
}

/// A top-level item of a program.
#[derive(Clone, Debug)]
pub enum Item {
    /// `input name : type` (a scalar or an array type whose dims are literals or size names).
    Input {
        /// Input name.
        name: String,
        /// Declared type: `Type::Scalar` or `Type::Array` with `Dim::Known`/`Dim::Size` dims.
        ty: Type,
        /// The whole item.
        span: Span,
    },
    /// `let name = value`
    Let {
        /// Bound name.
        name: String,
        /// Value: an array, a scalar, or a lambda (a named function).
        value: Expr,
        /// The whole item.
        span: Span,
    },
    /// `let (a, b, ...) = value`: destructures a tuple or a group.
    LetTuple {
        /// Bound names, two or more.
        names: Vec<String>,
        /// A tuple or group of as many parts.
        value: Expr,
        /// The whole item.
        span: Span,
    },
    /// `output name = value`, or `output name` naming an earlier binding.
    Output {
        /// Output name.
        name: String,
        /// The value, or `None` for `output x`.
        value: Option<Expr>,
        /// The whole item.
        span: Span,
    },
}

impl Item {
    /// The name the item declares or outputs (the first name of a [`Item::LetTuple`]).
    pub fn name(&self) -> &str {
        match self {
            Item::Input { name, .. } | Item::Let { name, .. } | Item::Output { name, .. } => name,
            Item::LetTuple { names, .. } => &names[0],
        }
    }

    /// Every name the item declares or outputs.
    pub fn names(&self) -> Vec<&str> {
        match self {
            Item::LetTuple { names, .. } => names.iter().map(String::as_str).collect(),
            _ => vec![self.name()],
        }
    }

    /// The item's span.
    pub fn span(&self) -> Span {
        match self {
            Item::Input { span, .. }
            | Item::Let { span, .. }
            | Item::LetTuple { span, .. }
            | Item::Output { span, .. } => *span,
        }
    }
}

impl PartialEq for Item {
    fn eq(&self, other: &Item) -> bool {
        match (self, other) {
            (Item::Input { name: a, ty: ta, .. }, Item::Input { name: b, ty: tb, .. }) => a == b && ta == tb,
            (Item::Let { name: a, value: va, .. }, Item::Let { name: b, value: vb, .. }) => {
                a == b && va == vb
            }
            (Item::Output { name: a, value: va, .. }, Item::Output { name: b, value: vb, .. }) => {
                a == b && va == vb
            }
            (Item::LetTuple { names: a, value: va, .. }, Item::LetTuple { names: b, value: vb, .. }) => {
                a == b && va == vb
            }
            _ => false,
        }
    }
}

/// A whole program: its items in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Program {
    /// Items in source order.
    pub items: Vec<Item>,
}

impl Program {
    /// The declared inputs, in order, with their declared types.
    pub fn inputs(&self) -> impl Iterator<Item = (&str, &Type)> {
        self.items.iter().filter_map(|it| match it {
            Item::Input { name, ty, .. } => Some((name.as_str(), ty)),
            _ => None,
        })
    }

    /// The output names, in order.
    pub fn output_names(&self) -> impl Iterator<Item = &str> {
        self.items.iter().filter_map(|it| match it {
            Item::Output { name, .. } => Some(name.as_str()),
            _ => None,
        })
    }
}

/// The array operations of docs/language-reference.md: builtins that make or consume whole arrays, and so
/// are refused inside lambdas.
pub const ARRAY_BUILTINS: &[&str] = &[
    "map",
    "generate",
    "iota",
    "fill",
    "reduce",
    "scan",
    "scan_exclusive",
    "filter",
    "gather",
    "backpermute",
    "permute",
    "transpose",
    "reverse",
    "reshape",
    "slice",
    "concat",
    "sum",
    "prod",
    "mean",
    "all",
    "any",
    "dot",
    "argmin",
    "argmax",
    "reduce_segments",
    "scan_segments",
];

/// The scalar builtins of docs/language-reference.md.
pub const SCALAR_BUILTINS: &[&str] = &[
    "min", "max", "abs", "sqrt", "exp", "log", "sin", "cos", "tan", "tanh", "floor", "ceil", "round", "pow",
    "atan2", "clamp", "f32", "f64", "i32", "i64", "iterate", "length", "size", "i8", "i16", "u8", "u16",
    "u32", "u64", "popcount", "clz", "isnan", "isinf", "log2", "log10", "exp2", "expm1", "log1p", "erf",
    "erfc", "lgamma", "pi",
];

/// Whether `name` is a builtin of the language. Builtins are not keywords and not reserved
/// (version 2): a program's input, `let`, `output` or lambda parameter may take a builtin's
/// name, and within its scope the name is the program's value.
pub fn is_builtin(name: &str) -> bool {
    ARRAY_BUILTINS.contains(&name) || SCALAR_BUILTINS.contains(&name)
}

/// Keywords of docs/language-reference.md (never names).
pub const KEYWORDS: &[&str] = &[
    "input", "output", "let", "in", "if", "then", "else", "fn", "true", "false", "inf", "loop", "for",
    "while", "do",
];

/// Limits that protect the machine from hostile programs and inputs.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Deepest expression nesting accepted by the parser, the builder and the checker.
    pub max_depth: u32,
    /// Largest program text, in bytes.
    pub max_program_bytes: usize,
    /// Most bytes the interpreter may allocate for one array (checked before allocating).
    pub max_array_bytes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { max_depth: 2000, max_program_bytes: 16 << 20, max_array_bytes: default_memory_limit() }
    }
}

/// The memory this process may use, read once per process: the smaller of the machine's
/// physical memory (`/proc/meminfo`, 8 GiB where it cannot be read) and the memory limit of
/// the control group the process runs in (cgroup v2 `memory.max` or v1
/// `memory.limit_in_bytes`, of its group and every group above it), so that in a container
/// an array larger than the container may hold is refused with `E-LIMIT` instead of the
/// process being killed.
pub fn default_memory_limit() -> u64 {
    // every run makes `Limits`: reading /proc each time cost a small run a third of its time
    static TOTAL: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *TOTAL.get_or_init(|| {
        let physical = read_memory_total();
        let groups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        cgroup_memory_limit(std::path::Path::new("/sys/fs/cgroup"), &groups)
            .map_or(physical, |c| c.min(physical))
    })
}

fn read_memory_total() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map(|kb| kb.saturating_mul(1024))
        .unwrap_or(8 << 30)
}

/// The smallest memory limit set on the control groups of a process whose
/// `/proc/self/cgroup` reads `groups`, with the cgroup file systems mounted under `root`:
/// cgroup v2 (`0::PATH`, `root/PATH/memory.max`, or `root/unified/PATH` on hybrid systems)
/// and v1 (`N:memory:PATH`, `root/memory/PATH/memory.limit_in_bytes`), each read in the
/// group's directory and every directory above it up to the mount (a limit on a parent binds
/// its children). `None` where no limit is set (`max`, or v1's "no limit" of about 2^63).
pub fn cgroup_memory_limit(root: &std::path::Path, groups: &str) -> Option<u64> {
    let mut limits = Vec::new();
    for line in groups.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let path = path.trim_start_matches('/');
        if controllers.is_empty() {
            for mount in [root.to_path_buf(), root.join("unified")] {
                limits.extend(limits_up(&mount, path, "memory.max"));
            }
        } else if controllers.split(',').any(|c| c == "memory") {
            limits.extend(limits_up(&root.join("memory"), path, "memory.limit_in_bytes"));
        }
    }
    limits.into_iter().min()
}

/// The limits in file `file` of `mount/path` and of every directory above it up to `mount`.
fn limits_up(mount: &std::path::Path, path: &str, file: &str) -> Vec<u64> {
    // v1 writes "no limit" as the largest multiple of the page size below 2^63
    const UNLIMITED: u64 = 1 << 62;
    let mut dir = mount.join(path);
    let mut out = Vec::new();
    loop {
        if let Ok(text) = std::fs::read_to_string(dir.join(file)) {
            if let Ok(n) = text.trim().parse::<u64>() {
                if n < UNLIMITED {
                    out.push(n);
                }
            }
        }
        if dir.as_path() == mount || !dir.pop() || !dir.starts_with(mount) {
            return out;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::cgroup_memory_limit;
    use std::path::{Path, PathBuf};

    /// A fake cgroup mount under the temporary directory, with `files` (path, content).
    fn tree(label: &str, files: &[(&str, &str)]) -> PathBuf {
        let root = std::env::temp_dir().join(format!("eqfuse-cgroup-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for (path, text) in files {
            let p = root.join(path);
            if let Some(dir) = p.parent() {
                std::fs::create_dir_all(dir).expect("make the fake cgroup tree");
            }
            std::fs::write(&p, text).expect("write a fake cgroup file");
        }
        root
    }

    fn clean(root: &Path) {
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn a_v2_limit_of_the_group_or_a_parent_binds() {
        let root = tree(
            "v2",
            &[("memory.max", "max\n"), ("a/memory.max", "2147483648\n"), ("a/b/memory.max", "max\n")],
        );
        assert_eq!(cgroup_memory_limit(&root, "0::/a/b\n"), Some(2 << 30));
        assert_eq!(cgroup_memory_limit(&root, "0::/\n"), None);
        clean(&root);
    }

    #[test]
    fn a_v1_limit_is_read_and_its_no_limit_value_ignored() {
        let root = tree(
            "v1",
            &[
                ("memory/memory.limit_in_bytes", "9223372036854771712\n"),
                ("memory/docker/c1/memory.limit_in_bytes", "1073741824\n"),
            ],
        );
        let groups = "4:memory:/docker/c1\n3:cpuset:/\n0::/\n";
        assert_eq!(cgroup_memory_limit(&root, groups), Some(1 << 30));
        assert_eq!(cgroup_memory_limit(&root, "4:memory:/\n"), None);
        clean(&root);
    }

    #[test]
    fn the_smallest_of_several_hierarchies_wins_and_junk_is_ignored() {
        let root = tree(
            "both",
            &[("unified/g/memory.max", "3000000000"), ("memory/g/memory.limit_in_bytes", "4000000000")],
        );
        let groups = "garbage\n4:memory:/g\n0::/g\n";
        assert_eq!(cgroup_memory_limit(&root, groups), Some(3_000_000_000));
        assert_eq!(cgroup_memory_limit(&root, ""), None);
        clean(&root);
    }
}
