//! `eqfuse check PROGRAM`

use super::{load, CmdResult};
use std::path::Path;

/// Parses and checks; prints the signature.
pub fn check(path: &Path) -> CmdResult {
    let checked = load(path)?;
    println!("{}: ok", path.display());
    for (name, ty) in &checked.inputs {
        println!("  input  {name} : {ty}");
    }
    for (name, ty) in &checked.outputs {
        println!("  output {name} : {ty}");
    }
    Ok(())
}
