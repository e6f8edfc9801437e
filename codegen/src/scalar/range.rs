//! Range analysis of an element function's `i64` registers: which reads are in bounds
//! wherever the space fits the arrays, and which remainders need no check or no `%`.
//!
//! Every register gets an interval whose ends are [`Bound`]s: a constant, or a small
//! multiple of the space's extent along a parameter plus a constant (`h - 1`, `2*w - 2`).
//! The facts come from the parameters (`p` in `[0, extent_p - 1]`, narrowed to the
//! interior of an edge split by its margins), constants, loads of the space's extents,
//! `+`, `-`, negation and products by constants, `min`, `max` and `clamp`, `x % n` for a
//! proven `x >= 0` and `n >= 1`, and the guards of `if`s: inside the `then` (`else`) block of
//! `if i > 0` the comparison holds (fails), and so do the comparisons a lazy `&&` (`||`)
//! chain of them holds as the lowering writes it, nested `if`s whose other arm is the
//! constant `false` (`true`).
//!
//! A proof records the *level* it needs: the number of enclosing `if` arms whose guards it
//! relies on (0: none). The emitter computes an `if`'s arms unconditionally when they
//! cannot fail; a proof that needs the guard of such an `if` (or of one inside it) does not
//! hold where the arm runs regardless, so the emitter keeps such a read masked (it cannot
//! fault, and its value is discarded where the guard fails).
//!
//! Values are those of unbounded integers: an `i64` sum wraps only beyond `2^63`, which
//! takes an extent beyond `2^62`, and no array that large exists for a read to be checked
//! against (a space's extent is checked against an array's dimension before the unchecked
//! code runs).

use eqfuse_ir::ast::{BinOp, UnOp};
use eqfuse_ir::interp::scalar::ScalarFn;
use eqfuse_ir::plan::{Arg, Block, Func, Inst, Reg, ValueId};
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::Scalar;
use std::collections::HashMap;

/// The largest multiple of an extent a bound may hold.
const MAX_COEFF: i64 = 4;
/// The largest constant (in magnitude) a bound may hold.
const MAX_CONST: i64 = 1 << 40;
/// The most lower (upper) bounds an interval keeps.
const MAX_BOUNDS: usize = 4;
/// The deepest chain of definitions followed from one register.
const MAX_DEPTH: usize = 48;
/// The deepest chain of boolean definitions followed for a guard's facts.
const MAX_GUARD_DEPTH: usize = 12;

/// `k * extent_p + c` (`k == 0`: the constant `c`, and `p` is 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Bound {
    k: i64,
    p: usize,
    c: i64,
}

impl Bound {
    /// The constant `c`, when it is small enough.
    fn konst(c: i64) -> Option<Bound> {
        (c.unsigned_abs() <= MAX_CONST as u64).then_some(Bound { k: 0, p: 0, c })
    }

    /// `k * extent_p + c`, normalised, when small enough.
    fn new(k: i64, p: usize, c: i64) -> Option<Bound> {
        if k == 0 {
            return Bound::konst(c);
        }
        (k.unsigned_abs() <= MAX_COEFF as u64 && c.unsigned_abs() <= MAX_CONST as u64).then_some(Bound {
            k,
            p,
            c,
        })
    }

    /// `self + o`, when it is a bound (not two different extents).
    fn add(self, o: Bound) -> Option<Bound> {
        let p = match (self.k, o.k) {
            (0, _) => o.p,
            (_, 0) => self.p,
            _ if self.p == o.p => self.p,
            _ => return None,
        };
        Bound::new(self.k.checked_add(o.k)?, p, self.c.checked_add(o.c)?)
    }

    /// `m * self`.
    fn scale(self, m: i64) -> Option<Bound> {
        Bound::new(self.k.checked_mul(m)?, self.p, self.c.checked_mul(m)?)
    }

    /// `self + c`.
    fn plus(self, c: i64) -> Option<Bound> {
        self.add(Bound::konst(c)?)
    }
}

/// What the analysis knows of the space: which parameters share an extent, the constant
/// extents, and the least each extent can be when an element runs.
#[derive(Clone, Debug)]
struct Space {
    /// Per parameter, the first parameter with the same extent.
    canon: Vec<usize>,
    /// Per parameter, its extent when a constant.
    konst: Vec<Option<i64>>,
    /// Per parameter (canonical), the least its extent is where an element runs.
    min_ext: Vec<i64>,
    /// Per parameter, its `(head, tail)` margins (the interior of an edge split).
    margins: Vec<(i64, i64)>,
}

impl Space {
    fn new(space: &[Arg], margins: &[(usize, usize)]) -> Space {
        let n = space.len();
        let canon: Vec<usize> = (0..n)
            .map(|p| (0..p).find(|&q| space[q] == space[p] && matches!(space[p], Arg::Value(_))).unwrap_or(p))
            .collect();
        let konst = space.iter().map(|a| if let Arg::Const(c) = a { Some(*c) } else { None }).collect();
        let margins: Vec<(i64, i64)> = (0..n)
            .map(|p| {
                let (h, t) = margins.get(p).copied().unwrap_or((0, 0));
                (i64::try_from(h).unwrap_or(MAX_CONST), i64::try_from(t).unwrap_or(MAX_CONST))
            })
            .collect();
        let mut min_ext = vec![1i64; n];
        for p in 0..n {
            // the interior runs only where it holds a point: head + tail + 1 at least
            let (h, t) = margins[p];
            let m = h.saturating_add(t).saturating_add(1).min(MAX_CONST);
            min_ext[canon[p]] = min_ext[canon[p]].max(m);
        }
        Space { canon, konst, min_ext, margins }
    }

    /// The extent along parameter `p` plus `c`.
    fn ext(&self, p: usize, c: i64) -> Option<Bound> {
        match self.konst.get(p)? {
            Some(n) => Bound::konst(n.checked_add(c)?),
            None => Bound::new(1, self.canon[p], c),
        }
    }

    /// Whether `a <= b` wherever an element runs.
    fn le(&self, a: Bound, b: Bound) -> bool {
        let (k, p) = match (a.k, b.k) {
            (0, _) => (b.k, b.p),
            (_, 0) => (-a.k, a.p),
            _ if a.p == b.p => (b.k - a.k, a.p),
            _ => return false,
        };
        let dc = i128::from(b.c) - i128::from(a.c);
        match k {
            0 => dc >= 0,
            k if k < 0 => false,
            k => i128::from(k) * i128::from(self.min_ext.get(p).copied().unwrap_or(1)) + dc >= 0,
        }
    }
}

/// What is known of a register: every lower bound in `lo` and every upper bound in `hi`
/// holds (empty: none known).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Interval {
    lo: Vec<Bound>,
    hi: Vec<Bound>,
}

impl Interval {
    /// The lower bounds (`lower`), else the upper ones.
    fn lo_or_hi(&self, lower: bool) -> Vec<Bound> {
        if lower {
            self.lo.clone()
        } else {
            self.hi.clone()
        }
    }

    fn exact(b: Bound) -> Interval {
        Interval { lo: vec![b], hi: vec![b] }
    }
}

/// A guard's fact: inside the arms at depth `level`, register `reg` lies in `iv`.
#[derive(Clone, Debug)]
struct Fact {
    reg: Reg,
    iv: Interval,
    level: usize,
}

/// A read proven in bounds: per index, the parameter whose extent bounds it, and the level
/// of the guards the proof needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ReadProof {
    /// Per axis of the array, the parameter (axis of the space) bounding its index.
    pub axes: Vec<usize>,
    /// How many enclosing `if` arms' guards the proof relies on.
    pub level: usize,
}

/// What is proven of an integer `x % n` or `x / n`, each as the level it needs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct DivProof {
    /// `n != 0`.
    pub nonzero: Option<usize>,
    /// `0 <= x < n`: `x % n == x`.
    pub identity: Option<usize>,
    /// `0 <= x < 2n`: `x % n == (x >= n ? x - n : x)`.
    pub wrap: Option<usize>,
    /// `n <= x < 2n`: `x % n == x - n`.
    pub shift: Option<usize>,
}

/// The analysis of one element function over its space.
pub(crate) struct Ranges {
    /// Per read's destination register, its proof.
    reads: HashMap<Reg, ReadProof>,
    /// Per `clamp`, `min` or `max`'s destination register: the argument it is proven equal
    /// to (`clamp x lo hi` with `lo <= x <= hi`: `x`), and the level the proof needs.
    picks: HashMap<Reg, (Reg, usize)>,
    /// Per integer `/` or `%`'s destination register, what is proven.
    divs: HashMap<Reg, DivProof>,
}

impl Ranges {
    /// The analysis of `func`, an element function whose parameters are the indices of
    /// `space` (and are never written), run inside `margins` ([`crate::scalar::FnCtx::margins`]).
    pub(crate) fn new(func: &Func, space: &[Arg], margins: &[(usize, usize)]) -> Ranges {
        let mut w = Walk {
            space: Space::new(space, margins),
            extents: space.iter().map(|a| if let Arg::Value(v) = a { Some(*v) } else { None }).collect(),
            dims: space.len().min(func.params.len()),
            types: &func.reg_types,
            defs: unique_definitions(&func.body),
            facts: Vec::new(),
            memo: HashMap::new(),
            out: Ranges { reads: HashMap::new(), picks: HashMap::new(), divs: HashMap::new() },
        };
        w.walk(&func.body, 0);
        w.out
    }

    /// The proof that the read writing `dst` is in bounds, if any.
    pub(crate) fn read(&self, dst: Reg) -> Option<&ReadProof> {
        self.reads.get(&dst)
    }

    /// The argument the `clamp`, `min` or `max` writing `dst` is proven equal to, and the
    /// level the proof needs.
    pub(crate) fn pick(&self, dst: Reg) -> Option<(Reg, usize)> {
        self.picks.get(&dst).copied()
    }

    /// What is proven of the integer division or remainder writing `dst`.
    pub(crate) fn div(&self, dst: Reg) -> Option<&DivProof> {
        self.divs.get(&dst)
    }
}

/// The instruction writing each register that exactly one instruction writes (a loop's
/// state and results have none: they change).
fn unique_definitions(b: &Block) -> HashMap<Reg, &Inst> {
    let mut count: HashMap<Reg, usize> = HashMap::new();
    let mut defs = HashMap::new();
    for inst in b.all_insts() {
        let mut dsts = inst.dsts();
        if let Inst::Loop { vars, .. } = inst {
            dsts.extend(vars.iter().copied());
        }
        for d in dsts {
            *count.entry(d).or_default() += 1;
            if !matches!(inst, Inst::Loop { .. }) {
                defs.insert(d, inst);
            }
        }
    }
    defs.retain(|r, _| count.get(r) == Some(&1));
    defs
}

/// The walk over the function, holding the guards' facts in force.
struct Walk<'f> {
    space: Space,
    /// Per parameter, the value its extent is loaded from.
    extents: Vec<Option<ValueId>>,
    /// How many parameters are indices of the space.
    dims: usize,
    types: &'f [ElemType],
    defs: HashMap<Reg, &'f Inst>,
    facts: Vec<Fact>,
    /// Intervals under the facts in force, by register and level.
    memo: HashMap<(Reg, usize), Interval>,
    out: Ranges,
}

impl<'f> Walk<'f> {
    fn walk(&mut self, b: &'f Block, depth: usize) {
        for inst in &b.insts {
            match inst {
                Inst::Read { dst, index, .. } if self.defs.contains_key(dst) && !index.is_empty() => {
                    if let Some(p) = (0..=depth).find_map(|cap| self.prove_read(index, cap).map(|a| (a, cap)))
                    {
                        self.out.reads.insert(*dst, ReadProof { axes: p.0, level: p.1 });
                    }
                }
                Inst::Binary { dst, op: op @ (BinOp::Div | BinOp::Rem), a, b }
                    if self.defs.contains_key(dst) && self.is_i64(*a) =>
                {
                    let (a, b) = (*a, *b);
                    let nonzero = (0..=depth).find(|&c| self.nonzero(b, c));
                    let (identity, wrap, shift) = if *op == BinOp::Rem {
                        (
                            (0..=depth).find(|&c| self.rem_below(a, b, 1, c)),
                            (0..=depth).find(|&c| self.rem_below(a, b, 2, c)),
                            (0..=depth).find(|&c| self.rem_below(a, b, 2, c) && self.not_below(a, b, c)),
                        )
                    } else {
                        (None, None, None)
                    };
                    self.out.divs.insert(*dst, DivProof { nonzero, identity, wrap, shift });
                }
                Inst::Call { dst, f, args } if self.defs.contains_key(dst) && self.is_i64(*dst) => {
                    if let Some(p) = (0..=depth).find_map(|cap| self.pick(*f, args, cap).map(|r| (r, cap))) {
                        self.out.picks.insert(*dst, p);
                    }
                }
                Inst::If { cond, then_block, else_block, .. } => {
                    for (truth, arm) in [(true, then_block), (false, else_block)] {
                        let mut found = Vec::new();
                        self.implied(*cond, truth, depth, 0, &mut found);
                        let n = self.facts.len();
                        self.facts.extend(found.into_iter().map(|(reg, iv)| Fact {
                            reg,
                            iv,
                            level: depth + 1,
                        }));
                        self.memo.clear();
                        self.walk(arm, depth + 1);
                        self.facts.truncate(n);
                        self.memo.clear();
                    }
                }
                Inst::Loop { body, .. } => self.walk(body, depth),
                _ => {}
            }
        }
    }

    fn is_i64(&self, r: Reg) -> bool {
        self.types.get(r as usize) == Some(&ElemType::I64)
    }

    /// Per index, the parameter whose extent bounds it, using the guards up to level `cap`.
    fn prove_read(&mut self, index: &[Reg], cap: usize) -> Option<Vec<usize>> {
        let zero = Bound::konst(0)?;
        let mut axes = Vec::with_capacity(index.len());
        for &r in index {
            if !self.is_i64(r) {
                return None;
            }
            let iv = self.range(r, cap, 0);
            if !iv.lo.iter().any(|&l| self.space.le(zero, l)) {
                return None;
            }
            // a parameter its upper bound names (or one of constant extent), whose extent
            // bounds it
            let p = (0..self.dims).find(|&p| {
                let named = self.space.konst[p].is_some()
                    || iv.hi.iter().any(|h| h.k != 0 && h.p == self.space.canon[p]);
                named && self.space.ext(p, -1).is_some_and(|e| iv.hi.iter().any(|&h| self.space.le(h, e)))
            })?;
            axes.push(p);
        }
        Some(axes)
    }

    /// The argument `f(args)` (`clamp`, `min`, `max`) equals under the guards up to level
    /// `cap`: `x` for `clamp x lo hi` with `lo <= x <= hi`, the lesser for `min`, the greater
    /// for `max`.
    fn pick(&mut self, f: ScalarFn, args: &[Reg], cap: usize) -> Option<Reg> {
        let below = |w: &mut Self, a: Reg, b: Reg| {
            let (x, y) = (w.range(a, cap, 0), w.range(b, cap, 0));
            x.hi.iter().any(|&h| y.lo.iter().any(|&l| w.space.le(h, l)))
        };
        match (f, args) {
            (ScalarFn::Clamp, &[x, lo, hi]) => (below(self, lo, x) && below(self, x, hi)).then_some(x),
            (ScalarFn::Min, &[a, b]) if below(self, a, b) => Some(a),
            (ScalarFn::Min, &[a, b]) if below(self, b, a) => Some(b),
            (ScalarFn::Max, &[a, b]) if below(self, a, b) => Some(b),
            (ScalarFn::Max, &[a, b]) if below(self, b, a) => Some(a),
            _ => None,
        }
    }

    /// Whether `n != 0` under the guards up to level `cap`.
    fn nonzero(&mut self, n: Reg, cap: usize) -> bool {
        let iv = self.range(n, cap, 0);
        let (Some(one), Some(m1)) = (Bound::konst(1), Bound::konst(-1)) else { return false };
        iv.lo.iter().any(|&l| self.space.le(one, l)) || iv.hi.iter().any(|&h| self.space.le(h, m1))
    }

    /// Whether `0 <= x < times * n` (and `n >= 1`) under the guards up to level `cap`.
    fn rem_below(&mut self, x: Reg, n: Reg, times: i64, cap: usize) -> bool {
        let (ix, iv) = (self.range(x, cap, 0), self.range(n, cap, 0));
        let (Some(zero), Some(one)) = (Bound::konst(0), Bound::konst(1)) else { return false };
        let s = &self.space;
        ix.lo.iter().any(|&l| s.le(zero, l))
            && iv.lo.iter().any(|&ln| {
                s.le(one, ln)
                    && ln
                        .scale(times)
                        .and_then(|b| b.plus(-1))
                        .is_some_and(|top| ix.hi.iter().any(|&h| s.le(h, top)))
            })
    }

    /// Whether `x >= n` under the guards up to level `cap`.
    fn not_below(&mut self, x: Reg, n: Reg, cap: usize) -> bool {
        let (ix, iv) = (self.range(x, cap, 0), self.range(n, cap, 0));
        iv.hi.iter().any(|&h| ix.lo.iter().any(|&l| self.space.le(h, l)))
    }

    /// The interval of `r` under the guards up to level `cap`.
    fn range(&mut self, r: Reg, cap: usize, depth: usize) -> Interval {
        if let Some(iv) = self.memo.get(&(r, cap)) {
            return iv.clone();
        }
        let mut iv = if depth >= MAX_DEPTH || !self.is_i64(r) {
            Interval::default()
        } else {
            self.defined(r, cap, depth)
        };
        let facts: Vec<Interval> =
            self.facts.iter().filter(|f| f.reg == r && f.level <= cap).map(|f| f.iv.clone()).collect();
        for f in facts {
            iv = self.meet(iv, &f);
        }
        if depth < MAX_DEPTH {
            self.memo.insert((r, cap), iv.clone());
        }
        iv
    }

    /// The interval of `r` from its definition.
    fn defined(&mut self, r: Reg, cap: usize, depth: usize) -> Interval {
        if (r as usize) < self.dims {
            let p = r as usize;
            let (h, t) = self.space.margins[p];
            return Interval {
                lo: Bound::konst(h).into_iter().collect(),
                hi: self.space.ext(p, -1 - t).into_iter().collect(),
            };
        }
        let Some(&inst) = self.defs.get(&r) else { return Interval::default() };
        let sub = |w: &mut Self, x: Reg| w.range(x, cap, depth + 1);
        match inst {
            Inst::Const { value: Scalar::I64(c), .. } => {
                Bound::konst(*c).map(Interval::exact).unwrap_or_default()
            }
            Inst::Load { value, .. } => match self.extents.iter().position(|e| *e == Some(*value)) {
                Some(p) => self.space.ext(p, 0).map(Interval::exact).unwrap_or_default(),
                None => Interval::default(),
            },
            Inst::Binary { op: BinOp::Add, a, b, .. } => {
                let (x, y) = (sub(self, *a), sub(self, *b));
                self.prune(Interval { lo: sums(&x.lo, &y.lo), hi: sums(&x.hi, &y.hi) })
            }
            Inst::Binary { op: BinOp::Sub, a, b, .. } => {
                let (x, y) = (sub(self, *a), sub(self, *b));
                let y = negate(&y);
                self.prune(Interval { lo: sums(&x.lo, &y.lo), hi: sums(&x.hi, &y.hi) })
            }
            Inst::Binary { op: BinOp::Mul, a, b, .. } => {
                let (x, y) = (sub(self, *a), sub(self, *b));
                match (constant(&x), constant(&y)) {
                    (_, Some(m)) => times(&x, m),
                    (Some(m), _) => times(&y, m),
                    _ => Interval::default(),
                }
            }
            Inst::Binary { op: BinOp::Rem, a, b, .. } => {
                let (x, n) = (sub(self, *a), sub(self, *b));
                let (Some(zero), Some(one)) = (Bound::konst(0), Bound::konst(1)) else {
                    return Interval::default();
                };
                if !x.lo.iter().any(|&l| self.space.le(zero, l))
                    || !n.lo.iter().any(|&l| self.space.le(one, l))
                {
                    return Interval::default();
                }
                // 0 <= x % n <= x, and x % n <= n - 1
                let mut hi: Vec<Bound> = n.hi.iter().filter_map(|h| h.plus(-1)).collect();
                hi.extend(x.hi.iter().copied());
                self.prune(Interval { lo: vec![zero], hi })
            }
            Inst::Unary { op: UnOp::Neg, a, .. } => negate(&sub(self, *a)),
            Inst::Call { f: ScalarFn::Min, args, .. } if args.len() == 2 => {
                let (x, y) = (sub(self, args[0]), sub(self, args[1]));
                self.min(&x, &y)
            }
            Inst::Call { f: ScalarFn::Max, args, .. } if args.len() == 2 => {
                let (x, y) = (sub(self, args[0]), sub(self, args[1]));
                self.max(&x, &y)
            }
            Inst::Call { f: ScalarFn::Clamp, args, .. } if args.len() == 3 => {
                // as emitted: min(max(x, lo), hi)
                let (x, l, h) = (sub(self, args[0]), sub(self, args[1]), sub(self, args[2]));
                let m = self.max(&x, &l);
                self.min(&m, &h)
            }
            // a select (`if i == 0 then h - 1 else i - 1`): the arm a constant condition
            // picks (the interior of an edge split answers its edge tests), else what both
            // arms' intervals hold
            Inst::If { cond, then_ret, else_ret, .. } => match self.defs.get(cond) {
                Some(Inst::Const { value: Scalar::Bool(b), .. }) => {
                    sub(self, if *b { *then_ret } else { *else_ret })
                }
                _ => {
                    let (x, y) = (sub(self, *then_ret), sub(self, *else_ret));
                    self.join(&x, &y)
                }
            },
            _ => Interval::default(),
        }
    }

    /// What holds of both `x` and `y`: the lower bounds below a lower bound of each, the
    /// upper bounds above an upper bound of each.
    fn join(&self, x: &Interval, y: &Interval) -> Interval {
        let s = &self.space;
        let both = |v: &Bound, lower: bool| {
            let under = |w: &[Bound]| w.iter().any(|&a| if lower { s.le(*v, a) } else { s.le(a, *v) });
            under(&x.lo_or_hi(lower)) && under(&y.lo_or_hi(lower))
        };
        let lo = x.lo.iter().chain(&y.lo).filter(|b| both(b, true)).copied().collect();
        let hi = x.hi.iter().chain(&y.hi).filter(|b| both(b, false)).copied().collect();
        self.prune(Interval { lo, hi })
    }

    /// `min(x, y)`: below both's upper bounds, above a lower bound below both's.
    fn min(&self, x: &Interval, y: &Interval) -> Interval {
        let mut hi = x.hi.clone();
        hi.extend(y.hi.iter().copied());
        self.prune(Interval { lo: self.common(&x.lo, &y.lo, true), hi })
    }

    /// `max(x, y)`.
    fn max(&self, x: &Interval, y: &Interval) -> Interval {
        let mut lo = x.lo.clone();
        lo.extend(y.lo.iter().copied());
        self.prune(Interval { lo, hi: self.common(&x.hi, &y.hi, false) })
    }

    /// Bounds that hold for either of two values: for lower bounds (`lower`), those of `a`
    /// below one of `b`'s, those of `b` below one of `a`'s, and for a pair neither of which
    /// is below the other the lesser of their constant floors (`1` and `h - 1`: `0`).
    fn common(&self, a: &[Bound], b: &[Bound], lower: bool) -> Vec<Bound> {
        let le = |x: Bound, y: Bound| if lower { self.space.le(x, y) } else { self.space.le(y, x) };
        let mut out: Vec<Bound> = a.iter().copied().filter(|&x| b.iter().any(|&y| le(x, y))).collect();
        out.extend(b.iter().copied().filter(|&y| a.iter().any(|&x| le(y, x))));
        for &x in a {
            for &y in b {
                if let (Some(cx), Some(cy)) = (self.floor(x, lower), self.floor(y, lower)) {
                    out.extend(Bound::konst(if lower { cx.min(cy) } else { cx.max(cy) }));
                }
            }
        }
        if lower {
            self.prune(Interval { lo: out, hi: Vec::new() }).lo
        } else {
            self.prune(Interval { lo: Vec::new(), hi: out }).hi
        }
    }

    /// The constant a bound is at least (`lower`) or at most (else) wherever an element
    /// runs: `k * extent + c` with `k >= 0` is at least `k * least extent + c`.
    fn floor(&self, b: Bound, lower: bool) -> Option<i64> {
        if b.k == 0 {
            return Some(b.c);
        }
        if (b.k > 0) != lower {
            return None;
        }
        let m = self.space.min_ext.get(b.p).copied()?;
        b.k.checked_mul(m)?.checked_add(b.c)
    }

    /// Both intervals' bounds together.
    fn meet(&self, mut a: Interval, b: &Interval) -> Interval {
        a.lo.extend(b.lo.iter().copied());
        a.hi.extend(b.hi.iter().copied());
        self.prune(a)
    }

    /// Without repeats and bounds another makes redundant, at most [`MAX_BOUNDS`] a side.
    fn prune(&self, iv: Interval) -> Interval {
        let keep = |v: Vec<Bound>, lower: bool| -> Vec<Bound> {
            let mut out: Vec<Bound> = Vec::new();
            for b in v {
                // a lower bound below another is weaker; an upper bound above another too
                let weaker =
                    |x: Bound, y: Bound| if lower { self.space.le(x, y) } else { self.space.le(y, x) };
                if out.iter().any(|&o| weaker(b, o)) {
                    continue;
                }
                out.retain(|&o| !weaker(o, b));
                out.push(b);
            }
            out.truncate(MAX_BOUNDS);
            out
        };
        Interval { lo: keep(iv.lo, true), hi: keep(iv.hi, false) }
    }

    /// The facts `cond == truth` implies, from the definitions of `cond` (comparisons,
    /// negations, lazy `&&` and `||` as nested `if`s, eager ones), under every guard in force.
    fn implied(&mut self, cond: Reg, truth: bool, depth: usize, nest: usize, out: &mut Vec<(Reg, Interval)>) {
        if nest >= MAX_GUARD_DEPTH {
            return;
        }
        let Some(&inst) = self.defs.get(&cond) else { return };
        let is = |w: &Self, r: Reg, v: bool| matches!(w.defs.get(&r), Some(Inst::Const { value: Scalar::Bool(b), .. }) if *b == v);
        match inst {
            Inst::Unary { op: UnOp::Not, a, .. } if self.types.get(*a as usize) == Some(&ElemType::Bool) => {
                self.implied(*a, !truth, depth, nest + 1, out)
            }
            // `c && t` is `if c { t } else { false }`; `c || e` is `if c { true } else { e }`
            Inst::If { cond: c, then_ret, else_ret, .. } => {
                let (c, t, e) = (*c, *then_ret, *else_ret);
                let arms = match truth {
                    true if is(self, e, false) => [(c, true), (t, true)],
                    true if is(self, t, false) => [(c, false), (e, true)],
                    false if is(self, t, true) => [(c, false), (e, false)],
                    false if is(self, e, true) => [(c, true), (t, false)],
                    _ => return,
                };
                for (r, v) in arms {
                    self.implied(r, v, depth, nest + 1, out);
                }
            }
            Inst::Binary { op: BinOp::And, a, b, .. } if truth => {
                self.implied(*a, true, depth, nest + 1, out);
                self.implied(*b, true, depth, nest + 1, out);
            }
            Inst::Binary { op: BinOp::Or, a, b, .. } if !truth => {
                self.implied(*a, false, depth, nest + 1, out);
                self.implied(*b, false, depth, nest + 1, out);
            }
            Inst::Binary { op, a, b, .. } if self.is_i64(*a) && self.is_i64(*b) => {
                let Some(op) = (if truth { Some(*op) } else { negated(*op) }) else { return };
                self.compared(op, *a, *b, depth, out);
            }
            _ => {}
        }
    }

    /// The facts `a op b` gives `a` and `b`.
    fn compared(&mut self, op: BinOp, a: Reg, b: Reg, depth: usize, out: &mut Vec<(Reg, Interval)>) {
        let (x, y) = (self.range(a, depth, 0), self.range(b, depth, 0));
        let shift = |v: &[Bound], c: i64| -> Vec<Bound> { v.iter().filter_map(|b| b.plus(c)).collect() };
        let (fa, fb) = match op {
            BinOp::Lt => {
                (Interval { lo: vec![], hi: shift(&y.hi, -1) }, Interval { lo: shift(&x.lo, 1), hi: vec![] })
            }
            BinOp::Le => {
                (Interval { lo: vec![], hi: y.hi.clone() }, Interval { lo: x.lo.clone(), hi: vec![] })
            }
            BinOp::Gt => {
                (Interval { lo: shift(&y.lo, 1), hi: vec![] }, Interval { lo: vec![], hi: shift(&x.hi, -1) })
            }
            BinOp::Ge => {
                (Interval { lo: y.lo.clone(), hi: vec![] }, Interval { lo: vec![], hi: x.hi.clone() })
            }
            BinOp::Eq => (y, x),
            // `a != b` for a `b` known exactly: an end of `a` at `b` moves by one
            BinOp::Ne => (self.not_at(&x, &y), self.not_at(&y, &x)),
            _ => return,
        };
        // only of registers that keep their value (a parameter, or one instruction writes
        // it): a register written again inside the arm would not keep the fact
        for (r, iv) in [(a, fa), (b, fb)] {
            if (r as usize) < self.dims || self.defs.contains_key(&r) {
                out.push((r, iv));
            }
        }
    }
}

impl Walk<'_> {
    /// What `x != y` adds to `x` when `y` is known exactly: a lower (upper) bound of `x`
    /// equal to `y` is one more (less).
    fn not_at(&self, x: &Interval, y: &Interval) -> Interval {
        let Some(&b) = y.lo.iter().find(|l| y.hi.contains(l)) else { return Interval::default() };
        let lo = x.lo.iter().filter(|&&l| l == b).filter_map(|l| l.plus(1)).collect();
        let hi = x.hi.iter().filter(|&&h| h == b).filter_map(|h| h.plus(-1)).collect();
        Interval { lo, hi }
    }
}

/// The comparison that holds when `op` fails.
fn negated(op: BinOp) -> Option<BinOp> {
    Some(match op {
        BinOp::Lt => BinOp::Ge,
        BinOp::Le => BinOp::Gt,
        BinOp::Gt => BinOp::Le,
        BinOp::Ge => BinOp::Lt,
        BinOp::Ne => BinOp::Eq,
        BinOp::Eq => BinOp::Ne,
        _ => return None,
    })
}

/// Every sum of a bound of `a` and one of `b`.
fn sums(a: &[Bound], b: &[Bound]) -> Vec<Bound> {
    let mut out: Vec<Bound> = a.iter().flat_map(|x| b.iter().filter_map(move |y| x.add(*y))).collect();
    out.dedup();
    out.truncate(MAX_BOUNDS * MAX_BOUNDS);
    out
}

/// `-x`.
fn negate(x: &Interval) -> Interval {
    let neg = |v: &[Bound]| v.iter().filter_map(|b| b.scale(-1)).collect();
    Interval { lo: neg(&x.hi), hi: neg(&x.lo) }
}

/// `m * x` for a constant `m`.
fn times(x: &Interval, m: i64) -> Interval {
    let sc = |v: &[Bound]| v.iter().filter_map(|b| b.scale(m)).collect();
    match m {
        0 => Interval::exact(Bound { k: 0, p: 0, c: 0 }),
        m if m > 0 => Interval { lo: sc(&x.lo), hi: sc(&x.hi) },
        _ => Interval { lo: sc(&x.hi), hi: sc(&x.lo) },
    }
}

/// The constant an interval holds exactly, if it does.
fn constant(x: &Interval) -> Option<i64> {
    x.lo.iter().find(|l| l.k == 0 && x.hi.contains(l)).map(|b| b.c)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
