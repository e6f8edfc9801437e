//! The names of the optimiser's phases ([`Phase`]): what a rule's table entry
//! ([`crate::rule::Rule::in_phases`]) and the phase list ([`crate::pipeline::PHASES`]) speak
//! of, and what `eqfuse rules` and `explain` print.

/// A phase of the optimiser: one fresh e-graph built from the previous phase's extracted
/// term, saturated with the phase's rules, then extracted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// Scalar and index algebra alone, before any fusion (keeps the fuse phase's e-graph small).
    Simplify,
    /// Vertical fusion, with the simplification rules beside it (each can open the other).
    Fuse,
    /// Chains of one function become loops.
    Loops,
    /// Independent kernels over one index space become one pass.
    Horizontal,
}

impl Phase {
    /// Every phase, in the order the catalogue prints a rule's phases.
    pub const ALL: [Phase; 4] = [Phase::Simplify, Phase::Fuse, Phase::Loops, Phase::Horizontal];

    /// Its name, as `eqfuse rules` and `explain` print it.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Simplify => "simplify",
            Phase::Fuse => "fuse",
            Phase::Loops => "loops",
            Phase::Horizontal => "horizontal",
        }
    }

    /// The name `explain` gives a repeated run of the phase (a phase that repeats until its
    /// term settles, [`crate::pipeline::PhaseSpec::repeats`]).
    pub fn again(self) -> &'static str {
        match self {
            Phase::Simplify => "simplify-again",
            Phase::Fuse => "fuse-again",
            Phase::Loops => "loops-again",
            Phase::Horizontal => "horizontal-again",
        }
    }

    /// When, in the phase, the rules it shares with other phases run: the catalogue's note on
    /// them (`docs/rules.md`).
    pub fn shared_note(self) -> &'static str {
        match self {
            Phase::Horizontal => ", before kernels are grouped",
            Phase::Simplify | Phase::Fuse | Phase::Loops => "",
        }
    }
}
