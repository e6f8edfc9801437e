//! `eqfuse rules [--json | --markdown]`: the rule catalogue.

use super::CmdResult;
use eqfuse::catalogue::{self, Rule};

/// Arguments of `eqfuse rules`.
#[derive(Debug, clap::Args)]
pub struct RulesArgs {
    /// Print one JSON list: `name`, `theme`, `phases`, `budget`, `identity` per rule.
    #[arg(long, conflicts_with = "markdown")]
    json: bool,
    /// Print the catalogue as the Markdown page `docs/rules.md`.
    #[arg(long)]
    markdown: bool,
}

/// Prints every rule of the catalogue (the fast-math rules included).
pub fn rules(a: &RulesArgs) -> CmdResult {
    let table: Vec<Rule> = catalogue::listed();
    if a.json {
        let list: Vec<serde_json::Value> = table
            .iter()
            .map(|r| {
                serde_json::json!({
                    "name": r.name(),
                    "theme": r.theme.as_str(),
                    "phases": r.phases(),
                    "budget": r.spends_gas,
                    "identity": r.identity,
                })
            })
            .collect();
        println!("{}", serde_json::Value::Array(list));
    } else if a.markdown {
        print!("{}", catalogue::markdown(&table));
    } else {
        print!("{}", catalogue::text(&table));
    }
    Ok(())
}
