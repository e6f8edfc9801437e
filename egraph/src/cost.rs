//! A tree cost: what the source program's own term is extracted with (it has no
//! alternatives), and what the extraction tests use. Plans are chosen by the physical model
//! (`eqfuse_lower::model`) through sharing-aware extraction (`eqfuse_lower::dag`). In this cost a kernel (any array operation) costs [`KERNEL`], a transcendental 8, a division
//! 4, other scalar operations 1, leaves and lambdas 0; a `generate` costs one more than
//! a kernel, so that a structured form (`map`, `fill`, ...) wins a tie with its index form. Fusing a producer into its consumer
//! removes a kernel, so it always wins unless it copies a body larger than a kernel.
//!
//! A `proj` of a `multi` costs 1: horizontal fusion only forms a `multi` from independent
//! kernels over one index space, which never costs more than running them apart, so every
//! member takes it.

use crate::analysis::{Facts, Kind};
use crate::lang::ArrayLang;
use egg::{EGraph, Id, Language};

/// What one kernel launch costs in this model.
pub const KERNEL: f64 = 1000.0;

/// The tree cost (see the module docs).
pub struct TreeCost<'a> {
    /// The e-graph (for the kinds of `proj` operands).
    pub egraph: &'a EGraph<ArrayLang, Facts>,
}

/// The cost of a node itself, without its children.
pub fn node_cost(n: &ArrayLang) -> f64 {
    use ArrayLang as L;
    match n {
        L::Lit(_) | L::Param(_) | L::Input(_) | L::Size(_) | L::Params(_) | L::Lam(_) | L::Shape(_) => 0.0,
        L::LaneGen(_) | L::LaneRed(_) | L::Outputs(_) | L::Tuple(_) => 0.0,
        L::Exp(_) | L::Log(_) | L::Sin(_) | L::Cos(_) | L::Tan(_) | L::Tanh(_) | L::Pow(_) | L::Atan2(_) => {
            8.0
        }
        L::Sqrt(_) | L::Div(_) | L::Rem(_) => 4.0,
        L::Index(_) => 2.0,
        // index arithmetic: the structured forms win a tie (decision 1)
        L::Generate(_) => KERNEL + 1.0,
        n if n.array_op().is_some() => KERNEL,
        _ => 1.0,
    }
}

impl TreeCost<'_> {
    /// The cost of `enode` given its children's.
    pub fn of(&self, enode: &ArrayLang, costs: &dyn Fn(Id) -> f64) -> f64 {
        if let ArrayLang::Proj([_, m]) = enode {
            if matches!(self.egraph[*m].data.kind, Kind::Multi(_)) {
                // amortised over the members (see the module docs); still pay for reaching it
                return 1.0 + costs(*m) * 1e-9;
            }
        }
        // every node costs something
        enode.children().iter().fold(node_cost(enode) + 1e-3, |acc, c| acc + costs(*c))
    }
}

impl egg::CostFunction<ArrayLang> for TreeCost<'_> {
    type Cost = f64;

    fn cost<C>(&mut self, enode: &ArrayLang, costs: C) -> f64
    where
        C: FnMut(Id) -> f64,
    {
        let costs = std::cell::RefCell::new(costs);
        self.of(enode, &|c| (costs.borrow_mut())(c))
    }
}
