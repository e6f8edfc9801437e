//! # eqfuse-egraph
//!
//! Array programs in an `egg` e-graph: the language [`ArrayLang`] ([`lang`]), the e-class
//! analysis [`Facts`] ([`analysis`]: kinds and shapes, constants with folding, free De Bruijn
//! parameters), [`encode()`] from a checked `ir::Program`, and [`decode()`](decode::decode) of
//! an extracted term back into a `Program` that prints as `.eqf`, checks, and computes the
//! same results.
//!
//! # The encoding, by example
//!
//! ```text
//! input xs : f32[n]
//! input ys : f32[n]
//! output dot = reduce (+) 0 (map (\x y -> x * y) xs ys)
//! ```
//!
//! encodes as the term
//!
//! ```text
//! (outputs
//!   (reduce (lam <f32,f32> (+ $1:f32 $0:f32))
//!           0.0:f32
//!           (map (lam <f32,f32> (* $1:f32 $0:f32)) @xs @ys)))
//! ```
//!
//! `@xs` is an input, `0.0:f32` the literal at the type the checker resolved, and
//! `(lam <f32,f32> body)` a two-parameter lambda (its parameter types first) whose
//! **last** parameter is `$0` and first `$1` (parameters are typed, so every e-class has one
//! type). The section `(+)` is a lambda like
//! any other. A top-level `let` is one e-class shared by all its uses; a named function is a
//! closed `lam` class and its calls are `(app f a1 .. ak)`; a local `let` is substituted (at
//! the right binder depth). See [`lang`] for every node and the reserved fused forms.
//!
//! [`roundtrip`] is encode → extract the smallest term ([`egg::AstSize`]) → decode.
//!
//! # Extraction
//!
//! [`extract`]: acyclic extraction of one node per class (Knuth's settling order, local
//! improvement), never extracting a node whose parameters are dead. What to materialise,
//! placement and lowering to a plan are the next stage's (`eqfuse-lower`).
//!
//! An extracted term travels as a [`Term`] ([`term`]): the term with the source `let` names
//! and source positions of its nodes, which [`Term::carry`] moves onto the next term
//! extracted after a rewrite.

pub mod analysis;
pub mod cost;
pub mod decode;
pub mod encode;
pub mod extract;
pub mod idmap;
pub mod lang;
pub mod term;

pub use analysis::{ClassFacts, Facts, Kind, ParamSet, SymDim};
pub use cost::TreeCost;
pub use decode::{decode, decode_recexpr, Signature};
pub use encode::{encode, Encoded};
pub use idmap::IdMap;
pub use lang::{ArrayLang, DeBruijn, InputName, Literal, ParamTypes, SizeName};
pub use term::{NodeMap, Term};

use eqfuse_ir::check::Checked;
use eqfuse_ir::{Program, Result};

/// Encodes `checked`, extracts the smallest term ([`egg::AstSize`]) and decodes it.
pub fn roundtrip(checked: &Checked) -> Result<Program> {
    let enc = encode(checked)?;
    let extractor = egg::Extractor::new(&enc.egraph, egg::AstSize);
    decode(&enc, |id| extractor.find_best_node(id).clone())
}

/// Stack bytes for the threads that encode and decode (they recurse over terms).
const STACK_BYTES: usize = 256 << 20;

/// Runs `f` on a scoped thread with a large stack (`E-LIMIT` when no thread can be made).
pub fn with_big_stack<T: Send>(f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
    std::thread::scope(|s| {
        let spawned = std::thread::Builder::new()
            .name("eqfuse-egraph".into())
            .stack_size(STACK_BYTES)
            .spawn_scoped(s, f);
        match spawned {
            Ok(h) => match h.join() {
                Ok(r) => r,
                Err(p) => std::panic::resume_unwind(p),
            },
            Err(e) => Err(eqfuse_ir::Error::new(
                eqfuse_ir::Code::Limit,
                format!("no thread could be made for the e-graph encoder/decoder: {e}"),
            )),
        }
    })
}
