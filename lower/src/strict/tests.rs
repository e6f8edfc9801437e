//! The strict sets against the definition, computed the plain way (hash sets, one walk per
//! set): on hand-written terms with every form the definition names, and on random
//! programs (fresh seeds, printed).

#![allow(clippy::unwrap_used)]
use super::*;
use crate::term::TermFacts;
use egg::{AstSize, Extractor, RecExpr};
use eqfuse_egraph::encode::encode;
use eqfuse_ir::check::check;
use eqfuse_ir::parse::parse;
use eqfuse_ir::testgen::{build_case, GenConfig};

/// `strict(i)` as the module documentation defines it, one walk per set.
fn plain_of(v: &View<'_>, memo: &mut HashMap<usize, HashSet<usize>>, i: usize) -> HashSet<usize> {
    if let Some(s) = memo.get(&i) {
        return s.clone();
    }
    let mut set = HashSet::new();
    plain_walk(v, memo, i, &mut |n| set.insert(n));
    memo.insert(i, set.clone());
    set
}

/// The walk of `strict(i)` as it was first written: every node of an `if`'s both-branches
/// set and of an application's body visited again from each node that reaches them.
fn plain_walk(
    v: &View<'_>,
    memo: &mut HashMap<usize, HashSet<usize>>,
    i: usize,
    visit: &mut dyn FnMut(usize) -> bool,
) {
    let mut stack = vec![i];
    while let Some(n) = stack.pop() {
        if !visit(n) || v.opaque(n) {
            continue;
        }
        match &v.nodes[n] {
            ArrayLang::If([c, t, e]) => {
                stack.push(kid(c));
                let (st, se) = (plain_of(v, memo, kid(t)), plain_of(v, memo, kid(e)));
                stack.extend(st.iter().filter(|x| se.contains(x)));
            }
            ArrayLang::And([a, _]) | ArrayLang::Or([a, _]) => stack.push(kid(a)),
            ArrayLang::Iterate([k, _, x]) => stack.extend([kid(k), kid(x)]),
            ArrayLang::App(c) => {
                let Some((f, args)) = c.split_first() else { continue };
                let ArrayLang::Lam([_, b]) = &v.nodes[kid(f)] else { continue };
                for x in plain_of(v, memo, kid(b)) {
                    match arg_of(v, args, x) {
                        Some(a) => stack.push(a),
                        None if v.free[x].is_empty() => stack.push(x),
                        None => {}
                    }
                }
            }
            other => stack.extend(other.children().iter().map(kid)),
        }
    }
}

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Checks every node's strict set and, for a few pruning sets, every node's walk against
/// the plain ones; the number of `if` and application nodes met.
/// (0 for a program the encoder takes only after the optimiser's rewrites.)
fn agree(src: &str, rng: &mut Rng) -> usize {
    let checked = check(&parse(src).unwrap()).unwrap();
    let Ok(enc) = encode(&checked) else { return 0 };
    let term: RecExpr<ArrayLang> = Extractor::new(&enc.egraph, AstSize).find_best(enc.root).1;
    let facts = TermFacts::new(&term, &enc.egraph.analysis);
    let nodes = term.as_ref();
    let branching = HashSet::new();
    let v = View { nodes, kinds: &facts.kinds, free: &facts.free, branching: &branching };
    let (mut fast, mut memo) = (Strict::default(), HashMap::new());
    for i in 0..nodes.len() {
        let want = plain_of(&v, &mut memo, i);
        let got: HashSet<usize> = fast.of(&v, i).iter().collect();
        assert_eq!(got, want, "strict({i}) of {term} in\n{src}");
    }
    for round in 0..3 {
        let cut: HashSet<usize> =
            (0..nodes.len()).filter(|_| round > 0 && rng.next().is_multiple_of(4)).collect();
        for i in 0..nodes.len() {
            let (mut want, mut got) = (HashSet::new(), HashSet::new());
            plain_walk(&v, &mut memo, i, &mut |n| !cut.contains(&n) && want.insert(n));
            let mut asked = HashSet::new();
            fast.walk(&v, i, &mut |n| {
                assert!(asked.insert(n), "node {n} visited twice from {i}");
                !cut.contains(&n) && got.insert(n)
            });
            assert_eq!(got, want, "walk({i}) cut at {cut:?} of {term} in\n{src}");
        }
    }
    nodes.iter().filter(|n| matches!(n, ArrayLang::If(_) | ArrayLang::App(_))).count()
}

const HAND: &[&str] = &[
    "input a : f32[n]\noutput y = map (\\x -> if x > 0.0 then x * x + 1.0 else x * x - 1.0) a\n",
    "input a : f32[n]\ninput b : f32[n]\noutput y = map (\\x v -> let s = x * v in \
     if x > 0.0 && v < 2.0 || s > 1.0 then (if v > x then s + x else s - x) else s * 2.0) a b\n",
    "input a : f64[n]\noutput y = map (\\c -> \
     let x1 = if c > 4.0 then c else c * c + 1.0 in let k1 = if c > 4.0 then 0 else 1 in \
     let x2 = if x1 > 4.0 then x1 else x1 * x1 + c in let k2 = if x1 > 4.0 then k1 else k1 + 1 in \
     let x3 = if x2 > 4.0 then x2 else x2 * x2 + c in let k3 = if x2 > 4.0 then k2 else k2 + 1 in k3) a\n",
    "input a : i64[n]\noutput y = map (\\x -> iterate (x % 5) (\\v -> if v > 3 then v - 1 else v * 2) x) a\n",
];

#[test]
fn strict_sets_and_walks_agree_with_the_definition_on_hand_written_terms() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for src in HAND {
        assert!(agree(src, &mut rng) > 0, "no `if` or application in the term of\n{src}");
    }
}

#[test]
fn strict_sets_and_walks_agree_with_the_definition_on_random_programs() {
    let seed =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
            | 1;
    println!("seed {seed}");
    let mut rng = Rng(seed);
    let cfg = GenConfig { max_expr_depth: 4, ..GenConfig::default() };
    let mut met = 0;
    for _ in 0..40 {
        let choices: Vec<Vec<u32>> = (0..4).map(|_| (0..64).map(|_| rng.next() as u32).collect()).collect();
        let data: Vec<u32> = (0..32).map(|_| rng.next() as u32).collect();
        let case = build_case(&cfg, &choices, &data);
        met += agree(&case.text(), &mut rng);
    }
    assert!(met > 0, "seed {seed}: no `if` or application in 40 programs");
}
