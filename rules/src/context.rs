//! The rules' own state about the e-graph they run on, apart from the e-class analysis.
//!
//! The analysis (`eqfuse_egraph::Facts`) holds facts about classes, which hold whatever order
//! the rules fired in. What the rules remember while they run — the term the e-graph was
//! loaded from (a canonical order of its classes), the nodes `fuse-read` added, what the
//! fusion walks found, the program's output classes — is not a fact about a class, goes
//! stale as the e-graph learns more, and belongs to one run. It lives here, under the
//! e-graph's `Facts::run` token (every analysis has its own: a clone, the analysis of a new
//! e-graph, starts with none of it), and the runner resets it: at loading (the term order),
//! before every iteration (the walks' memos and the output classes).
//!
//! Each thread keeps the state of the few e-graphs it worked on last; rules run on the
//! thread of their runner. Every access is a short borrow: nothing here calls back into a
//! rule.

use crate::EG;
use egg::Id;
use eqfuse_egraph::analysis::SymDim;
use eqfuse_egraph::ArrayLang;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

/// What one fusion walk found: what each (class, binder depth) became.
pub type WalkMemo = HashMap<(Id, u32), Id>;

/// How far a fusion walk (`fuse-read`) fuses the reads of an index function's body.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WalkKind {
    /// Whole chains of producers.
    Chains,
    /// Whole chains, but the reads of the program's outputs stay reads.
    KeepOutputs,
    /// Whole chains, but the reads of the program's outputs stay reads except those at an
    /// index that does not depend on the index parameters (one value).
    KeepOutputArrays,
    /// Only the producers read directly: their own reads stay reads.
    OneProducer,
    /// Whole chains, but the reads of this one producer stay reads (a form for each
    /// producer of a body that reads several: keep one materialised, fuse the rest).
    KeepProducer(Id),
}

/// The rules' state for one e-graph.
#[derive(Default)]
pub struct RuleCtx {
    /// The classes of the term this e-graph was loaded from, one per node in the term's
    /// order (children first): a canonical order of the classes that does not depend on
    /// the order in which rules added nodes (horizontal fusion groups kernels in it).
    pub term_order: Vec<Id>,
    /// The nodes `fuse-read` added (as they were when added): a walk fusing one producer
    /// deep runs only from the others, so that a chain of `k` producers gets `k` such
    /// forms, not one per depth and consumer.
    pub fused_nodes: HashSet<ArrayLang>,
    /// What the fusion walks found in the current iteration, per index space and kind of
    /// walk. What a walk found goes stale as soon as the e-graph learns more (a read that
    /// was not provably in bounds becomes so when its index is merged with a parameter), so
    /// it is emptied before every iteration.
    pub walk_memo: HashMap<(Vec<SymDim>, WalkKind), WalkMemo>,
    /// The classes of the program's output arrays, found once per iteration (finding them
    /// at every `fuse-read` made a program of many outputs quadratic).
    pub outputs: Option<Rc<[Id]>>,
}

/// How many e-graphs' states a thread keeps (the runner's current one, and the few it
/// made before).
const KEPT: usize = 8;

thread_local! {
    static STATES: RefCell<Vec<(u64, RuleCtx)>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` on the rules' state for `eg` (made empty the first time).
pub fn with<R>(eg: &EG, f: impl FnOnce(&mut RuleCtx) -> R) -> R {
    let run = eg.analysis.run;
    STATES.with(|s| {
        let mut s = s.borrow_mut();
        let at = match s.iter().position(|(r, _)| *r == run) {
            Some(i) => i,
            None => {
                if s.len() == KEPT {
                    s.remove(0);
                }
                s.push((run, RuleCtx::default()));
                s.len() - 1
            }
        };
        f(&mut s[at].1)
    })
}

/// A fresh state for `eg`, loaded from a term whose nodes are the classes `term_order`.
pub fn start(eg: &EG, term_order: Vec<Id>) {
    with(eg, |c| *c = RuleCtx { term_order, ..RuleCtx::default() });
}

/// Before an iteration: the walks' findings and the output classes are found again.
pub fn new_iteration(eg: &EG) {
    with(eg, |c| {
        c.walk_memo.clear();
        c.outputs = None;
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use eqfuse_egraph::Facts;

    #[test]
    fn each_egraph_has_its_own_state_and_a_clone_starts_empty() {
        let a = EG::new(Facts::default());
        let b = EG::new(Facts::default());
        start(&a, vec![Id::from(3usize)]);
        with(&a, |c| c.outputs = Some(Rc::from(vec![Id::from(1usize)])));
        assert!(with(&b, |c| c.term_order.is_empty() && c.outputs.is_none()));
        assert_eq!(with(&a, |c| c.term_order.clone()), vec![Id::from(3usize)]);
        // a new iteration forgets what was found, not the term
        new_iteration(&a);
        assert!(with(&a, |c| c.outputs.is_none()));
        assert_eq!(with(&a, |c| c.term_order.len()), 1);
        // the analysis of a new e-graph (a clone) is another run
        let c = EG::new(a.analysis.clone());
        assert_ne!(c.analysis.run, a.analysis.run);
        assert!(with(&c, |s| s.term_order.is_empty()));
    }
}
