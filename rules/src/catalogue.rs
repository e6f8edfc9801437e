//! The rule catalogue as one table: every rule with its name, the identity it relies on, its
//! theme (the file it lives in), the phases that run it, whether it spends the fusion
//! budget, and the rewrite itself. The runner takes its rules from here, `eqfuse rules`
//! prints it, and the catalogue in the docs (`docs/rules.md`) is generated from it
//! ([`markdown`]; a test keeps the file up to date).

pub use crate::rule::{themed, Rule, Theme, HORIZONTAL_PREP};
use crate::{Gas, RuleSets};

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

/// Every rule as `eqfuse rules` lists it: the fast-math rules included, the fusion rules
/// with an unlimited budget.
pub fn listed() -> Vec<Rule> {
    table(RuleSets { fast_math: true }, &Gas::unlimited())
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
