//! # eqfuse-lower
//!
//! From an extracted term to the [`eqfuse_ir::plan::Plan`] the executors run, and the
//! physical cost model that judges plans:
//!
//! - [`term`]: what placement and lowering know of each node of an extracted term;
//! - [`place`]: placement — where each node is computed (on the host on every run, on the
//!   host under a guard, inside element functions), decided before any kernel is emitted;
//! - [`lower`]: an extracted term to a plan, reading the placement, then the plan passes:
//!   loop rolling ([`roll`]), contractions marked (`contract`), kernels grouped into row
//!   blocks (`rowblock`), and a scan or a filter with the kernels that ride along its passes
//!   into segment blocks (`segblock`);
//! - [`model`]: the physical cost model, in seconds, of a plan;
//! - [`dag`]: sharing-aware extraction — which arrays to materialise — judged by [`model`]
//!   on the plan each choice lowers to;
//! - [`kernels`]: the kernels of a plan as `explain` reports them.
//!
//! The e-graph, its language and the tree extraction are `eqfuse-egraph`'s; the rules and the
//! runner that saturates the e-graph are `eqfuse-rules`'.

mod contract;
pub mod dag;
pub mod kernels;
pub mod lower;
pub mod model;
pub mod place;
pub mod roll;
mod rowblock;
mod segblock;
mod strict;
pub mod term;

pub use kernels::{summarize, KernelInfo, KernelSummary};
