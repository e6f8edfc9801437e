//! The range analysis on hand-built element functions: intervals from `clamp`, `%`,
//! guards and nested guards, margins, and what it must not prove.

use super::*;
use eqfuse_ir::plan::Block;

/// Value ids: the extents `h` (0) and `w` (1), the array `a` (2).
const H: ValueId = 0;
const W: ValueId = 1;
const A: ValueId = 2;

/// An element function under construction over `[h, w]` (registers 0 and 1 are `i`, `j`).
struct B {
    blocks: Vec<Vec<Inst>>,
    types: Vec<ElemType>,
}

impl B {
    fn new() -> B {
        B { blocks: vec![Vec::new()], types: vec![ElemType::I64, ElemType::I64] }
    }
    fn push(&mut self, t: ElemType, f: impl FnOnce(Reg) -> Inst) -> Reg {
        let r = self.types.len() as Reg;
        self.types.push(t);
        let inst = f(r);
        self.blocks.last_mut().unwrap().push(inst);
        r
    }
    fn k(&mut self, c: i64) -> Reg {
        self.push(ElemType::I64, |dst| Inst::Const { dst, value: Scalar::I64(c) })
    }
    fn flag(&mut self, v: bool) -> Reg {
        self.push(ElemType::Bool, |dst| Inst::Const { dst, value: Scalar::Bool(v) })
    }
    fn load(&mut self, v: ValueId) -> Reg {
        self.push(ElemType::I64, |dst| Inst::Load { dst, value: v })
    }
    fn op(&mut self, op: BinOp, a: Reg, b: Reg) -> Reg {
        let t = if matches!(op, BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne) {
            ElemType::Bool
        } else {
            ElemType::I64
        };
        self.push(t, |dst| Inst::Binary { dst, op, a, b })
    }
    fn call(&mut self, f: ScalarFn, args: &[Reg]) -> Reg {
        self.push(ElemType::I64, |dst| Inst::Call { dst, f, args: args.to_vec() })
    }
    fn read(&mut self, index: &[Reg]) -> Reg {
        self.push(ElemType::F32, |dst| Inst::Read { dst, array: A, index: index.to_vec() })
    }
    /// `if cond { then } else { other }`, each arm built by its closure (its result).
    fn when(
        &mut self,
        cond: Reg,
        then: impl FnOnce(&mut B) -> Reg,
        other: impl FnOnce(&mut B) -> Reg,
    ) -> Reg {
        self.blocks.push(Vec::new());
        let then_ret = then(self);
        let then_block = Block { insts: self.blocks.pop().unwrap() };
        self.blocks.push(Vec::new());
        let else_ret = other(self);
        let else_block = Block { insts: self.blocks.pop().unwrap() };
        let t = self.types[then_ret as usize];
        self.push(t, |dst| Inst::If { dst, cond, then_block, then_ret, else_block, else_ret })
    }
    /// The analysis over `[h, w]` inside `margins`.
    fn ranges(&self, margins: &[(usize, usize)]) -> Ranges {
        let func = Func {
            params: vec![ElemType::I64; 2],
            reg_types: self.types.clone(),
            body: Block { insts: self.blocks[0].clone() },
            ret: vec![],
            spans: vec![],
        };
        Ranges::new(&func, &[Arg::Value(H), Arg::Value(W)], margins)
    }
}

/// The axes of the read writing `r`, if proven, with the level the proof needs.
fn proof(r: &Ranges, dst: Reg) -> Option<(Vec<usize>, usize)> {
    r.read(dst).map(|p| (p.axes.clone(), p.level))
}

#[test]
fn clamps_into_an_extent_are_proven() {
    let mut b = B::new();
    let (zero, one, h, w) = (b.k(0), b.k(1), b.load(H), b.load(W));
    let (h1, w1) = (b.op(BinOp::Sub, h, one), b.op(BinOp::Sub, w, one));
    let up = b.op(BinOp::Sub, 0, one);
    let n = b.call(ScalarFn::Clamp, &[up, zero, h1]);
    let right = b.op(BinOp::Add, 1, one);
    let e = b.call(ScalarFn::Clamp, &[right, zero, w1]);
    let ne = b.read(&[n, e]);
    // clamp (i + 1) 0 h reaches h: not in bounds
    let down = b.op(BinOp::Add, 0, one);
    let past = b.call(ScalarFn::Clamp, &[down, zero, h]);
    let bad = b.read(&[past, 1]);
    // min (max ...) written out, and the axes swapped: j's clamp bounds the first index
    let lo = b.call(ScalarFn::Max, &[right, zero]);
    let m = b.call(ScalarFn::Min, &[lo, w1]);
    let swapped = b.read(&[m, 0]);
    let r = b.ranges(&[]);
    assert_eq!(proof(&r, ne), Some((vec![0, 1], 0)));
    assert_eq!(proof(&r, bad), None);
    assert_eq!(proof(&r, swapped), Some((vec![1, 0], 0)));
    // a clamp is not the identity without margins; inside them it is
    assert_eq!(r.pick(n), None);
    assert_eq!(r.pick(past), Some((down, 0)));
    let r = b.ranges(&[(1, 1), (1, 1)]);
    assert_eq!(r.pick(n), Some((up, 0)));
    assert_eq!(r.pick(e), Some((right, 0)));
    // clamp (i + 1) 0 h is i + 1 everywhere (and h is past the end)
    assert_eq!(r.pick(past), Some((down, 0)));
}

#[test]
fn wrap_arounds_are_selects_and_other_remainders_stay() {
    let mut b = B::new();
    let (one, h) = (b.k(1), b.load(H));
    let ih = b.op(BinOp::Add, 0, h);
    let up = b.op(BinOp::Sub, ih, one);
    let upw = b.op(BinOp::Rem, up, h);
    let down = b.op(BinOp::Add, 0, one);
    let dnw = b.op(BinOp::Rem, down, h);
    let same = b.op(BinOp::Rem, 0, h);
    let ok = b.read(&[upw, dnw]);
    let ok2 = b.read(&[dnw, 1]);
    // (i + 1) % (h + 1) may be h; i % (h + 1) is i
    let h_plus = b.op(BinOp::Add, h, one);
    let wide = b.op(BinOp::Rem, down, h_plus);
    let narrow = b.op(BinOp::Rem, 0, h_plus);
    let fine = b.read(&[narrow, 1]);
    let bad = b.read(&[wide, 1]);
    // (i - 1) % h may be -1
    let left = b.op(BinOp::Sub, 0, one);
    let neg = b.op(BinOp::Rem, left, h);
    let bad2 = b.read(&[neg, 1]);
    let r = b.ranges(&[]);
    assert_eq!(proof(&r, ok2), Some((vec![0, 1], 0)));
    assert_eq!(proof(&r, ok).map(|p| p.1), Some(0));
    assert_eq!(proof(&r, bad), None);
    assert_eq!(proof(&r, bad2), None);
    assert_eq!(proof(&r, fine), Some((vec![0, 1], 0)));
    let d = |dst: Reg| r.div(dst).cloned().unwrap();
    assert_eq!(d(upw), DivProof { nonzero: Some(0), identity: None, wrap: Some(0), shift: None });
    assert_eq!(d(dnw), DivProof { nonzero: Some(0), identity: None, wrap: Some(0), shift: None });
    assert_eq!(d(same).identity, Some(0));
    assert_eq!(d(wide), DivProof { nonzero: Some(0), identity: Some(0), wrap: Some(0), shift: None });
    assert_eq!(d(neg), DivProof { nonzero: Some(0), ..DivProof::default() });
    // inside the margins (1, 1): (i + h - 1) % h is i - 1, (i + 1) % h is i + 1
    let r = b.ranges(&[(1, 1), (0, 0)]);
    assert_eq!(r.div(upw).unwrap().shift, Some(0));
    assert_eq!(r.div(dnw).unwrap().identity, Some(0));
    // a divisor not known to be nonzero keeps its check
    let mut b = B::new();
    let x = b.k(7);
    let q = b.op(BinOp::Div, x, 0);
    assert_eq!(b.ranges(&[]).div(q).unwrap().nonzero, None);
}

#[test]
fn guards_narrow_their_arms() {
    let mut b = B::new();
    let (zero, one, h) = (b.k(0), b.k(1), b.load(H));
    let pos = b.op(BinOp::Gt, 0, zero);
    let h1 = b.op(BinOp::Sub, h, one);
    // if i > 0 && i < h - 1 then a[i - 1, j] + a[i + 1, j] (the && as a nested if)
    let mut inner = (0, 0);
    let both = b.when(pos, |b| b.op(BinOp::Lt, 0, h1), |b| b.flag(false));
    b.when(
        both,
        |b| {
            let up = b.op(BinOp::Sub, 0, one);
            let down = b.op(BinOp::Add, 0, one);
            inner = (b.read(&[up, 1]), b.read(&[down, 1]));
            inner.0
        },
        |b| b.read(&[0, 1]),
    );
    // if i == 0 then a[i, j] else a[i - 1, j]; if i > 0 || j > 0 then a[i - 1, j]
    let at0 = b.op(BinOp::Eq, 0, zero);
    let mut other = 0;
    b.when(
        at0,
        |b| b.read(&[0, 1]),
        |b| {
            let up = b.op(BinOp::Sub, 0, one);
            other = b.read(&[up, 1]);
            other
        },
    );
    let jpos = b.op(BinOp::Gt, 1, zero);
    let either = b.when(pos, |b| b.flag(true), |_| jpos);
    let mut unproven = 0;
    b.when(
        either,
        |b| {
            let up = b.op(BinOp::Sub, 0, one);
            unproven = b.read(&[up, 1]);
            unproven
        },
        |b| b.read(&[0, 1]),
    );
    let r = b.ranges(&[]);
    assert_eq!(proof(&r, inner.0), Some((vec![0, 1], 1)));
    assert_eq!(proof(&r, inner.1), Some((vec![0, 1], 1)));
    assert_eq!(proof(&r, other), Some((vec![0, 1], 1)));
    assert_eq!(proof(&r, unproven), None);
}

#[test]
fn nested_guards_need_their_levels() {
    let mut b = B::new();
    let (zero, one, w) = (b.k(0), b.k(1), b.load(W));
    let w1 = b.op(BinOp::Sub, w, one);
    let pos = b.op(BinOp::Gt, 0, zero);
    let (mut outer, mut inner, mut plain) = (0, 0, 0);
    b.when(
        pos,
        |b| {
            let up = b.op(BinOp::Sub, 0, one);
            outer = b.read(&[up, 1]);
            let last = b.op(BinOp::Ge, 1, w1);
            b.when(
                last,
                |b| b.read(&[up, 1]),
                |b| {
                    let right = b.op(BinOp::Add, 1, one);
                    inner = b.read(&[up, right]);
                    plain = b.read(&[0, 1]);
                    inner
                },
            )
        },
        |b| b.read(&[0, 1]),
    );
    let r = b.ranges(&[]);
    assert_eq!(proof(&r, outer), Some((vec![0, 1], 1)));
    assert_eq!(proof(&r, inner), Some((vec![0, 1], 2)));
    assert_eq!(proof(&r, plain), Some((vec![0, 1], 0)));
}

#[test]
fn margins_bound_moved_indices() {
    let mut b = B::new();
    let (one, two) = (b.k(1), b.k(2));
    let down = b.op(BinOp::Add, 0, one);
    let far = b.op(BinOp::Add, 0, two);
    let up = b.op(BinOp::Sub, 1, one);
    let near = b.read(&[down, up]);
    let beyond = b.read(&[far, 1]);
    let r = b.ranges(&[(0, 1), (1, 0)]);
    assert_eq!(proof(&r, near), Some((vec![0, 1], 0)));
    assert_eq!(proof(&r, beyond), None);
    assert_eq!(proof(&b.ranges(&[]), near), None);
}

#[test]
fn bounds_compare_where_elements_run() {
    let s = Space::new(&[Arg::Value(H), Arg::Const(5), Arg::Value(H)], &[(2, 1)]);
    let b = |k, p, c| Bound::new(k, p, c).unwrap();
    // h >= 4 where the interior (margins 2 and 1) runs
    assert!(s.le(b(0, 0, 4), b(1, 0, 0)));
    assert!(!s.le(b(0, 0, 5), b(1, 0, 0)));
    // the third extent is the first's; the second is the constant 5
    assert_eq!(s.ext(2, -1), Some(b(1, 0, -1)));
    assert_eq!(s.ext(1, -1), Some(b(0, 0, 4)));
    assert!(s.le(b(1, 0, -2), b(2, 0, -5)), "h - 2 <= 2h - 5 for h >= 4");
    assert!(!s.le(b(2, 0, 0), b(1, 0, 0)));
    assert!(Bound::new(1, 0, MAX_CONST + 1).is_none());
    assert!(Bound::new(MAX_COEFF + 1, 0, 0).is_none());
}
