//! Acyclic extraction: cycles in the e-graph never reach the term, open nodes with dead
//! parameters lose to closed ones, and a cost that falls from child to parent (a `proj`
//! of a shared node) is still taken by local improvement.

use egg::{EGraph, RecExpr};
use eqfuse_egraph::extract::{choose, term_of};
use eqfuse_egraph::{ArrayLang, Facts, TreeCost};

fn add(eg: &mut EGraph<ArrayLang, Facts>, text: &str) -> egg::Id {
    let e: RecExpr<ArrayLang> = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
    let id = eg.add_expr(&e);
    eg.rebuild();
    eg.find(id)
}

fn extract(eg: &EGraph<ArrayLang, Facts>, root: egg::Id) -> String {
    let tc = TreeCost { egraph: eg };
    let choice = choose(eg, |_, n, c| tc.of(n, c));
    term_of(eg, &choice, root).expect("an acyclic term").0.to_string()
}

#[test]
fn a_class_equal_to_an_operation_on_itself_extracts_the_leaf() {
    let mut eg = EGraph::new(Facts::default());
    let x = add(&mut eg, "(+ 1:i64 2:i64)");
    // x == abs (abs x): every choice but the leaf closes a cycle
    let y = add(&mut eg, "(abs (abs (+ 1:i64 2:i64)))");
    eg.union(x, y);
    eg.rebuild();
    assert_eq!(extract(&eg, x), "3:i64");
}

#[test]
fn a_dead_parameter_is_never_extracted() {
    let src = "input xs : f32[n]\noutput o = xs";
    let checked = eqfuse_ir::check::check(&eqfuse_ir::parse::parse(src).expect("parse")).expect("check");
    let mut eg = EGraph::new(Facts::new(checked.inputs.iter().map(|(k, t)| (k.as_str(), t))));
    // an open node merged with a closed one (as `g a b` with `g` ignoring `b` is): the
    // open node is cheaper in the tree cost, but its parameter means nothing elsewhere
    let open = add(&mut eg, "(* $0:f32 (index @xs 0:i64))");
    let closed = add(&mut eg, "(sqrt (sqrt (sqrt (index @xs 1:i64))))");
    eg.union(open, closed);
    eg.rebuild();
    // the class used under a binder of another type
    let lam = add(&mut eg, "(lam <i64> (* $0:f32 (index @xs 0:i64)))");
    let t = extract(&eg, lam);
    assert_eq!(t, "(lam <i64> (sqrt (sqrt (sqrt (index @xs 1:i64)))))");
}
