//! The rule catalogue as one table: every rule with its name, the identity it relies on, its
//! theme (the file it lives in), the phases that run it, whether it spends the fusion
//! budget, and the rewrite itself. The driver takes each phase's rules from here
//! ([`crate::pipeline`]), `eqfuse rules`
//! prints it, and the catalogue in the docs (`docs/rules.md`) is generated from it
//! ([`markdown`]; a test keeps the file up to date).

pub use crate::phase::Phase;
pub use crate::rule::{phase_list, themed, Rule, Theme};
use crate::{Gas, RuleSets};

/// The whole catalogue (the fast-math rules when `sets` asks for them), the fusion rules
/// sharing `gas`, theme by theme.
pub fn table(sets: RuleSets, gas: &Gas) -> Vec<Rule> {
    let mut v = crate::scalar::table();
    v.extend(crate::index::table());
    v.extend(crate::fusion::table(gas));
    v.extend(crate::filters::table(gas));
    v.extend(crate::selects::table());
    v.extend(crate::scans::table(gas));
    v.extend(crate::hoist::table(gas));
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
            phase_list(&theme_phases(rules, t), t),
            cell(t.about())
        ));
    }
    out.push('\n');
    for p in Phase::ALL {
        // the rules a phase runs besides those of themes that all run in it
        let shared: Vec<String> = rules
            .iter()
            .filter(|r| r.runs_in(p) && !theme_phases(rules, r.theme).contains(&p))
            .map(|r| format!("`{}`", r.name()))
            .collect();
        if !shared.is_empty() {
            out.push_str(&format!(
                "{} also run in the {} phase{}.\n",
                shared.join(" and "),
                p.as_str(),
                p.shared_note()
            ));
        }
    }
    out.push_str("A rule that spends the fusion budget (`--fuse-gas N`) applies at most N times in all.\n");
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

/// The phases every rule of `theme` in `rules` runs in (the theme's line of the catalogue).
pub fn theme_phases(rules: &[Rule], theme: Theme) -> Vec<Phase> {
    let mut of = rules.iter().filter(|r| r.theme == theme);
    let first = of.next().map(|r| r.in_phases.clone()).unwrap_or_default();
    of.fold(first, |acc, r| acc.into_iter().filter(|p| r.runs_in(*p)).collect())
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
