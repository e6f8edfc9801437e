//! The e-class analysis: kinds and shapes, constant folding, free parameters, merging.

use egg::{Analysis, DidMerge, EGraph, RecExpr};
use eqfuse_egraph::{encode, ArrayLang, ClassFacts, Facts, Kind, Literal, ParamSet, SymDim};
use eqfuse_ir::check::check;
use eqfuse_ir::parse::parse;
use eqfuse_ir::types::ElemType;

fn graph() -> EGraph<ArrayLang, Facts> {
    let src = "input xs : f32[n]\ninput m : i64[n, 3]\noutput o = xs";
    let checked = check(&parse(src).expect("parse")).expect("check");
    Facts::new(checked.inputs.iter().map(|(k, t)| (k.as_str(), t))).into_graph()
}

trait IntoGraph {
    fn into_graph(self) -> EGraph<ArrayLang, Facts>;
}

impl IntoGraph for Facts {
    fn into_graph(self) -> EGraph<ArrayLang, Facts> {
        EGraph::new(self)
    }
}

fn add(eg: &mut EGraph<ArrayLang, Facts>, text: &str) -> egg::Id {
    let e: RecExpr<ArrayLang> = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
    let id = eg.add_expr(&e);
    eg.rebuild();
    eg.find(id)
}

fn facts(eg: &EGraph<ArrayLang, Facts>, id: egg::Id) -> &ClassFacts {
    &eg[id].data
}

fn constant(text: &str) -> Option<Literal> {
    let mut eg = graph();
    let id = add(&mut eg, text);
    facts(&eg, id).constant
}

#[test]
fn text_round_trips() {
    for t in [
        "(lam <f32,f32> (+ $1:f32 $0:f32))",
        "(reduce (lam <f32,f32> (+ $1:f32 $0:f32)) 0.0:f32 (map (lam <f32,f32> (* $1:f32 $0:f32)) @xs @ys))",
        "(generate (shape #n 3:i64) (lam <i64,i64> (index @m $1:i64 $0:i64)))",
        "(outputs (+ -3:i32 inf:f32) -0.0:f64 true:bool nan_7fc00000:f32)",
        "(redomap (lam <f32,f32> (max $1:f32 $0:f32)) -inf:f32 (shape #n) (lam <i64> (index @xs $0:i64)))",
    ] {
        let e: RecExpr<ArrayLang> = t.parse().unwrap_or_else(|e| panic!("{t}: {e}"));
        assert_eq!(e.to_string(), t);
    }
    let l: Literal = "0.1:f32".parse().expect("literal");
    assert_eq!(l, Literal::F32(0.1f32.to_bits()));
    let nan: Literal = "nan_7fc00001:f32".parse().expect("nan");
    assert_eq!(nan, Literal::F32(0x7fc0_0001));
    assert_ne!(Literal::F64((-0.0f64).to_bits()), Literal::F64(0.0f64.to_bits()));
}

#[test]
fn kinds_and_shapes() {
    let mut eg = graph();
    let xs = add(&mut eg, "@xs");
    assert_eq!(
        facts(&eg, xs).kind,
        Kind::Array { elem: ElemType::F32, shape: vec![SymDim::Size("n".into())] }
    );
    let m = add(&mut eg, "(map (lam <f32> (< $0:f32 1.0:f32)) @xs)");
    assert_eq!(
        facts(&eg, m).kind,
        Kind::Array { elem: ElemType::Bool, shape: vec![SymDim::Size("n".into())] }
    );
    let lam = add(&mut eg, "(lam <f32,f32> (+ $1:f32 $0:f32))");
    assert_eq!(facts(&eg, lam).kind, Kind::Func { arity: 2, ret: Box::new(Kind::Scalar(ElemType::F32)) });
    let r = add(&mut eg, "(reduce (lam <f32,f32> (+ $1:f32 $0:f32)) 0.0:f32 @xs)");
    assert_eq!(facts(&eg, r).kind, Kind::Scalar(ElemType::F32));
    let g = add(&mut eg, "(generate (shape #n 3:i64) (lam <i64,i64> (index @m $1:i64 $0:i64)))");
    let gshape = vec![SymDim::Size("n".into()), SymDim::Const(3)];
    assert_eq!(facts(&eg, g).kind, Kind::Array { elem: ElemType::I64, shape: gshape });
    let t = add(&mut eg, "(transpose @m)");
    let tshape = vec![SymDim::Const(3), SymDim::Size("n".into())];
    assert_eq!(facts(&eg, t).kind, Kind::Array { elem: ElemType::I64, shape: tshape });
    let rows = add(&mut eg, "(reduce (lam <i64,i64> (+ $1:i64 $0:i64)) 0:i64 @m)");
    assert_eq!(
        facts(&eg, rows).kind,
        Kind::Array { elem: ElemType::I64, shape: vec![SymDim::Size("n".into())] }
    );
    let f = add(&mut eg, "(filter (lam <f32> (> $0:f32 0.0:f32)) @xs)");
    assert_eq!(facts(&eg, f).kind, Kind::Array { elem: ElemType::F32, shape: vec![SymDim::Dynamic] });
    let tup = add(&mut eg, "(lam <i64,i64> (tuple $0:i64 $1:i64))");
    assert_eq!(
        facts(&eg, tup).kind,
        Kind::Func { arity: 2, ret: Box::new(Kind::Tuple(vec![ElemType::I64, ElemType::I64])) }
    );
    let red = add(
        &mut eg,
        "(redomap (lam <f32,f32> (+ $1:f32 $0:f32)) 0.0:f32 (shape #n) (lam <i64> (index @xs $0:i64)))",
    );
    assert_eq!(facts(&eg, red).kind, Kind::Scalar(ElemType::F32));
}

#[test]
fn encoded_program_kinds() {
    let src = "input xs : f32[n]\ninput ys : f32[n]\nlet p = map (\\x y -> x * y) xs ys\noutput dot = reduce (+) 0 p";
    let enc = encode(&check(&parse(src).expect("parse")).expect("check")).expect("encode");
    let p = enc.egraph.find(enc.lets[0].0);
    assert_eq!(enc.lets[0].1, "p");
    assert_eq!(
        enc.egraph[p].data.kind,
        Kind::Array { elem: ElemType::F32, shape: vec![SymDim::Size("n".into())] }
    );
    let expected: RecExpr<ArrayLang> =
        "(reduce (lam <f32,f32> (+ $1:f32 $0:f32)) 0.0:f32 (map (lam <f32,f32> (* $1:f32 $0:f32)) @xs @ys))"
            .parse()
            .expect("term");
    let id = enc.egraph.lookup_expr(&expected).expect("the dot product is in the e-graph");
    assert_eq!(enc.egraph[id].data.kind, Kind::Scalar(ElemType::F32));
}

#[test]
fn constant_folding() {
    assert_eq!(constant("(+ 1:i64 2:i64)"), Some(Literal::I64(3)));
    assert_eq!(constant("(+ 9223372036854775807:i64 1:i64)"), Some(Literal::I64(i64::MIN)));
    assert_eq!(constant("(* 2147483647:i32 2:i32)"), Some(Literal::I32(-2)));
    assert_eq!(constant("(/ -9223372036854775808:i64 -1:i64)"), Some(Literal::I64(i64::MIN)));
    assert_eq!(constant("(/ 5:i64 0:i64)"), None);
    assert_eq!(constant("(% 5:i32 0:i32)"), None);
    assert_eq!(constant("(+ (/ 5:i64 0:i64) 1:i64)"), None);
    // f32 arithmetic in f32
    assert_eq!(constant("(+ 0.1:f32 0.2:f32)"), Some(Literal::F32((0.1f32 + 0.2f32).to_bits())));
    // 2^24 + 1 + 1 is 2^24 in f32 (each sum rounds), 2^24 + 2 in f64
    assert_eq!(
        constant("(+ (+ 16777216.0:f32 1.0:f32) 1.0:f32)"),
        Some(Literal::F32(16777216.0f32.to_bits()))
    );
    assert_eq!(constant("(sqrt 2.0:f32)"), Some(Literal::F32(2.0f32.sqrt().to_bits())));
    assert_eq!(constant("(/ 1.0:f64 0.0:f64)"), Some(Literal::F64(f64::INFINITY.to_bits())));
    // NaN has no literal syntax: not folded
    assert_eq!(constant("(/ 0.0:f64 0.0:f64)"), None);
    assert_eq!(constant("(to_i32 1e10:f64)"), Some(Literal::I32(i32::MAX)));
    assert_eq!(constant("(min -0.0:f32 0.0:f32)"), Some(Literal::F32((-0.0f32).to_bits())));
    assert_eq!(constant("(< 1:i64 2:i64)"), Some(Literal::Bool(true)));
    // laziness: the untaken branch and a short-circuited operand may be anything
    assert_eq!(constant("(if true:bool 1:i64 (/ 1:i64 0:i64))"), Some(Literal::I64(1)));
    assert_eq!(constant("(&& false:bool (== (/ 1:i64 0:i64) 0:i64))"), Some(Literal::Bool(false)));
    assert_eq!(constant("(|| false:bool (== (/ 1:i64 0:i64) 0:i64))"), None);
    assert_eq!(constant("(+ $0:i64 1:i64)"), None);
    // the literal joins the class
    let mut eg = graph();
    let id = add(&mut eg, "(+ 1:i64 2:i64)");
    let three = add(&mut eg, "3:i64");
    assert_eq!(eg.find(id), eg.find(three));
}

#[test]
fn free_parameters() {
    let mut eg = graph();
    let body = add(&mut eg, "(+ $0:f32 $2:f32)");
    assert_eq!(facts(&eg, body).free.iter().collect::<Vec<_>>(), vec![0, 2]);
    let lam = add(&mut eg, "(lam <f32> (+ $0:f32 $2:f32))");
    assert_eq!(facts(&eg, lam).free.iter().collect::<Vec<_>>(), vec![1]);
    let closed = add(&mut eg, "(lam <f32,f32> (* $1:f32 $0:f32))");
    assert!(facts(&eg, closed).free.is_empty());
    let nested = add(&mut eg, "(lam <f32> (iterate 3:i64 (lam <f32> (* $0:f32 $1:f32)) $0:f32))");
    assert!(facts(&eg, nested).free.is_empty());
    let inner = add(&mut eg, "(lam <f32> (* $0:f32 $1:f32))");
    assert_eq!(facts(&eg, inner).free.iter().collect::<Vec<_>>(), vec![0]);
    // a union keeps the union of the free sets
    let a = add(&mut eg, "(* $0:i64 0:i64)");
    let b = add(&mut eg, "(* $3:i64 0:i64)");
    eg.union(a, b);
    eg.rebuild();
    assert_eq!(facts(&eg, eg.find(a)).free.iter().collect::<Vec<_>>(), vec![0, 3]);
    // ... but a constant has none, whatever its class holds
    let zero = add(&mut eg, "0:i64");
    eg.union(a, zero);
    eg.rebuild();
    assert!(facts(&eg, eg.find(a)).free.is_empty());
}

fn flags(d: DidMerge) -> (bool, bool) {
    (d.0, d.1)
}

#[test]
fn merge_contract() {
    let mut f = Facts::default();
    let base = ClassFacts {
        kind: Kind::Scalar(ElemType::I64),
        constant: None,
        free: ParamSet::single(0),
        best: eqfuse_egraph::ArrayLang::Lit(eqfuse_egraph::Literal::I64(0)),
        size: 1,
    };
    let mut a = base.clone();
    assert_eq!(flags(f.merge(&mut a, base.clone())), (false, false));
    // a constant's class depends on no parameter (`$0 * 0` merged with `0`)
    let mut b = base.clone();
    b.constant = Some(Literal::I64(4));
    b.free = ParamSet::empty();
    let mut a = base.clone();
    let r = f.merge(&mut a, b.clone());
    assert_eq!(flags(r), (true, false));
    assert_eq!(a.constant, Some(Literal::I64(4)));
    assert!(a.free.is_empty());
    let mut c = base.clone();
    c.free = ParamSet::single(1);
    let mut a = base.clone();
    let r = f.merge(&mut a, c.clone());
    assert_eq!(flags(r), (true, true));
    assert_eq!(a.free.iter().collect::<Vec<_>>(), vec![0, 1]);
    let mut a = b.clone();
    let r = f.merge(&mut a, c);
    assert_eq!(flags(r), (false, true));
    assert!(a.free.is_empty());
    let mut u = ClassFacts {
        kind: Kind::Unknown,
        constant: None,
        free: ParamSet::empty(),
        best: eqfuse_egraph::ArrayLang::Lit(eqfuse_egraph::Literal::I64(0)),
        size: 1,
    };
    assert!(f.merge(&mut u, base.clone()).0);
    assert_eq!(u.kind, base.kind);
}

#[test]
fn local_lets_under_lambdas() {
    // `y` is used inside a nested lambda: it must be shifted there
    let src = "input xs : f32[n]\noutput o = map (\\x -> let y = x * 2.0 in iterate 3 (\\z -> z + y) y) xs";
    let enc = encode(&check(&parse(src).expect("parse")).expect("check")).expect("encode");
    let expected: RecExpr<ArrayLang> =
        "(map (lam <f32> (iterate 3:i64 (lam <f32> (+ $0:f32 (* $1:f32 2.0:f32))) (* $0:f32 2.0:f32))) @xs)"
            .parse()
            .expect("term");
    assert!(enc.egraph.lookup_expr(&expected).is_some());
}
