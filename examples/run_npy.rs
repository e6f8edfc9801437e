//! Parse an `.eqf` file, read its inputs from a directory of `.npy` files, run it (optimised,
//! on the backend named, `auto` by default) and write the outputs: the library calls behind
//! `eqfuse run`. The outputs are `ndarray` arrays (`eqfuse::Value`) until they are written.
//!
//! ```sh
//! cargo run --release --example run_npy -- examples/blackscholes.eqf tests/conformance/blackscholes/inputs /tmp/bs-out
//! cargo run --release --example run_npy -- examples/softmax_rows.eqf tests/conformance/softmax_rows/inputs /tmp/sm-out reference
//! ```

use eqfuse::{files, Backend, Value};
use std::path::PathBuf;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (program, inputs, out, backend) = match args.as_slice() {
        [p, i, o] => (p, i, o, "auto"),
        [p, i, o, b] => (p, i, o, b.as_str()),
        _ => {
            eprintln!("usage: run_npy PROGRAM.eqf INPUT_DIR OUT_DIR [auto|cpu|cuda|reference]");
            std::process::exit(2);
        }
    };
    let result = (|| -> eqfuse::Result<()> {
        let src = std::fs::read_to_string(program)
            .map_err(|e| eqfuse::Error::input(format!("cannot read `{program}`: {e}")))?;
        let checked = eqfuse::check(&eqfuse::parse(&src)?)?;
        let backend: Backend = backend.parse()?;
        let inputs = files::read_inputs(Some(&PathBuf::from(inputs)), &[])?;
        let outputs = eqfuse::run(&checked, backend, &inputs)?;
        for (name, value) in &outputs {
            // each output is an ndarray array of the declared element type
            let first = match value {
                Value::F32(a) => a.iter().next().map(|x| x.to_string()),
                Value::F64(a) => a.iter().next().map(|x| x.to_string()),
                Value::I32(a) => a.iter().next().map(|x| x.to_string()),
                Value::I64(a) => a.iter().next().map(|x| x.to_string()),
                Value::Bool(a) => a.iter().next().map(|x| x.to_string()),
                other => other.get_flat(0).map(|x| x.to_string()),
            };
            println!("{name}: shape {:?}, first element {}", value.shape(), first.unwrap_or("-".into()));
        }
        for path in files::write_outputs(&PathBuf::from(out), &outputs)? {
            println!("wrote {} ({backend})", path.display());
        }
        Ok(())
    })();
    if let Err(e) = result {
        eprintln!("{e}");
        std::process::exit(1);
    }
}
