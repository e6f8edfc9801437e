//! Parse an `.eqf` file, read its inputs from a directory of `.npy` files, run it on the
//! reference backend and write the outputs: the library calls behind `eqfuse run`.
//!
//! ```sh
//! cargo run --release --example run_npy -- examples/blackscholes.eqf tests/conformance/blackscholes/inputs /tmp/bs-out
//! ```

use eqfuse::{files, Backend};
use std::path::PathBuf;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [program, inputs, out] = args.as_slice() else {
        eprintln!("usage: run_npy PROGRAM.eqf INPUT_DIR OUT_DIR");
        std::process::exit(2);
    };
    let result = (|| -> eqfuse::Result<()> {
        let src = std::fs::read_to_string(program)
            .map_err(|e| eqfuse::Error::input(format!("cannot read `{program}`: {e}")))?;
        let checked = eqfuse::check(&eqfuse::parse(&src)?)?;
        let inputs = files::read_inputs(Some(&PathBuf::from(inputs)), &[])?;
        let outputs = eqfuse::run(&checked, Backend::Reference, &inputs)?;
        for path in files::write_outputs(&PathBuf::from(out), &outputs)? {
            println!("wrote {}", path.display());
        }
        Ok(())
    })();
    if let Err(e) = result {
        eprintln!("{e}");
        std::process::exit(1);
    }
}
