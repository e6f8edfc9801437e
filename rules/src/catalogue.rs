//! The rule catalogue as one table: every rule with its name, the identity it relies on, its
//! theme (the file it lives in), the phases that run it, whether it spends the fusion
//! budget, and the rewrite itself. The runner takes its rules from here, `eqfuse rules`
//! prints it, and the catalogue in the docs (`docs/rules.md`) is generated from it
//! ([`markdown`]; a test keeps the file up to date).

use crate::{Gas, Rewrite, RuleSets};

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

    /// The phases of the runner that apply its rules ([`crate::runner`]).
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
    /// Whether each application spends a unit of the fusion budget ([`Gas`]).
    pub spends_gas: bool,
    /// The rewrite.
    pub rewrite: Rewrite,
}

/// The rules the horizontal phase applies before grouping kernels, besides the theme's own:
/// every map gets its index form, and the beta rule finishes it.
pub const HORIZONTAL_PREP: [&str; 2] = ["recast-map", "fuse-beta"];

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

/// The whole catalogue (the fast-math rules when `sets` asks for them), the fusion rules
/// sharing `gas`, theme by theme.
pub fn table(sets: RuleSets, gas: &Gas) -> Vec<Rule> {
    let mut v = crate::scalar::table();
    v.extend(crate::index::table());
    v.extend(crate::fusion::table(gas));
    v.extend(crate::horizontal::table());
    v.extend(crate::loops::table());
    if sets.fast_math {
        v.extend(crate::fast_math::table());
    }
    v
}

/// The catalogue as the Markdown page `docs/rules.md` (what `eqfuse rules --markdown`
/// prints).
pub fn markdown(rules: &[Rule]) -> String {
    let cell = |s: &str| s.replace('|', "\\|");
    let mut out = String::from(
        "# The rule catalogue\n\n\
         Generated from the rules' table (`rules/src/catalogue.rs`) by `eqfuse rules --markdown`; a\n\
         test fails when this page and the table differ. The policy every rule follows is in\n\
         `rules/README.md`; how to add one, in [adding-a-rule.md](adding-a-rule.md).\n\n\
         | theme | file | phases | what |\n| --- | --- | --- | --- |\n",
    );
    for t in Theme::ALL {
        out.push_str(&format!(
            "| {} | `{}` | {} | {} |\n",
            t.as_str(),
            t.file(),
            t.phases(),
            cell(t.about())
        ));
    }
    out.push_str(
        "\n`recast-map` and `fuse-beta` also run in the horizontal phase, before kernels are \
         grouped.\nA rule that spends the fusion budget (`--fuse-gas N`) applies at most N times \
         in all.\n",
    );
    for t in Theme::ALL {
        let of: Vec<&Rule> = rules.iter().filter(|r| r.theme == t).collect();
        if of.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "\n## {} ({} rules)\n\n| rule | identity | budget |\n| --- | --- | --- |\n",
            t.as_str(),
            of.len()
        ));
        for r in of {
            out.push_str(&format!(
                "| `{}` | `{}` | {} |\n",
                r.name(),
                cell(r.identity).replace('`', "'"),
                if r.spends_gas { "yes" } else { "no" }
            ));
        }
    }
    out
}

/// The catalogue as plain text, one rule per line (what `eqfuse rules` prints).
pub fn text(rules: &[Rule]) -> String {
    let w = rules.iter().map(|r| r.name().len()).max().unwrap_or(0);
    let pw = rules.iter().map(|r| r.phases().len()).max().unwrap_or(0);
    let mut out = format!("{:<w$}  {:<10}  {:<pw$}  {:<6}  identity\n", "rule", "theme", "phases", "budget");
    for r in rules {
        out.push_str(&format!(
            "{:<w$}  {:<10}  {:<pw$}  {:<6}  {}\n",
            r.name(),
            r.theme.as_str(),
            r.phases(),
            if r.spends_gas { "yes" } else { "no" },
            r.identity
        ));
    }
    out
}
