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

/// `docs/rules.md` is the catalogue's table as `eqfuse rules --markdown` prints it.
/// `EQFUSE_BLESS=1` writes the page instead of comparing.
#[test]
fn the_docs_catalogue_is_the_rules_table() {
    let want = eqfuse_rules::catalogue::markdown(&eqfuse_rules::catalogue::listed());
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/rules.md");
    if std::env::var_os("EQFUSE_BLESS").is_some() {
        std::fs::write(&path, &want).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    assert!(
        doc("rules.md") == want,
        "docs/rules.md differs from the rules' table: run `eqfuse rules --markdown > docs/rules.md`"
    );
}

/// Every rule of the runner's catalogue is in the table once, with an identity, and the
/// command line lists them all.
#[test]
fn every_rule_has_one_entry_with_its_identity() {
    let table = eqfuse_rules::catalogue::listed();
    let names: Vec<&str> = table.iter().map(|r| r.name()).collect();
    let mut unique = names.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "a rule is listed twice: {names:?}");
    for r in &table {
        assert!(r.identity.contains("=="), "{}: an identity without `==`: {}", r.name(), r.identity);
        assert!(
            r.name().starts_with(match r.theme {
                eqfuse_rules::catalogue::Theme::Scalar => "scalar-",
                eqfuse_rules::catalogue::Theme::Index => "idx-",
                eqfuse_rules::catalogue::Theme::Fusion => "",
                eqfuse_rules::catalogue::Theme::Horizontal => "horizontal-",
                eqfuse_rules::catalogue::Theme::Loops => "loop-",
                eqfuse_rules::catalogue::Theme::FastMath => "fm-",
                eqfuse_rules::catalogue::Theme::Filters => "filter-",
                eqfuse_rules::catalogue::Theme::Selects => "select-",
                eqfuse_rules::catalogue::Theme::Scans => "scan-",
                eqfuse_rules::catalogue::Theme::Hoist => "hoist-",
            }),
            "{} is not named for its theme {:?}",
            r.name(),
            r.theme
        );
    }
    let all: Vec<String> = eqfuse_rules::all_rules(eqfuse_rules::RuleSets { fast_math: true })
        .iter()
        .map(|r| r.name.to_string())
        .collect();
    assert_eq!(all, names);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_eqfuse"))
        .args(["rules", "--json"])
        .output()
        .expect("run eqfuse");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let listed: Vec<&str> =
        listed.as_array().expect("a list").iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(listed, names);
}
