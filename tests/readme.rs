//! The README works as written: every shell command in it that runs eqfuse runs, from the
//! repository's root, and succeeds; every transcript (`$ eqfuse ...` followed by what it
//! prints) prints exactly that. `cargo run --release -- ARGS` runs the binary this test was
//! built with (`eqfuse ARGS`): cargo cannot be run from inside `cargo test`. A command that
//! does not run eqfuse must be one of [`NOT_EQFUSE`], which says why it is not run here, so
//! none is skipped silently.

use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The README's commands that do not run the eqfuse binary, and where they are tested.
const NOT_EQFUSE: &[(&str, &str)] = &[
    ("cargo test --workspace --release", "this test is part of it"),
    ("cargo run --release --example builder_saxpy", "a Rust example: `cargo test` builds it"),
    (
        "python -m pip install ./python",
        "the Python package: `.ci/run` installs it so into a fresh virtualenv and runs python/tests, whose test_readme.py runs the README's Python blocks",
    ),
    (
        "cargo run --release --example run_npy -- examples/blackscholes.eqf tests/conformance/blackscholes/inputs target/bs-out",
        "a Rust example: `cargo test` builds it",
    ),
];

/// The code blocks of `text` whose opening fence names `lang`, each as its lines.
fn blocks<'t>(text: &'t str, lang: &str) -> Vec<Vec<&'t str>> {
    let mut out = Vec::new();
    let mut current: Option<Vec<&str>> = None;
    for line in text.lines() {
        match current.as_mut() {
            None if line.trim_start() == format!("```{lang}") => current = Some(Vec::new()),
            None => {}
            Some(_) if line.trim_start().starts_with("```") => out.extend(current.take()),
            Some(lines) => lines.push(line),
        }
    }
    assert!(current.is_none(), "README.md: an unclosed ```{lang} block");
    out
}

fn readme() -> String {
    std::fs::read_to_string(root().join("README.md")).expect("README.md")
}

/// An empty configuration directory, so that `explain` uses the default cost model rather
/// than a calibration saved on this machine.
fn clean_config() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("readme-test-config");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("config dir");
    dir
}

#[test]
fn every_eqfuse_command_of_the_readme_runs() {
    let text = readme();
    let config = clean_config();
    let mut ran = 0;
    let mut not_run = Vec::new();
    for block in blocks(&text, "sh") {
        for line in block {
            let command = line.split(" #").next().unwrap_or("").trim();
            if command.is_empty() {
                continue;
            }
            match command.strip_prefix("cargo run --release -- ") {
                Some(args) => {
                    let out = Command::new(env!("CARGO_BIN_EXE_eqfuse"))
                        .args(args.split_whitespace())
                        .current_dir(root())
                        .env("XDG_CONFIG_HOME", &config)
                        .output()
                        .expect("start eqfuse");
                    assert!(
                        out.status.success(),
                        "README command `{command}` failed ({:?}):\n{}",
                        out.status.code(),
                        String::from_utf8_lossy(&out.stderr)
                    );
                    ran += 1;
                }
                None => {
                    assert!(
                        NOT_EQFUSE.iter().any(|(c, _)| *c == command),
                        "README command `{command}` neither runs eqfuse nor is listed in NOT_EQFUSE"
                    );
                    not_run.push(command);
                }
            }
        }
    }
    // every listed command is still in the README, so the list cannot hide a stale entry
    for (c, why) in NOT_EQFUSE {
        assert!(not_run.contains(c), "NOT_EQFUSE lists `{c}` ({why}), which the README no longer has");
    }
    assert!(ran >= 8, "only {ran} eqfuse commands in the README");
}

/// A transcript: a `$ COMMAND` line, then what the command prints (its stdout when it
/// succeeds, its stderr when it fails), up to the next `$` line.
#[test]
fn every_transcript_of_the_readme_is_what_eqfuse_prints() {
    let text = readme();
    let config = clean_config();
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_eqfuse"));
    let dir = bin.parent().expect("the binary's directory").to_path_buf();
    let path = std::env::join_paths(
        std::iter::once(dir).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .expect("PATH");
    let mut checked = 0;
    for block in blocks(&text, "text") {
        let mut i = 0;
        while i < block.len() {
            let Some(command) = block[i].strip_prefix("$ ") else {
                panic!("README transcript: `{}` is not a `$ eqfuse ...` line", block[i]);
            };
            assert!(command.starts_with("eqfuse "), "README transcript `{command}` does not run eqfuse");
            let mut j = i + 1;
            while j < block.len() && !block[j].starts_with("$ ") {
                j += 1;
            }
            let shown = block[i + 1..j].join("\n");
            let out = Command::new("sh")
                .args(["-c", command])
                .current_dir(root())
                .env("PATH", &path)
                .env("XDG_CONFIG_HOME", &config)
                .output()
                .expect("start sh");
            let printed = if out.status.success() { &out.stdout } else { &out.stderr };
            let printed = String::from_utf8_lossy(printed);
            assert_eq!(printed.trim_end(), shown.trim_end(), "README transcript `{command}`");
            checked += 1;
            i = j;
        }
    }
    assert!(checked >= 4, "only {checked} transcripts in the README");
}

/// The README stays the short path it is meant to be.
#[test]
fn the_readme_is_at_most_2500_words() {
    let words = readme().split_whitespace().count();
    assert!(words <= 2500, "README.md has {words} words");
}
