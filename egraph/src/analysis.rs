//! `Facts`: the e-class analysis — each class's kind (scalar, array with symbolic shape,
//! function, tuple, ...), its constant value (with constant folding), and its free De Bruijn
//! parameters.
//!
//! # Merge rules (`Analysis::merge`)
//!
//! - `kind`: classes that merge have one type (every node is typed, parameters included), so
//!   the kinds agree up to what is known: `Unknown` gives way to anything; for arrays, each
//!   dimension keeps the more informative of the two (`Const` > `Size` > `Class` >
//!   `Dynamic`, the class kept on a tie).
//! - `constant`: `None` gives way to `Some`; two different constants keep the first (which
//!   sound rules never cause).
//! - `best`/`size`: the smaller term wins (the first on a tie).
//! - `free`: the **union** of the two sets (a class's free parameters are those of any of
//!   its nodes: a rewrite may lose occurrences, e.g. `$0 + $1 - $1 ==> $0`, and the union
//!   keeps what every member may refer to) — except that a class with a constant has none:
//!   its value depends on no parameter and its `Lit` node mentions none (`$1 * 0` merged
//!   with `0` would otherwise make every term around a `0` look open).
//!
//! `merge` reports [`DidMerge`] exactly: the first flag when `a` changed, the second when
//! the merged value differs from `b`.
//!
//! # Constant folding
//!
//! `make` computes a constant for a scalar node whose needed children are constant, with
//! the interpreter's own functions ([`eqfuse_ir::interp::scalar`]), so wrapping integers and
//! `f32` arithmetic are exactly the interpreter's. Nothing that would be a run-time error is
//! folded (integer division or remainder by zero gives no constant), and no NaN is folded
//! (`.eqf` cannot spell it as a literal). `if` folds to its taken branch's constant, `&&`
//! and `||` short-circuit on a constant left operand. `modify` adds the `Lit` node to a
//! class that has a constant.

use crate::lang::{ArrayLang, InputName, Literal};
use egg::{DidMerge, EGraph, Id, Language};
use eqfuse_ir::ast::UnOp;
use eqfuse_ir::error::Span;
use eqfuse_ir::interp::scalar::{self, ScalarFn};
use eqfuse_ir::types::{Dim, ElemType, Type};
use std::collections::HashMap;

/// One dimension of an array class's shape, as known before the program runs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SymDim {
    /// A constant size.
    Const(i64),
    /// A size name of the inputs.
    Size(egg::Symbol),
    /// The value of an `i64` e-class (as found when the shape was made; canonicalise with
    /// `EGraph::find` before comparing).
    Class(Id),
    /// Not tracked (a `filter` result, a `concat`, an `if` whose branches differ).
    Dynamic,
}

impl SymDim {
    fn rank(&self) -> u8 {
        match self {
            SymDim::Const(_) => 3,
            SymDim::Size(_) => 2,
            SymDim::Class(_) => 1,
            SymDim::Dynamic => 0,
        }
    }
}

/// What kind of value a class denotes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Not (yet) known: an ill-formed node.
    Unknown,
    /// A scalar.
    Scalar(ElemType),
    /// An array.
    Array {
        /// Element type.
        elem: ElemType,
        /// One entry per dimension, outermost first.
        shape: Vec<SymDim>,
    },
    /// A tuple of scalars (an index function's result).
    Tuple(Vec<ElemType>),
    /// A function of `arity` scalar parameters returning `ret` (a scalar or tuple kind).
    Func {
        /// Number of parameters.
        arity: u32,
        /// Result kind.
        ret: Box<Kind>,
    },
    /// A shape argument.
    Shape(Vec<SymDim>),
    /// A `Params` leaf (a lambda's parameter types) of this arity.
    Params(u32),
    /// The results of a `multi` node.
    Multi(Vec<Kind>),
    /// A lane of a `multi`: `(lgen f)` makes an array of `elem`, `(lred op ne f)` reduces to
    /// `elem` (`reduces`).
    Lane {
        /// Element type of the lane's result.
        elem: ElemType,
        /// `true` for a reduction lane.
        reduces: bool,
    },
    /// The program root.
    Outputs,
}

impl Kind {
    /// Element type of a scalar or array.
    pub fn elem(&self) -> Option<ElemType> {
        match self {
            Kind::Scalar(e) | Kind::Array { elem: e, .. } => Some(*e),
            _ => None,
        }
    }

    /// `true` for arrays.
    pub fn is_array(&self) -> bool {
        matches!(self, Kind::Array { .. })
    }

    /// The kind a function returns (`Unknown` for a non-function).
    pub fn ret(&self) -> Kind {
        match self {
            Kind::Func { ret, .. } => (**ret).clone(),
            _ => Kind::Unknown,
        }
    }

    /// The kind of a value of checker type `ty` (sizes as declared).
    pub fn of_type(ty: &Type) -> Kind {
        match ty {
            Type::Scalar(e) => Kind::Scalar(*e),
            Type::Array { elem, shape } => Kind::Array {
                elem: *elem,
                shape: shape
                    .iter()
                    .map(|d| match d {
                        Dim::Known(k) => SymDim::Const(*k),
                        Dim::Size(s) => SymDim::Size(egg::Symbol::from(s.as_str())),
                        _ => SymDim::Dynamic,
                    })
                    .collect(),
            },
            Type::Tuple(ts) => Kind::Tuple(ts.clone()),
            Type::Func { params, ret } => {
                Kind::Func { arity: params.len() as u32, ret: Box::new(Kind::of_type(ret)) }
            }
            Type::ShapeArg(r) => Kind::Shape(vec![SymDim::Dynamic; *r]),
            // array-level tuples never reach the e-graph (the encoder refuses them)
            Type::Group(_) => Kind::Unknown,
        }
    }
}

/// A set of free De Bruijn indices, sorted, without repeats.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ParamSet(Vec<u32>);

impl ParamSet {
    /// The empty set.
    pub fn empty() -> ParamSet {
        ParamSet(Vec::new())
    }

    /// `{i}`.
    pub fn single(i: u32) -> ParamSet {
        ParamSet(vec![i])
    }

    /// Whether it has no element (a closed class).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `i` is in it.
    pub fn contains(&self, i: u32) -> bool {
        self.0.binary_search(&i).is_ok()
    }

    /// The indices, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().copied()
    }

    /// The largest index, if any.
    pub fn max(&self) -> Option<u32> {
        self.0.last().copied()
    }

    /// Adds every element of `other`; `true` when something was added.
    pub fn union_with(&mut self, other: &ParamSet) -> bool {
        let before = self.0.len();
        self.0.extend(other.iter());
        self.0.sort_unstable();
        self.0.dedup();
        self.0.len() != before
    }

    /// The elements in both.
    pub fn intersect(&self, other: &ParamSet) -> ParamSet {
        ParamSet(self.0.iter().copied().filter(|i| other.contains(*i)).collect())
    }

    /// The set seen from outside a binder of `k` parameters: indices `>= k`, minus `k`.
    pub fn under_binder(&self, k: u32) -> ParamSet {
        ParamSet(self.0.iter().filter(|&&i| i >= k).map(|&i| i - k).collect())
    }
}

/// What the analysis knows about one e-class.
#[derive(Clone, Debug, PartialEq)]
pub struct ClassFacts {
    /// Kind and type (shape for arrays).
    pub kind: Kind,
    /// The class's value when it is a known constant.
    pub constant: Option<Literal>,
    /// Free De Bruijn parameters (relative to the class itself).
    pub free: ParamSet,
    /// The node of a smallest term of the class (its children, canonicalised with
    /// `EGraph::find`, lead to smallest terms of theirs): the representative that
    /// substitution copies (see the beta rule).
    pub best: ArrayLang,
    /// The size of that term as a tree, saturating. It strictly decreases from a class to
    /// the classes of its `best` node's children, so following `best` always ends.
    ///
    /// Up to [`EXACT_SIZE`] it is a smallest term's; above, a smaller term replaces the
    /// recorded one only when it is at least 1/16 smaller ([`smaller`]).
    pub size: u64,
}

/// Terms up to this size are compared exactly; see [`smaller`].
pub const EXACT_SIZE: u64 = 1024;

/// Whether a term of size `new` replaces a class's recorded term of size `old`: when it is
/// smaller, and — above [`EXACT_SIZE`] — smaller by at least 1/16.
///
/// Every replacement changes the class's facts, and egg then recomputes every class above
/// it: a smaller term found deep in a chain of `n` nested maps shrinks the size of every
/// class above it, one at a time, and `n` such finds cost `n^2` recomputations (a chain
/// of 16 000 maps of seven functions spent minutes in one rebuild, past the optimiser's
/// deadline). With the relative step a shrink of `k` stops rising where the sizes reach
/// `16 k`. Any rule that only ever replaces a term by a smaller one keeps the invariant
/// `best` relies on: a class's size is the size its `best` node had when it was recorded,
/// and its children's sizes have only shrunk since.
pub fn smaller(new: u64, old: u64) -> bool {
    new < old && (old <= EXACT_SIZE || new <= old - old / 16)
}

/// A token no analysis has had before.
fn next_run() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The e-class analysis. It holds the declared types of the program's inputs, which the
/// kinds of `Input` leaves come from; the rules' own state about the e-graph is theirs
/// (`eqfuse_rules::context`).
#[derive(Debug)]
pub struct Facts {
    /// Declared type of every input, by name.
    pub inputs: HashMap<InputName, Type>,
    /// Which run of the rules this e-graph belongs to: the rules keep their own state
    /// about it (`eqfuse_rules::context`) under this token. Unique to this analysis: a
    /// clone (the analysis of a new e-graph) gets a new one.
    pub run: u64,
    /// The optimisation's deadline: past it the rules written in Rust (node rules) neither
    /// match nor apply, so that one long iteration stops there too. Like the memos it is
    /// this e-graph's alone (a clone has none).
    pub deadline: Option<std::time::Instant>,
    /// Classes a rewrite built from another by substitution (new class, the class it was
    /// built from), in the order they were made: the new class stands for the same source
    /// expression in another context, so it takes that expression's source position when
    /// it has none of its own.
    pub derived: Vec<(Id, Id)>,
}

impl Clone for Facts {
    fn clone(&self) -> Facts {
        Facts::with_inputs(self.inputs.clone())
    }
}

impl Default for Facts {
    fn default() -> Facts {
        Facts::with_inputs(HashMap::new())
    }
}

impl Facts {
    /// An analysis knowing the inputs' declared types.
    pub fn new<'a>(inputs: impl IntoIterator<Item = (&'a str, &'a Type)>) -> Facts {
        Facts::with_inputs(inputs.into_iter().map(|(n, t)| (InputName::new(n), t.clone())).collect())
    }

    fn with_inputs(inputs: HashMap<InputName, Type>) -> Facts {
        Facts { inputs, run: next_run(), deadline: None, derived: Vec::new() }
    }
}

fn merge_dims(a: &mut [SymDim], b: &[SymDim]) -> bool {
    let mut changed = false;
    for (x, y) in a.iter_mut().zip(b) {
        if y.rank() > x.rank() {
            *x = y.clone();
            changed = true;
        }
    }
    changed
}

/// Merges kind `b` into `a`; `true` when `a` changed.
fn merge_kind(a: &mut Kind, b: &Kind) -> bool {
    match (&mut *a, b) {
        (Kind::Unknown, Kind::Unknown) => false,
        (Kind::Unknown, _) => {
            *a = b.clone();
            true
        }
        (Kind::Array { shape: sa, .. }, Kind::Array { shape: sb, .. }) if sa.len() == sb.len() => {
            merge_dims(sa, sb)
        }
        (Kind::Shape(sa), Kind::Shape(sb)) if sa.len() == sb.len() => merge_dims(sa, sb),
        _ => false,
    }
}

fn data(eg: &EGraph<ArrayLang, Facts>, id: Id) -> &ClassFacts {
    &eg[id].data
}

/// The dimension an `i64` class gives a shape: its constant, else its size name, else
/// the class itself.
pub fn dim_of(eg: &EGraph<ArrayLang, Facts>, id: Id) -> SymDim {
    if let Some(Literal::I64(v)) = data(eg, id).constant {
        return SymDim::Const(v);
    }
    for n in &eg[id].nodes {
        if let ArrayLang::Size(s) = n {
            return SymDim::Size(s.0);
        }
    }
    SymDim::Class(eg.find(id))
}

/// What a node's kind and constant are computed from: the facts of its children, in an
/// e-graph (the analysis) or in a term ([`term_kinds`]).
trait Known {
    /// The kind of child `id`.
    fn kind(&self, id: Id) -> &Kind;
    /// The constant value of child `id`.
    fn constant(&self, id: Id) -> Option<Literal>;
    /// The dimension `i64` child `id` gives a shape ([`dim_of`]).
    fn dim(&self, id: Id) -> SymDim;
    /// Whether `a` and `b` are one class.
    fn same(&self, a: Id, b: Id) -> bool;
    /// The declared type of an input.
    fn input(&self, name: &InputName) -> Option<&Type>;
}

impl Known for EGraph<ArrayLang, Facts> {
    fn kind(&self, id: Id) -> &Kind {
        &data(self, id).kind
    }

    fn constant(&self, id: Id) -> Option<Literal> {
        data(self, id).constant
    }

    fn dim(&self, id: Id) -> SymDim {
        dim_of(self, id)
    }

    fn same(&self, a: Id, b: Id) -> bool {
        self.find(a) == self.find(b)
    }

    fn input(&self, name: &InputName) -> Option<&Type> {
        self.analysis.inputs.get(name)
    }
}

/// A term's nodes as the analysis sees them while [`term_kinds`] walks it: each node's
/// class is the first equal node (children compared as classes), as an e-graph of the
/// term alone would hash-cons it.
struct TermKnown<'a> {
    facts: &'a Facts,
    kinds: Vec<Kind>,
    constants: Vec<Option<Literal>>,
    /// The size name of each node that is one.
    sizes: Vec<Option<egg::Symbol>>,
    /// Each node's class: the index of the first node equal to it.
    class: Vec<Id>,
}

impl Known for TermKnown<'_> {
    fn kind(&self, id: Id) -> &Kind {
        &self.kinds[usize::from(id)]
    }

    fn constant(&self, id: Id) -> Option<Literal> {
        self.constants[usize::from(id)]
    }

    fn dim(&self, id: Id) -> SymDim {
        let i = usize::from(id);
        match (self.constants[i], self.sizes[i]) {
            (Some(Literal::I64(v)), _) => SymDim::Const(v),
            (_, Some(s)) => SymDim::Size(s),
            _ => SymDim::Class(self.class[i]),
        }
    }

    fn same(&self, a: Id, b: Id) -> bool {
        self.class[usize::from(a)] == self.class[usize::from(b)]
    }

    fn input(&self, name: &InputName) -> Option<&Type> {
        self.facts.inputs.get(name)
    }
}

/// The kind of every node of a term (children before parents), as an e-graph of the term
/// alone under `facts` gives its classes: equal nodes share a class, and a node with a
/// constant value takes the kind of its literal where its own is unknown (the analysis
/// merges the class with the literal's). Dimensions the analysis only knows as a class are
/// named by the index of the first node of that class.
///
/// Lowering needs these for every term it lowers; an e-graph built for them cost most of a
/// lowering of a large term (its tables growing node by node).
pub fn term_kinds(nodes: &[ArrayLang], facts: &Facts) -> Vec<Kind> {
    let n = nodes.len();
    let mut known = TermKnown {
        facts,
        kinds: Vec::with_capacity(n),
        constants: Vec::with_capacity(n),
        sizes: Vec::with_capacity(n),
        class: Vec::with_capacity(n),
    };
    let mut first: HashMap<ArrayLang, Id> = HashMap::with_capacity(n);
    for (i, node) in nodes.iter().enumerate() {
        let node = node.clone().map_children(|c| known.class[usize::from(c)]);
        let size = match node {
            ArrayLang::Size(s) => Some(s.0),
            _ => None,
        };
        let (kind, constant, class) = match first.get(&node) {
            Some(&c) => (known.kinds[usize::from(c)].clone(), known.constants[usize::from(c)], c),
            None => {
                let constant = fold(&known, &node);
                let mut kind = kind_of(&known, &node);
                if let Some(l) = constant {
                    merge_kind(&mut kind, &Kind::Scalar(l.elem_type()));
                }
                first.insert(node, Id::from(i));
                (kind, constant, Id::from(i))
            }
        };
        known.kinds.push(kind);
        known.constants.push(constant);
        known.sizes.push(size);
        known.class.push(class);
    }
    known.kinds
}

fn shape_of(kind: &Kind) -> Option<Vec<SymDim>> {
    match kind {
        Kind::Shape(s) | Kind::Array { shape: s, .. } => Some(s.clone()),
        _ => None,
    }
}

fn array(elem: Option<ElemType>, shape: Option<Vec<SymDim>>) -> Kind {
    match (elem, shape) {
        (Some(elem), Some(shape)) if !shape.is_empty() => Kind::Array { elem, shape },
        _ => Kind::Unknown,
    }
}

/// The kind of `node` from its children's facts.
fn kind_of(eg: &impl Known, node: &ArrayLang) -> Kind {
    use ArrayLang as L;
    let k = |id: &Id| eg.kind(*id).clone();
    let elem = |id: &Id| eg.kind(*id).elem();
    let ret_elem = |id: &Id| eg.kind(*id).ret().elem();
    let scalar = |e: Option<ElemType>| e.map_or(Kind::Unknown, Kind::Scalar);
    match node {
        L::Lit(l) => Kind::Scalar(l.elem_type()),
        L::Param(p) => Kind::Scalar(p.ty),
        L::Input(name) => eg.input(name).map_or(Kind::Unknown, Kind::of_type),
        L::Size(_) => Kind::Scalar(ElemType::I64),
        L::Params(p) => Kind::Params(p.arity()),
        L::Eq(_)
        | L::Ne(_)
        | L::Lt(_)
        | L::Le(_)
        | L::Gt(_)
        | L::Ge(_)
        | L::And(_)
        | L::Or(_)
        | L::IsNan(_)
        | L::IsInf(_) => Kind::Scalar(ElemType::Bool),
        // `!` on an integer is its bitwise complement
        L::Not([a]) => scalar(elem(a).or(Some(ElemType::Bool))),
        L::Add([a, _]) | L::Sub([a, _]) | L::Mul([a, _]) | L::Div([a, _]) | L::Rem([a, _]) => scalar(elem(a)),
        L::BitAnd([a, _]) | L::BitOr([a, _]) | L::BitXor([a, _]) | L::Shl([a, _]) | L::Shr([a, _]) => {
            scalar(elem(a))
        }
        L::Popcount(_) | L::Clz(_) => Kind::Scalar(ElemType::I32),
        L::Min([a, _]) | L::Max([a, _]) | L::Pow([a, _]) | L::Atan2([a, _]) | L::Clamp([a, _, _]) => {
            scalar(elem(a))
        }
        L::Neg([a])
        | L::Abs([a])
        | L::Sqrt([a])
        | L::Exp([a])
        | L::Log([a])
        | L::Sin([a])
        | L::Cos([a])
        | L::Tan([a])
        | L::Tanh([a])
        | L::Floor([a])
        | L::Ceil([a])
        | L::Round([a])
        | L::Log2([a])
        | L::Log10([a])
        | L::Exp2([a])
        | L::Expm1([a])
        | L::Log1p([a])
        | L::Erf([a])
        | L::Erfc([a])
        | L::Lgamma([a]) => scalar(elem(a)),
        L::ToI8(_) => Kind::Scalar(ElemType::I8),
        L::ToI16(_) => Kind::Scalar(ElemType::I16),
        L::ToU8(_) => Kind::Scalar(ElemType::U8),
        L::ToU16(_) => Kind::Scalar(ElemType::U16),
        L::ToU32(_) => Kind::Scalar(ElemType::U32),
        L::ToU64(_) => Kind::Scalar(ElemType::U64),
        L::ToI32(_) => Kind::Scalar(ElemType::I32),
        L::ToI64(_) => Kind::Scalar(ElemType::I64),
        L::ToF32(_) => Kind::Scalar(ElemType::F32),
        L::ToF64(_) => Kind::Scalar(ElemType::F64),
        L::If([_, t, e]) => {
            let mut kt = k(t);
            if let (Kind::Array { shape: sa, .. }, Kind::Array { shape: sb, .. }) = (&mut kt, &k(e)) {
                for (x, y) in sa.iter_mut().zip(sb) {
                    let same = match (&*x, y) {
                        (SymDim::Class(p), SymDim::Class(q)) => eg.same(*p, *q),
                        (p, q) => p == q,
                    };
                    if !same {
                        *x = SymDim::Dynamic;
                    }
                }
            }
            kt
        }
        L::Iterate([_, _, init]) => k(init),
        L::Tuple(es) => {
            let ts: Option<Vec<ElemType>> = es.iter().map(elem).collect();
            ts.map_or(Kind::Unknown, Kind::Tuple)
        }
        L::Index(c) => scalar(c.first().and_then(elem)),
        L::Length(_) | L::Dim(_) => Kind::Scalar(ElemType::I64),
        L::Lam([n, body]) => match *eg.kind(*n) {
            Kind::Params(arity) => Kind::Func { arity, ret: Box::new(k(body)) },
            _ => Kind::Unknown,
        },
        L::App(c) => c.first().map_or(Kind::Unknown, |f| k(f).ret()),
        L::Shape(ds) => Kind::Shape(ds.iter().map(|d| eg.dim(*d)).collect()),
        L::Map(c) => array(c.first().and_then(ret_elem), c.get(1).and_then(|a| shape_of(eg.kind(*a)))),
        L::Generate([sh, f]) => array(ret_elem(f), shape_of(eg.kind(*sh))),
        L::Iota([n]) => Kind::Array { elem: ElemType::I64, shape: vec![eg.dim(*n)] },
        L::Fill([sh, x]) => array(elem(x), shape_of(eg.kind(*sh))),
        L::Reduce([_, ne, a]) => reduced(elem(ne), shape_of(eg.kind(*a))),
        L::Redomap([_, ne, sh, _]) => reduced(elem(ne), shape_of(eg.kind(*sh))),
        L::Scan([_, _, a]) | L::ScanEx([_, _, a]) => k(a),
        L::Scanomap([_, ne, sh, _]) => array(elem(ne), shape_of(eg.kind(*sh))),
        L::Filter([_, a]) => array(elem(a), Some(vec![SymDim::Dynamic])),
        L::Filtermap([_, _, f]) => array(ret_elem(f), Some(vec![SymDim::Dynamic])),
        L::Gather([a, idx]) => array(elem(a), shape_of(eg.kind(*idx))),
        L::Backpermute([sh, _, a]) => array(elem(a), shape_of(eg.kind(*sh))),
        L::Permute([_, dest, _, _]) | L::Permutemap([_, dest, _, _, _]) => k(dest),
        L::Transpose([a]) => match k(a) {
            Kind::Array { elem, mut shape } => {
                shape.reverse();
                Kind::Array { elem, shape }
            }
            _ => Kind::Unknown,
        },
        L::Reverse([a]) => k(a),
        L::Reshape([sh, a]) => array(elem(a), shape_of(eg.kind(*sh))),
        L::Slice([a, _, len]) => array(elem(a), Some(vec![eg.dim(*len)])),
        L::Concat([a, _]) => array(elem(a), Some(vec![SymDim::Dynamic])),
        L::Scanexomap([_, ne, sh, _]) => array(elem(ne), shape_of(eg.kind(*sh))),
        L::LaneGen([f]) => ret_elem(f).map_or(Kind::Unknown, |elem| Kind::Lane { elem, reduces: false }),
        L::LaneRed([_, ne, _]) => elem(ne).map_or(Kind::Unknown, |elem| Kind::Lane { elem, reduces: true }),
        L::Multi(c) => match c.split_first() {
            Some((sh, lanes)) => multi_kind(shape_of(eg.kind(*sh)), lanes.iter().map(k)),
            None => Kind::Unknown,
        },
        L::SegCheck([off, _, _]) => k(off),
        L::GReduce([_, ne, sh, _, _]) | L::GScan([_, ne, sh, _, _]) => {
            group_kind(k(ne), shape_of(eg.kind(*sh)), matches!(node, L::GReduce(_)))
        }
        L::Proj([i, x]) => {
            let at = match eg.constant(*i) {
                Some(Literal::I64(v)) => usize::try_from(v).ok(),
                _ => None,
            };
            match (k(x), at) {
                (Kind::Multi(ks), Some(a)) => ks.get(a).cloned().unwrap_or(Kind::Unknown),
                (Kind::Tuple(ts), Some(a)) => ts.get(a).map_or(Kind::Unknown, |t| Kind::Scalar(*t)),
                _ => Kind::Unknown,
            }
        }
        L::Outputs(_) => Kind::Outputs,
    }
}

/// A `multi`'s kind: each lane's result over `shape` (a reducing lane's without its
/// innermost dimension).
fn multi_kind(shape: Option<Vec<SymDim>>, lanes: impl Iterator<Item = Kind>) -> Kind {
    Kind::Multi(
        lanes
            .map(|l| match l {
                Kind::Lane { elem, reduces: false } => array(Some(elem), shape.clone()),
                Kind::Lane { elem, reduces: true } => reduced(Some(elem), shape.clone()),
                _ => Kind::Unknown,
            })
            .collect(),
    )
}

/// The results of a reduction (`reduces`) or scan over a group whose neutral element is of
/// kind `ne`, over `shape`: one array (a scalar for a reduction of rank 1) per component.
fn group_kind(ne: Kind, shape: Option<Vec<SymDim>>, reduces: bool) -> Kind {
    match ne {
        Kind::Tuple(ts) => Kind::Multi(
            ts.into_iter()
                .map(
                    |t| if reduces { reduced(Some(t), shape.clone()) } else { array(Some(t), shape.clone()) },
                )
                .collect(),
        ),
        _ => Kind::Unknown,
    }
}

/// Removes the innermost dimension: a scalar for rank 1.
fn reduced(elem: Option<ElemType>, shape: Option<Vec<SymDim>>) -> Kind {
    match (elem, shape) {
        (Some(e), Some(s)) if s.len() == 1 => Kind::Scalar(e),
        (Some(e), Some(mut s)) if s.len() > 1 => {
            s.pop();
            Kind::Array { elem: e, shape: s }
        }
        _ => Kind::Unknown,
    }
}

/// The constant value of `node`, when its needed children are constant and evaluating it
/// cannot fail.
fn fold(eg: &impl Known, node: &ArrayLang) -> Option<Literal> {
    use ArrayLang as L;
    let c = |id: &Id| eg.constant(*id).map(Literal::to_scalar);
    let span = Span::default();
    let r = match node {
        L::Lit(l) => return Some(*l),
        L::And([a, b]) => match c(a)? {
            eqfuse_ir::Scalar::Bool(false) => eqfuse_ir::Scalar::Bool(false),
            _ => c(b)?,
        },
        L::Or([a, b]) => match c(a)? {
            eqfuse_ir::Scalar::Bool(true) => eqfuse_ir::Scalar::Bool(true),
            _ => c(b)?,
        },
        L::If([cond, t, e]) => match c(cond)? {
            eqfuse_ir::Scalar::Bool(true) => c(t)?,
            _ => c(e)?,
        },
        L::Neg([a]) => scalar::unary(UnOp::Neg, c(a)?, span).ok()?,
        L::Not([a]) => scalar::unary(UnOp::Not, c(a)?, span).ok()?,
        L::ToI32([a]) => scalar::convert(c(a)?, ElemType::I32),
        L::ToI64([a]) => scalar::convert(c(a)?, ElemType::I64),
        L::ToF32([a]) => scalar::convert(c(a)?, ElemType::F32),
        L::ToF64([a]) => scalar::convert(c(a)?, ElemType::F64),
        n => {
            if let Some((op, [a, b])) = n.bin_op() {
                scalar::binary(op, c(&a)?, c(&b)?, span).ok()?
            } else if let Some(name) = n.scalar_builtin() {
                let f = ScalarFn::from_name(name)?;
                let args: Option<Vec<_>> = n.children().iter().map(c).collect();
                f.apply(&args?, span).ok()?
            } else {
                return None;
            }
        }
    };
    let lit = Literal::from_scalar(r);
    (!lit.is_nan()).then_some(lit)
}

/// The free parameters of `node` from its children's.
fn free_of(eg: &EGraph<ArrayLang, Facts>, node: &ArrayLang) -> ParamSet {
    match node {
        ArrayLang::Param(p) => ParamSet::single(p.index),
        ArrayLang::Lam([n, body]) => match data(eg, *n).kind {
            Kind::Params(k) => data(eg, *body).free.under_binder(k),
            _ => data(eg, *body).free.clone(),
        },
        n => {
            let mut s = ParamSet::empty();
            for c in n.children() {
                s.union_with(&data(eg, *c).free);
            }
            s
        }
    }
}

impl egg::Analysis<ArrayLang> for Facts {
    type Data = ClassFacts;

    fn make(egraph: &mut EGraph<ArrayLang, Facts>, enode: &ArrayLang, _id: Id) -> ClassFacts {
        let eg: &EGraph<ArrayLang, Facts> = egraph;
        let size = enode.children().iter().fold(1u64, |acc, c| acc.saturating_add(data(eg, *c).size));
        let constant = fold(eg, enode);
        // a constant depends on no parameter (its `Lit` node is added by `modify`)
        let free = if constant.is_some() { ParamSet::empty() } else { free_of(eg, enode) };
        ClassFacts { kind: kind_of(eg, enode), constant, free, best: enode.clone(), size }
    }

    fn merge(&mut self, a: &mut ClassFacts, b: ClassFacts) -> DidMerge {
        let mut a_changed = merge_kind(&mut a.kind, &b.kind);
        if a.constant.is_none() && b.constant.is_some() {
            a.constant = b.constant;
            a_changed = true;
        }
        if a.constant.is_some() {
            // a constant depends on no parameter, whatever else its class holds (`$1 * 0`)
            if !a.free.is_empty() {
                a.free = ParamSet::empty();
                a_changed = true;
            }
        } else {
            a_changed |= a.free.union_with(&b.free);
        }
        if smaller(b.size, a.size) {
            a.size = b.size;
            a.best = b.best.clone();
            a_changed = true;
        }
        let b_changed = *a != b;
        DidMerge(a_changed, b_changed)
    }

    fn modify(egraph: &mut EGraph<ArrayLang, Facts>, id: Id) {
        if let Some(lit) = egraph[id].data.constant {
            let already = egraph[id].nodes.iter().any(|n| matches!(n, ArrayLang::Lit(l) if *l == lit));
            if !already {
                let lit_id = egraph.add(ArrayLang::Lit(lit));
                egraph.union(id, lit_id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{smaller, EXACT_SIZE};

    #[test]
    fn small_terms_compare_exactly_large_ones_by_a_sixteenth() {
        // never a term that is not smaller
        assert!(!smaller(5, 5) && !smaller(6, 5) && !smaller(u64::MAX, 3));
        // up to the bound, any smaller term
        assert!(smaller(EXACT_SIZE - 1, EXACT_SIZE) && smaller(1, 2));
        // above, a smaller term by at least 1/16 of the recorded one
        let old = 16 * EXACT_SIZE;
        assert!(!smaller(old - 1, old));
        assert!(!smaller(old - old / 16 + 1, old));
        assert!(smaller(old - old / 16, old));
        assert!(smaller(1, u64::MAX));
    }
}
