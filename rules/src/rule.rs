//! What one rule of the catalogue is ([`Rule`]): its rewrite with the identity it relies on,
//! its theme and whether it spends the fusion budget. The theme files build their tables of
//! these; [`crate::catalogue`] joins them.

use crate::Rewrite;

/// A theme: one file of rules, run by the same phases.
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
}

impl Theme {
    /// Every theme, in the order the catalogue lists them.
    pub const ALL: [Theme; 6] =
        [Theme::Scalar, Theme::Index, Theme::Fusion, Theme::Horizontal, Theme::Loops, Theme::FastMath];

    /// Its name, as `eqfuse rules` prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            Theme::Scalar => "scalar",
            Theme::Index => "index",
            Theme::Fusion => "fusion",
            Theme::Horizontal => "horizontal",
            Theme::Loops => "loops",
            Theme::FastMath => "fast-math",
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
        }
    }

    /// The phases of the optimiser (`eqfuse-optimize`'s driver) that apply its rules.
    pub fn phases(self) -> &'static str {
        match self {
            Theme::Scalar | Theme::Index => "simplify, fuse",
            Theme::Fusion => "fuse",
            Theme::Horizontal => "horizontal",
            Theme::Loops => "loops",
            Theme::FastMath => "simplify, fuse (fast math)",
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
}

/// The rules the horizontal phase applies before grouping kernels, besides the theme's own:
/// every map gets its index form, and the beta rule finishes it.
pub const HORIZONTAL_PREP: [&str; 2] = ["fuse-beta", "recast-map"];

impl Rule {
    /// Its name.
    pub fn name(&self) -> &'static str {
        self.rewrite.name.as_str()
    }

    /// The phases that apply it.
    pub fn phases(&self) -> String {
        let own = self.theme.phases();
        if HORIZONTAL_PREP.contains(&self.name()) {
            format!("{own}, horizontal")
        } else {
            own.to_string()
        }
    }
}

/// Rules of `theme` from `(identity, rewrite)` pairs, none spending the fusion budget.
pub fn themed(theme: Theme, rules: Vec<(&'static str, Rewrite)>) -> Vec<Rule> {
    rules
        .into_iter()
        .map(|(identity, rewrite)| Rule { identity, theme, spends_gas: false, rewrite })
        .collect()
}
