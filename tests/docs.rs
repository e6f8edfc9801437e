//! Numbers in the documentation that the code decides: `docs/adding-a-rule.md` shows the
//! soundness test's summary line after its worked example adds one rule to the catalogue,
//! so its rule count is the catalogue's plus one.

use std::path::PathBuf;

fn doc(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The number before `what` on the line of `text` that has `marker`.
fn number_before(text: &str, marker: &str, what: &str) -> usize {
    let line = text.lines().find(|l| l.contains(marker)).unwrap_or_else(|| panic!("no line with `{marker}`"));
    let before = line.split(what).next().expect("split");
    let digits =
        before.split_whitespace().last().unwrap_or_else(|| panic!("no number before `{what}` in `{line}`"));
    digits.parse().unwrap_or_else(|_| panic!("`{digits}` is not a number, in `{line}`"))
}

#[test]
fn adding_a_rule_counts_the_catalogue() {
    let catalogue = eqfuse_rules::all_rules(eqfuse_rules::RuleSets { fast_math: true }).len();
    let text = doc("adding-a-rule.md");
    let shown = number_before(&text, " template programs, ", " rules, ");
    assert_eq!(
        shown,
        catalogue + 1,
        "docs/adding-a-rule.md shows {shown} rules after adding one to {catalogue}"
    );
    let said = number_before(&text, "rules in the catalogue", " rules in the catalogue");
    assert_eq!(said, catalogue, "docs/adding-a-rule.md says the catalogue has {said} rules");
}
