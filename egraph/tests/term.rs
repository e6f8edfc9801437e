//! A term's names and positions through a rewrite (`Term::carry`, `Term::renumbered`) and
//! from the encoding (`Term::encoded`): each new node takes the first name and position (in
//! the old term's node order) of its class; a class a substitution built takes the position
//! of the class it was built from, never its name; nodes a rewrite drops lose theirs.
#![allow(clippy::unwrap_used)]

use egg::{EGraph, Id, RecExpr};
use eqfuse_egraph::extract::{choose, term_of};
use eqfuse_egraph::{ArrayLang, Facts, IdMap, NodeMap, Term, TreeCost};
use eqfuse_ir::error::Span;

fn span(line: u32) -> Span {
    Span { start: line as usize * 10, end: line as usize * 10 + 5, line, col: 1 }
}

fn expr(text: &str) -> RecExpr<ArrayLang> {
    text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// `term`'s nodes added to `eg`, one class each: the class of each node.
fn load(eg: &mut EGraph<ArrayLang, Facts>, term: &RecExpr<ArrayLang>) -> Vec<Id> {
    let mut ids: Vec<Id> = Vec::new();
    for n in term.as_ref() {
        let m = egg::Language::map_children(n.clone(), |c| ids[usize::from(c)]);
        ids.push(eg.add(m));
    }
    ids
}

/// `(+ (abs $0) (abs $1))` (nodes: 0 `$0`, 1 `abs $0`, 2 `$1`, 3 `abs $1`, 4 `+`) with its
/// two `abs` nodes named and placed.
fn old_term() -> Term {
    let mut t = Term::bare(expr("(+ (abs $0:i64) (abs $1:i64))"));
    t.names = [(1, "b".to_string()), (3, "a".to_string())].into_iter().collect();
    t.spans = [(1, span(1)), (3, span(3))].into_iter().collect();
    t
}

#[test]
fn a_class_gives_the_new_node_the_first_name_and_position_in_node_order() {
    let old = old_term();
    let mut eg = EGraph::new(Facts::default());
    let ids = load(&mut eg, &old.expr);
    // the two `abs` nodes found equal: one class holding both names
    eg.union(ids[1], ids[3]);
    eg.rebuild();
    let new = expr("(abs $0:i64)");
    let index: IdMap<usize> = [(eg.find(ids[0]), 0), (eg.find(ids[1]), 1)].into_iter().collect();
    let t = old.carry(&eg, &ids, new.clone(), &index);
    assert_eq!(t.expr, new);
    // node 1 (`b`) comes before node 3 (`a`): the first in node order wins, not the least
    assert_eq!(t.names.iter().collect::<Vec<_>>(), vec![(1, &"b".to_string())]);
    assert_eq!(t.spans.iter().collect::<Vec<_>>(), vec![(1, &span(1))]);
}

#[test]
fn a_class_built_by_substitution_takes_the_position_but_not_the_name_it_was_built_from() {
    let old = old_term();
    let mut eg = EGraph::new(Facts::default());
    let ids = load(&mut eg, &old.expr);
    // `abs $2` made from `abs $0` (as substituting into a lambda body would), and then
    // `abs $3` from it: the chain follows, in the order they were made
    let made = eg.add_expr(&expr("(abs $2:i64)"));
    let again = eg.add_expr(&expr("(abs $3:i64)"));
    eg.analysis.derived.push((made, ids[1]));
    eg.analysis.derived.push((again, made));
    eg.rebuild();
    let new = expr("(+ (abs $2:i64) (abs $3:i64))");
    let index: IdMap<usize> = [(eg.find(made), 1), (eg.find(again), 3)].into_iter().collect();
    let t = old.carry(&eg, &ids, new, &index);
    assert!(t.names.is_empty(), "{:?}", t.names);
    assert_eq!(t.spans.iter().collect::<Vec<_>>(), vec![(1, &span(1)), (3, &span(1))]);
}

#[test]
fn renumbering_moves_names_and_positions_and_drops_those_of_nodes_left_out() {
    let old = old_term();
    // node 3 and node 2 left out, node 1 became node 0
    let made = |i: usize| match i {
        1 => Some(0),
        4 => Some(1),
        _ => None,
    };
    let t = old.renumbered(expr("(abs (abs $0:i64))"), made);
    assert_eq!(t.names.iter().collect::<Vec<_>>(), vec![(0, &"b".to_string())]);
    assert_eq!(t.spans.iter().collect::<Vec<_>>(), vec![(0, &span(1))]);
    assert_eq!(t.lets(&[Id::from(7usize), Id::from(9usize)]), vec![(Id::from(7usize), "b".to_string())]);
}

#[test]
fn the_encoded_term_names_its_lets_and_places_its_expressions() {
    let src = "input xs : f32[n]\nlet a = map (\\x -> x * 2.0) xs\noutput y = map (\\x -> x + 1.0) a\n";
    let checked = eqfuse_ir::check::check(&eqfuse_ir::parse::parse(src).unwrap()).unwrap();
    let enc = eqfuse_egraph::encode(&checked).unwrap();
    let tc = TreeCost { egraph: &enc.egraph };
    let choice = choose(&enc.egraph, |_, n, c| tc.of(n, c));
    let (expr, index) = term_of(&enc.egraph, &choice, enc.root).unwrap();
    let t = Term::encoded(&enc, expr, &index);
    let named: Vec<(usize, &String)> = t.names.iter().collect();
    assert_eq!(named.len(), 1, "{named:?}");
    let (a, _) = named[0];
    assert!(matches!(t.expr.as_ref()[a], ArrayLang::Map(_)), "{}", t.expr);
    assert_eq!(t.spans.get(&a).map(|s| s.line), Some(2));
    // the output's `map` reads `a` and sits on line 3
    let y = t.expr.as_ref().iter().rposition(|n| matches!(n, ArrayLang::Map(_))).unwrap();
    assert_ne!(y, a);
    assert_eq!(t.spans.get(&y).map(|s| s.line), Some(3));
    assert!(NodeMap::<u8>::default().is_empty());
}
