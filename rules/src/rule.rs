//! What one rule of the catalogue is ([`Rule`]): its rewrite with the identity it relies on,
//! its theme, the phases that run it and whether it spends the fusion budget. The theme files
//! build their tables of these; [`crate::catalogue`] joins them.

use crate::phase::Phase;
use crate::Rewrite;

/// A theme: one file of rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Theme {
    /// Scalar identities that hold bit for bit (`scalar.rs`).
    Scalar,
    /// Compositions of index operations, eta, known sizes (`index.rs`).
    Index,
    /// Index forms, the beta rule, fused consumers, the filter algebra (`fusion.rs`).
    Fusion,
    /// Independent kernels over one index space in one pass, diagonal fusion (`horizontal.rs`).
    Horizontal,
    /// A chain of applications of one function becomes an `iterate` (`loops.rs`).
    Loops,
    /// Identities that change float results, only with fast math (`fast_math.rs`).
    FastMath,
    /// The size and the reductions of a `filter` computed from its input (`filters.rs`).
    Filters,
    /// Selects in one form: negated conditions (`selects.rs`).
    Selects,
    /// A scan's forms: an exclusive scan combined with its input (`scans.rs`).
    Scans,
    /// A sub-expression over fewer indices than its space materialised over those (`hoist.rs`).
    Hoist,
}

impl Theme {
    /// Every theme, in the order the catalogue lists them.
    pub const ALL: [Theme; 10] = [
        Theme::Scalar,
        Theme::Index,
        Theme::Fusion,
        Theme::Filters,
        Theme::Selects,
        Theme::Scans,
        Theme::Hoist,
        Theme::Horizontal,
        Theme::Loops,
        Theme::FastMath,
    ];

    /// Its name, as `eqfuse rules` prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            Theme::Scalar => "scalar",
            Theme::Index => "index",
            Theme::Fusion => "fusion",
            Theme::Horizontal => "horizontal",
            Theme::Loops => "loops",
            Theme::FastMath => "fast-math",
            Theme::Filters => "filters",
            Theme::Selects => "selects",
            Theme::Scans => "scans",
            Theme::Hoist => "hoist",
        }
    }

    /// The file its rules live in.
    pub fn file(self) -> &'static str {
        match self {
            Theme::Scalar => "rules/src/scalar.rs",
            Theme::Index => "rules/src/index.rs",
            Theme::Fusion => "rules/src/fusion.rs",
            Theme::Horizontal => "rules/src/horizontal.rs",
            Theme::Loops => "rules/src/loops.rs",
            Theme::FastMath => "rules/src/fast_math.rs",
            Theme::Filters => "rules/src/filters.rs",
            Theme::Selects => "rules/src/selects.rs",
            Theme::Scans => "rules/src/scans.rs",
            Theme::Hoist => "rules/src/hoist.rs",
        }
    }

    /// What its rules are for.
    pub fn about(self) -> &'static str {
        match self {
            Theme::Scalar => "scalar identities that hold bit for bit",
            Theme::Index => "compositions of index operations, eta, known sizes",
            Theme::Fusion => "index forms, the beta rule, fused consumers, the filter algebra",
            Theme::Horizontal => "independent kernels over one index space in one pass; diagonal fusion",
            Theme::Loops => "a chain of applications of one function becomes an `iterate`; joined loops",
            Theme::FastMath => "identities that change float results; only with fast math",
            Theme::Filters => "the size and the reductions of a filter computed from its input",
            Theme::Selects => "selects in one form",
            Theme::Scans => "an exclusive scan combined with its input is the inclusive scan",
            Theme::Hoist => {
                "a sub-expression over fewer indices than its space materialised over those indices"
            }
        }
    }
}

/// One rule of the catalogue.
pub struct Rule {
    /// The identity it relies on (`lhs == rhs`, with the conditions under which it holds).
    pub identity: &'static str,
    /// Its theme.
    pub theme: Theme,
    /// Whether each application spends a unit of the fusion budget ([`crate::Gas`]).
    pub spends_gas: bool,
    /// The rewrite.
    pub rewrite: Rewrite,
    /// The phases that run it, in [`Phase::ALL`] order ([`crate::pipeline::PHASES`] reads them).
    pub in_phases: Vec<Phase>,
}

impl Rule {
    /// Its name.
    pub fn name(&self) -> &'static str {
        self.rewrite.name.as_str()
    }

    /// Whether `phase` runs it.
    pub fn runs_in(&self, phase: Phase) -> bool {
        self.in_phases.contains(&phase)
    }

    /// The phases that run it as `eqfuse rules` prints them (`simplify, fuse`; the fast-math
    /// rules, which run only when asked for, add `(fast math)`).
    pub fn phases(&self) -> String {
        phase_list(&self.in_phases, self.theme)
    }

    /// The same rule, run by `phase` too (a rule one theme shares with another's phase).
    pub fn also(mut self, phase: Phase) -> Rule {
        if !self.runs_in(phase) {
            self.in_phases.push(phase);
            self.in_phases.sort();
        }
        self
    }
}

/// `phases` as the catalogue prints them for a rule of `theme`.
pub fn phase_list(phases: &[Phase], theme: Theme) -> String {
    let names: Vec<&str> = phases.iter().map(|p| p.as_str()).collect();
    let list = names.join(", ");
    if theme == Theme::FastMath {
        format!("{list} (fast math)")
    } else {
        list
    }
}

/// Rules of `theme` run by `phases` from `(identity, rewrite)` pairs, none spending the
/// fusion budget.
pub fn themed(theme: Theme, phases: &[Phase], rules: Vec<(&'static str, Rewrite)>) -> Vec<Rule> {
    rules
        .into_iter()
        .map(|(identity, rewrite)| Rule {
            identity,
            theme,
            spends_gas: false,
            rewrite,
            in_phases: phases.to_vec(),
        })
        .collect()
}
