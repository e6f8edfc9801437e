//! Lowering, one operation family at a time: a term in, the printed plan out (insta
//! snapshots in `tests/snapshots/`).
//!
//! Surface operations come from a small program: parsed, checked, encoded, and its tree
//! extraction lowered (the term `--no-opt` lowers). The fused forms only the rules make
//! (`redomap`, `scanomap`, `filtermap`, `permutemap`, `multi`) are written as terms over a
//! program that declares their inputs. Each snapshot holds the term and its plan, so a
//! change to how a family lowers shows as a diff of the plan it prints.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use egg::{Id, Language, RecExpr};
use eqfuse_egraph::extract::{choose, term_of};
use eqfuse_egraph::{encode, ArrayLang, Encoded, Term, TreeCost};
use eqfuse_ir::check::check;
use eqfuse_ir::parse::parse;
use eqfuse_ir::plan::Plan;
use eqfuse_lower::lower::{lower, Signature};
use std::collections::HashMap;

/// `src` encoded.
fn encoded(src: &str) -> Encoded {
    let checked = check(&parse(src).unwrap()).unwrap();
    encode(&checked).unwrap()
}

/// Lowers `term` (over the inputs and outputs of `enc`).
fn plan(enc: &Encoded, term: &Term) -> Plan {
    let sig = Signature { inputs: &enc.inputs, sizes: &enc.sizes, outputs: &enc.outputs };
    lower(term, &enc.egraph.analysis, &sig).unwrap()
}

/// The snapshot of a term and its plan.
fn shown(term: &RecExpr<ArrayLang>, plan: &Plan) -> String {
    format!("term:\n{term}\n\nplan:\n{plan}")
}

/// Program `src` unoptimised: its tree extraction (the source term, `let`s named) and the
/// plan that term lowers to.
fn lowered(src: &str) -> String {
    let enc = encoded(src);
    let tc = TreeCost { egraph: &enc.egraph };
    let choice = choose(&enc.egraph, |_, n, costs| tc.of(n, costs));
    let (term, index) = term_of(&enc.egraph, &choice, enc.root).unwrap();
    let term = Term::encoded(&enc, term, &index);
    shown(&term.expr, &plan(&enc, &term))
}

/// Term `term` (text) over the declarations of program `src`, lowered. Equal subterms are
/// one node, as in an extracted term (two `proj`s of one `multi` share it).
fn lowered_term(src: &str, term: &str) -> String {
    let enc = encoded(src);
    let term = Term::bare(shared(&term.parse().unwrap()));
    shown(&term.expr, &plan(&enc, &term))
}

/// `term` with equal subterms made one node.
fn shared(term: &RecExpr<ArrayLang>) -> RecExpr<ArrayLang> {
    let mut out = RecExpr::default();
    let mut seen: HashMap<ArrayLang, Id> = HashMap::new();
    let mut new_id: Vec<Id> = Vec::new();
    for n in term.as_ref() {
        let n = n.clone().map_children(|c| new_id[usize::from(c)]);
        let id = *seen.entry(n.clone()).or_insert_with(|| out.add(n));
        new_id.push(id);
    }
    out
}

#[test]
fn map_reads_each_operand_once_and_checks_shapes_it_does_not_know_agree() {
    let p = lowered(
        "input xs : f32[n]\ninput ys : f32[m]\n\
         output z = map (\\a b c -> a * b + a) xs ys xs\n",
    );
    assert!(p.contains("assert") && p.contains("generate"), "{p}");
    insta::assert_snapshot!(p);
}

#[test]
fn generate_iota_and_fill_are_generate_kernels() {
    let p = lowered(
        "input k : i64\n\
         output g = generate [3, k] (\\i j -> i * k + j)\n\
         output r = iota k\n\
         output f = fill [k] 2.5\n",
    );
    insta::assert_snapshot!(p);
}

#[test]
fn reduce_is_a_reduce_lane_and_its_scalar_a_host_value() {
    let p = lowered(
        "input xs : f32[n]\n\
         output s = reduce (+) 0.0 xs\n\
         output mean = reduce (+) 0.0 xs / f32 (length xs)\n",
    );
    assert!(p.contains("reduce"), "{p}");
    insta::assert_snapshot!(p);
}

#[test]
fn scan_and_exclusive_scan_are_scan_lanes() {
    let p = lowered(
        "input xs : i64[n]\n\
         output inc = scan (+) 0 xs\n\
         output exc = scan_exclusive max 0 xs\n",
    );
    assert!(p.contains("scan"), "{p}");
    insta::assert_snapshot!(p);
}

#[test]
fn redomap_scanomap_and_scanexomap_combine_an_index_function() {
    let src = "input xs : f32[n]\noutput a = reduce (+) 0.0 xs\noutput b = xs\noutput c = xs\n";
    let sq = "(lam <i64> (* (index @xs $0:i64) (index @xs $0:i64)))";
    let add = "(lam <f32,f32> (+ $1:f32 $0:f32))";
    let term = format!(
        "(outputs (redomap {add} 0.0:f32 (shape #n) {sq}) (scanomap {add} 0.0:f32 (shape #n) {sq}) \
         (scanexomap {add} 0.0:f32 (shape #n) {sq}))"
    );
    let p = lowered_term(src, &term);
    insta::assert_snapshot!(p);
}

#[test]
fn filter_and_filtermap_are_filter_lanes() {
    let p = lowered("input xs : f32[n]\noutput pos = filter (\\x -> x > 0.0) xs\n");
    assert!(p.contains("filter"), "{p}");
    insta::assert_snapshot!("filter", p);
    let fm = lowered_term(
        "input xs : f32[n]\noutput pos = filter (\\x -> x > 0.0) xs\n",
        "(outputs (filtermap (lam <f32> (> $0:f32 0.0:f32)) (shape #n) \
         (lam <i64> (* (index @xs $0:i64) 2.0:f32))))",
    );
    insta::assert_snapshot!("filtermap", fm);
}

#[test]
fn permute_makes_its_constant_fill_destination_and_copies_any_other() {
    let p = lowered(
        "input xs : f32[n]\ninput ds : f32[k]\n\
         output hist = permute (+) (fill [k] 0.0) (\\i -> i % k) xs\n\
         output onto = permute max ds (\\i -> i % k) xs\n",
    );
    assert!(p.contains("permute"), "{p}");
    insta::assert_snapshot!(p);
}

#[test]
fn permutemap_scatters_an_index_function() {
    let p = lowered_term(
        "input xs : f32[n]\ninput ds : f32[k]\noutput hist = permute (+) (fill [k] 0.0) (\\i -> i % k) xs\n",
        "(outputs (permutemap (lam <f32,f32> (+ $1:f32 $0:f32)) (fill (shape #k) 0.0:f32) \
         (lam <i64> (\"%\" $0:i64 #k)) (shape #n) (lam <i64> (* (index @xs $0:i64) 2.0:f32))))",
    );
    insta::assert_snapshot!(p);
}

#[test]
fn gather_backpermute_and_transpose_read_at_a_computed_index() {
    let p = lowered(
        "input xs : f32[n]\ninput idx : i64[m]\ninput a : f32[r, c]\n\
         output g = gather xs idx\n\
         output b = backpermute [n] (\\i -> n - 1 - i) xs\n\
         output t = transpose a\n",
    );
    insta::assert_snapshot!(p);
}

#[test]
fn reverse_slice_concat_and_reshape_check_what_they_must() {
    let p = lowered(
        "input xs : f32[n]\ninput ys : f32[m]\ninput s : i64\ninput a : f32[r, c]\n\
         output v = reverse xs\n\
         output sl = slice xs s 3\n\
         output cat = concat xs ys\n\
         output re = reshape [c, r] a\n\
         output flat = reshape [n] a\n",
    );
    assert!(p.contains("assert"), "{p}");
    insta::assert_snapshot!(p);
}

#[test]
fn multi_is_one_kernel_with_a_lane_per_result() {
    let p = lowered_term(
        "input xs : f32[n]\noutput a = xs\noutput b = reduce (+) 0.0 xs\n",
        "(outputs (proj 0:i64 (multi (shape #n) (lgen (lam <i64> (* (index @xs $0:i64) 2.0:f32))) \
         (lred (lam <f32,f32> (+ $1:f32 $0:f32)) 0.0:f32 (lam <i64> (index @xs $0:i64))))) \
         (proj 1:i64 (multi (shape #n) (lgen (lam <i64> (* (index @xs $0:i64) 2.0:f32))) \
         (lred (lam <f32,f32> (+ $1:f32 $0:f32)) 0.0:f32 (lam <i64> (index @xs $0:i64))))))",
    );
    insta::assert_snapshot!(p);
}

#[test]
fn iterate_is_a_loop_in_the_element_function() {
    let p = lowered("input xs : f32[n]\noutput y = map (\\x -> iterate 3 (\\y -> y * x + 1.0) x) xs\n");
    assert!(p.contains("loop"), "{p}");
    insta::assert_snapshot!(p);
}

#[test]
fn a_kernel_under_an_element_if_runs_under_a_guard_whose_reads_cannot_fail() {
    // `s` is needed only where `xs[0] > 0.0`: the host tests that first (a read out of
    // bounds gives 0 there) and runs `s`'s kernel only when it holds
    let p = lowered(
        "input xs : f32[n]\ninput ys : f32[m]\n\
         let s = reduce (+) 0.0 ys\n\
         output y = map (\\x -> if xs[0] > 0.0 then x + s else x) xs\n",
    );
    insta::assert_snapshot!(p);
}

#[test]
fn a_host_if_holds_the_kernels_of_its_branches() {
    let p = lowered(
        "input c : bool\ninput xs : f32[n]\n\
         output y = if c then map (\\x -> x * 2.0) xs else reverse xs\n\
         output t = if c && reduce (+) 0.0 xs > 1.0 then 1 else 2\n",
    );
    insta::assert_snapshot!(p);
}

#[test]
fn an_output_that_is_an_input_is_a_copy() {
    let p = lowered("input xs : f32[n]\noutput ys = xs\n");
    assert!(p.contains("copy"), "{p}");
    insta::assert_snapshot!(p);
}
