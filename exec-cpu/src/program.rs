//! The blocked VM's code: a compiled function ([`Program`]) of typed instructions over
//! registers ([`Op`]), with its nested blocks, lazy `if`s and loops, and what the compiler
//! needs to know of the plan's values ([`Env`]). [`crate::compile`] builds it, [`crate::vm`]
//! runs it, and [`crate::group`] flattens its pure loops for [`crate::lanes`].

use crate::col::ColRef;
use crate::num::MulAdd;
use eqfuse_ir::ast::{BinOp, UnOp};
use eqfuse_ir::error::Result;
use eqfuse_ir::interp::scalar::ScalarFn;
use eqfuse_ir::plan::ValueId;
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::Scalar;

/// An array a program reads: resolved before the kernel runs.
#[derive(Clone, Debug)]
pub(crate) struct ArrInfo<'s> {
    /// Its name, for messages.
    pub name: String,
    /// Its shape.
    pub shape: Vec<usize>,
    /// Row-major strides, in elements.
    pub strides: Vec<usize>,
    /// The elements.
    pub data: ColRef<'s>,
}

impl ArrInfo<'_> {
    /// Its element type.
    pub(crate) fn ty(&self) -> ElemType {
        self.data.ty()
    }
}

/// What the compiler needs to know of the plan's values.
pub(crate) trait Env<'s> {
    /// A materialised array (for `Read` and `Dim`).
    fn array(&self, v: ValueId) -> Result<ArrInfo<'s>>;
    /// A 0-d value (for `Load`).
    fn load(&self, v: ValueId) -> Result<Scalar>;
}

/// A compiled function.
#[derive(Debug)]
pub(crate) struct Program<'s> {
    /// Every register's type.
    pub types: Vec<ElemType>,
    /// Every register's uniformity.
    pub uniform: Vec<bool>,
    /// Parameter count (registers `0..nparams`).
    pub nparams: usize,
    /// Whether each parameter is read.
    pub param_used: Vec<bool>,
    /// The code.
    pub body: Block,
    /// The result registers.
    pub ret: Vec<usize>,
    /// How many nested frames the code may need beyond the first.
    pub depth: usize,
    /// How many registers may hold a column (parameters and instructions' results; the
    /// plan's register numbers may leave many unused), for the block length.
    pub live: usize,
    /// The arrays read, by slot.
    pub arrays: Vec<ArrInfo<'s>>,
    /// Registers that are never written: contiguous reads of the function's own block that
    /// only its own instructions use as operands read the array's slice in place (no copy).
    pub slice: Vec<Option<usize>>,
    /// The kernel's space, when the parameters are its indices.
    pub space: Option<Vec<usize>>,
    /// Source positions of the registers of instructions that can fail ([`Func::spans`]:
    /// registers keep the plan's numbers).
    pub spans: Vec<(usize, eqfuse_ir::error::Span)>,
}

impl Program<'_> {
    /// `err` pointing at the source position of the instruction writing `dst`, when it has
    /// no position yet and the function knows one.
    pub(crate) fn locate(&self, err: eqfuse_ir::error::Error, dst: Option<usize>) -> eqfuse_ir::error::Error {
        let span = dst.and_then(|d| self.spans.iter().find(|(r, _)| *r == d).map(|(_, s)| *s));
        err.or_at(span)
    }
}

/// Compiled straight-line code.
#[derive(Debug, Default)]
pub(crate) struct Block {
    pub ops: Vec<Op>,
}

impl Block {
    pub fn new(ops: Vec<Op>) -> Block {
        Block { ops }
    }
}

/// One compiled instruction (register numbers as `usize`).
#[derive(Debug)]
pub(crate) enum Op {
    Const {
        dst: usize,
        value: Scalar,
    },
    Unary {
        dst: usize,
        op: UnOp,
        a: usize,
    },
    Binary {
        dst: usize,
        op: BinOp,
        a: usize,
        b: usize,
    },
    Call {
        dst: usize,
        f: ScalarFn,
        args: Vec<usize>,
    },
    /// `a * b` whose product only an addition or subtraction uses, fused with it (the two
    /// operations, each rounded as its own: one pass instead of two).
    MulAdd {
        dst: usize,
        a: usize,
        b: usize,
        c: usize,
        form: MulAdd,
    },
    /// `contiguous`: the index is the function's own parameters, in order, into an array of
    /// the space's shape (a slice per block). `params`: every index is a parameter of the
    /// function's own block (the read is a run of slices, strided reads or repeats).
    Read {
        dst: usize,
        arr: usize,
        index: Vec<usize>,
        contiguous: bool,
        params: bool,
    },
    Dim {
        dst: usize,
        arr: usize,
        axis: usize,
    },
    If(Box<IfOp>),
    Loop(Box<LoopOp>),
}

impl Op {
    /// The one register the instruction itself writes (a loop writes several: `None`).
    pub(crate) fn dst(&self) -> Option<usize> {
        match self {
            Op::Const { dst, .. }
            | Op::Unary { dst, .. }
            | Op::Binary { dst, .. }
            | Op::Call { dst, .. }
            | Op::MulAdd { dst, .. }
            | Op::Read { dst, .. }
            | Op::Dim { dst, .. } => Some(*dst),
            Op::If(i) => Some(i.dst),
            Op::Loop(_) => None,
        }
    }
}

/// A lazy `if`.
#[derive(Debug)]
pub(crate) struct IfOp {
    pub dst: usize,
    pub cond: usize,
    pub then_: Branch,
    pub else_: Branch,
    /// Both branches are small and cannot fail: run both on every element, then select.
    pub speculate: bool,
}

/// One branch of an `if`.
#[derive(Debug)]
pub(crate) struct Branch {
    pub block: Block,
    pub ret: usize,
    /// Registers the branch reads that are written outside it.
    pub free: Vec<usize>,
}

/// An `iterate` loop.
#[derive(Debug)]
pub(crate) struct LoopOp {
    pub dsts: Vec<usize>,
    pub count: usize,
    pub inits: Vec<usize>,
    pub vars: Vec<usize>,
    pub body: Block,
    pub nexts: Vec<usize>,
    /// Registers the body reads that are written outside it (the state `vars` included).
    pub free: Vec<usize>,
    /// Per state register: its next value is a varying register of the body's own, named
    /// once, so `var = next` may swap the two columns instead of copying.
    pub swap: Vec<bool>,
    /// The body flattened to run on small groups of elements, when it cannot fail
    /// ([`crate::lanes`]).
    pub group: Option<Box<crate::lanes::GroupLoop>>,
}
