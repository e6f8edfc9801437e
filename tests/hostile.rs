//! Hostile input through the `eqfuse` binary, on every backend present (the reference
//! interpreter, the CPU, and CUDA where a GPU is): every error-code conformance case, and a
//! table of programs, data files and limits that try to crash it. Each must end with status
//! 0 and exactly the right outputs, or status 1 and the right `error[E-CODE]` — never a
//! panic, an abort, a stack overflow or another status.

mod common;

use common::scratch;
use eqfuse::ir::npy;
use eqfuse::{ElemType, Scalar, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The backends to run on: the reference interpreter and the CPU always, CUDA where present.
fn backends() -> Vec<&'static str> {
    let mut b = vec!["reference", "cpu"];
    if eqfuse_exec_cuda::available() {
        b.push("cuda");
    }
    b
}

fn eqfuse(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_eqfuse")).args(args).output().expect("start eqfuse")
}

/// What a run must end with.
enum Want {
    /// Status 0 and exactly these stdout lines (`NAME = summary`), in order.
    Ok(&'static [&'static str]),
    /// Status 1 and a first stderr line `error[CODE]: ...` that contains the text.
    Fails(&'static str, &'static str),
}

/// An input file: a value, or raw bytes (a hostile `.npy`), or a path (`/dev/zero`).
enum Input {
    Value(&'static str, Value),
    Bytes(&'static str, Vec<u8>),
    Path(&'static str, &'static str),
}

struct Case {
    name: &'static str,
    program: String,
    inputs: Vec<Input>,
    args: &'static [&'static str],
    want: Want,
}

fn case(name: &'static str, program: impl Into<String>, want: Want) -> Case {
    Case { name, program: program.into(), inputs: Vec::new(), args: &[], want }
}

impl Case {
    fn input(mut self, i: Input) -> Case {
        self.inputs.push(i);
        self
    }
    fn args(mut self, args: &'static [&'static str]) -> Case {
        self.args = args;
        self
    }
}

fn arr(elem: ElemType, shape: &[usize], xs: &[Scalar]) -> Value {
    Value::from_scalars(elem, shape, xs).expect("a value of that shape")
}

fn f64s(shape: &[usize], xs: &[f64]) -> Value {
    arr(ElemType::F64, shape, &xs.iter().map(|&x| Scalar::F64(x)).collect::<Vec<_>>())
}

fn f32s(shape: &[usize], xs: &[f32]) -> Value {
    arr(ElemType::F32, shape, &xs.iter().map(|&x| Scalar::F32(x)).collect::<Vec<_>>())
}

/// A `.npy` file with the given header dictionary and data bytes.
fn npy_bytes(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut h = dict.to_string();
    while !(10 + h.len() + 1).is_multiple_of(64) {
        h.push(' ');
    }
    h.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&u16::try_from(h.len()).expect("short header").to_le_bytes());
    out.extend_from_slice(h.as_bytes());
    out.extend_from_slice(data);
    out
}

fn f32_header(shape: &str) -> String {
    format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}")
}

/// Runs one case on one backend; returns a description of what went wrong, if anything.
fn run_case(c: &Case, backend: &str, dir: &Path) -> Option<String> {
    let prog = dir.join("program.eqf");
    std::fs::write(&prog, &c.program).expect("write the program");
    let mut args: Vec<String> =
        vec!["run".into(), prog.display().to_string(), "--backend".into(), backend.into()];
    for i in &c.inputs {
        let (name, path) = match i {
            Input::Value(name, v) => {
                let p = dir.join(format!("{name}.npy"));
                npy::write_value(&p, v).expect("write an input");
                (name, p)
            }
            Input::Bytes(name, b) => {
                let p = dir.join(format!("{name}.npy"));
                std::fs::write(&p, b).expect("write an input");
                (name, p)
            }
            Input::Path(name, p) => (name, PathBuf::from(p)),
        };
        args.push("--input".into());
        args.push(format!("{name}={}", path.display()));
    }
    args.extend(c.args.iter().map(|s| s.to_string()));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = eqfuse(&argv);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let what = format!(
        "{} on {backend}: status {:?}\nstdout: {stdout}\nstderr: {}",
        c.name,
        out.status.code(),
        clip(&stderr)
    );
    if stderr.len() > 16 << 10 {
        return Some(format!("{what}\nstderr is {} bytes long", stderr.len()));
    }
    match c.want {
        Want::Ok(lines) => {
            let got: Vec<&str> = stdout.lines().collect();
            (out.status.code() != Some(0) || got != lines).then(|| format!("{what}\nwant: {lines:?}"))
        }
        Want::Fails(code, needle) => {
            let first = stderr.lines().next().unwrap_or("");
            let ok = out.status.code() == Some(1)
                && first.starts_with(&format!("error[{code}]: "))
                && first.contains(needle);
            (!ok).then(|| format!("{what}\nwant: error[{code}] containing `{needle}`"))
        }
    }
}

fn clip(s: &str) -> String {
    s.chars().take(2000).collect()
}

/// Runs every case on every backend; fails listing every case that went wrong.
fn run_table(table: &[Case], label: &str) {
    let mut failures = Vec::new();
    for (k, c) in table.iter().enumerate() {
        for backend in backends() {
            let dir = scratch(&format!("hostile-{label}-{k}-{backend}"));
            if let Some(f) = run_case(c, backend, &dir) {
                failures.push(f);
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n\n{}", failures.len(), failures.join("\n\n"));
}

#[test]
fn every_error_conformance_case_fails_with_its_code_on_every_backend() {
    let cases = common::project_cases();
    let mut seen = 0;
    let mut failures = Vec::new();
    for c in cases.iter().filter(|c| c.spec.error.is_some()) {
        let code = c.spec.error.as_deref().unwrap_or("");
        for backend in backends() {
            let prog = c.program().display().to_string();
            let mut args = vec!["run", prog.as_str(), "--backend", backend];
            let inputs = c.inputs_dir().display().to_string();
            if c.inputs_dir().is_dir() {
                args.extend(["--inputs", inputs.as_str()]);
            }
            let out = eqfuse(&args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            // the error is the first line after any notes (a program the optimiser does not
            // compile yet says it runs on the reference interpreter)
            let first = stderr.lines().find(|l| !l.starts_with("eqfuse: note: ")).unwrap_or("");
            if out.status.code() != Some(1) || !first.starts_with(&format!("error[{code}]: ")) {
                failures.push(format!(
                    "{} on {backend}: status {:?}, stderr {}",
                    c.name,
                    out.status.code(),
                    clip(&stderr)
                ));
            }
            seen += 1;
        }
    }
    assert!(seen >= 6 * backends().len(), "only {seen} error cases ran");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn deep_and_long_programs_are_limits_not_crashes() {
    const N: usize = 200_000;
    let nest = |open: &str, leaf: &str, close: &str| {
        format!("output y = {}{leaf}{}\n", open.repeat(N), close.repeat(N))
    };
    let table = vec![
        case("parentheses", nest("(", "1", ")"), Want::Fails("E-LIMIT", "nested deeper than 2000")),
        case("brackets", nest("[", "", "]"), Want::Fails("E-LIMIT", "nested deeper than 2000")),
        case("unary minus", nest("- ", "1", ""), Want::Fails("E-LIMIT", "nested deeper than 2000")),
        case("not", nest("!", "true", ""), Want::Fails("E-LIMIT", "nested deeper than 2000")),
        case("lets", nest("let a = 1 in ", "a", ""), Want::Fails("E-LIMIT", "nested deeper than 2000")),
        case("ifs", nest("if true then ", "1", " else 2"), Want::Fails("E-LIMIT", "nested deeper than 2000")),
        case("lambdas", nest("\\x -> ", "1", ""), Want::Fails("E-LIMIT", "nested deeper than 2000")),
        case("indexing", nest("", "a", "[0]"), Want::Fails("E-LIMIT", "nested deeper than 2000")),
        case(
            "a long sum",
            format!("output y = 1{}\n", " + 1".repeat(N)),
            Want::Fails("E-LIMIT", "nested deeper"),
        ),
        case("a deeper limit", nest("(", "1", ")"), Want::Fails("E-LIMIT", "nested deeper than 2000"))
            .args(&["--max-depth", "2000"]),
        // messages quoting huge tokens stay short (`run_case` checks stderr's length)
        case(
            "a million-digit literal",
            format!("output y = {}\n", "9".repeat(1_000_000)),
            Want::Fails("E-PARSE", "too large"),
        ),
        case(
            "a million-character name",
            format!("output y = z{}\n", "a".repeat(1_000_000)),
            Want::Fails("E-TYPE", "more characters"),
        ),
        case(
            "a program over its size limit",
            "output y = 1\n",
            Want::Fails("E-LIMIT", "longer than the limit"),
        )
        .args(&["--max-program-bytes", "5"]),
        // a chain of maps is shallow, but fused into one lambda it nests 330 deep twice over
        case(
            "a long chain of maps",
            format!(
                "input xs : i64[n]\n{}output y = a330\n",
                (1..=330)
                    .map(|i| format!("let a{i} = map (\\x -> x * 2 + 1) a{}\n", i - 1))
                    .collect::<String>()
            )
            .replace("a0\n", "xs\n"),
            Want::Ok(&["y = i64[3] [-1, -1, -1]"]),
        )
        .input(Input::Value("xs", Value::from(ndarray::arr1(&[0i64, 5, -7]).into_dyn()))),
    ];
    run_table(&table, "deep");
}

/// A reshape to a size read at run time.
const RESHAPE: &str = "input n : i64\noutput y = reduce (+) 0 (reshape [n, 2] (iota 4))\n";
/// A reshape of an empty array to a size read at run time.
const RESHAPE_EMPTY: &str = "input n : i64\noutput y = reshape [n, 4] (iota 0)\n";

#[test]
fn huge_sizes_are_limits_before_allocating() {
    let table = vec![
        case("iota", "output y = iota 10000000000000\n", Want::Fails("E-LIMIT", "")),
        case(
            "a fill whose size overflows i64",
            "output y = fill [4000000000, 4000000000, 4000000000] 0\n",
            Want::Fails("E-LIMIT", "overflows i64"),
        ),
        case(
            "a generate whose size overflows i64",
            "output y = generate [3037000500, 3037000500] (\\i j -> i + j)\n",
            Want::Fails("E-LIMIT", "overflows i64"),
        ),
        case(
            "MAX by 2",
            "output y = fill [9223372036854775807, 2] 1.5\n",
            Want::Fails("E-LIMIT", "overflows i64"),
        ),
        case("a negative size", "output y = iota (-5)\n", Want::Fails("E-SHAPE", "negative")),
        case("a reshape whose size overflows i64", RESHAPE, Want::Fails("E-LIMIT", "overflows i64"))
            .input(Input::Value("n", Value::scalar(Scalar::I64(i64::MAX)))),
        // 2^62 * 4 wraps to 0, the size of the empty array
        case("a reshape whose size wraps to 0", RESHAPE_EMPTY, Want::Fails("E-LIMIT", "overflows i64"))
            .input(Input::Value("n", Value::scalar(Scalar::I64(1 << 62)))),
        case("a reshape to a negative size", RESHAPE, Want::Fails("E-SHAPE", "negative"))
            .input(Input::Value("n", Value::scalar(Scalar::I64(-2)))),
        case("a reshape to a huge size", RESHAPE, Want::Fails("E-SHAPE", "reshape"))
            .input(Input::Value("n", Value::scalar(Scalar::I64(1_000_000_000_000)))),
        case("a reshape that fits", RESHAPE, Want::Ok(&["y = i64[2] [1, 5]"]))
            .input(Input::Value("n", Value::scalar(Scalar::I64(2)))),
        case("a negative fill", "output y = fill [3, -1] 0\n", Want::Fails("E-SHAPE", "negative")),
        case(
            "a slice past MAX",
            "output y = slice (iota 3) 9223372036854775807 2\n",
            Want::Fails("E-INDEX", ""),
        ),
        case(
            "the memory limit",
            "output y = iota 1000\n",
            Want::Fails("E-LIMIT", "over the limit of 4000 bytes"),
        )
        .args(&["--max-array-bytes", "4000"]),
        case(
            "just under the memory limit",
            "output y = reduce (+) 0 (iota 500)\n",
            Want::Ok(&["y = 124750 (i64)"]),
        )
        .args(&["--max-array-bytes", "4000"]),
        case(
            "an input over the memory limit",
            "input xs : f64[n]\noutput y = reduce (+) 0 xs\n",
            Want::Fails("E-LIMIT", "over the limit of 16 bytes"),
        )
        .input(Input::Value("xs", f64s(&[3], &[1.0, 2.0, 3.0])))
        .args(&["--max-array-bytes", "16"]),
        case(
            "a run past its time",
            "output y = iterate 100000000000 (\\x -> x + 1) 0\n",
            Want::Fails("E-LIMIT", "timed out"),
        )
        .args(&["--timeout", "1"]),
        case("an endless program file", "", Want::Fails("E-LIMIT", "longer than the limit")),
    ];
    // the last case reads `/dev/zero` as its program
    let (table, endless) = table.split_at(table.len() - 1);
    run_table(table, "sizes");
    if Path::new("/dev/zero").exists() {
        for backend in backends() {
            let out = eqfuse(&["run", "/dev/zero", "--backend", backend]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{}: {stderr}", endless[0].name);
            assert!(
                stderr.starts_with("error[E-LIMIT]: ") && stderr.contains("longer than the limit"),
                "{stderr}"
            );
        }
    }
}

#[test]
fn arithmetic_edge_cases_give_the_language_results() {
    let table = vec![
        case(
            "MIN / -1 and MIN % -1",
            "input a : i64\ninput b : i64\ninput c : i32\ninput d : i32\n\
             output q = a / b\noutput r = a % b\noutput q32 = c / d\noutput r32 = c % d\n",
            Want::Ok(&["q = -9223372036854775808 (i64)", "r = 0 (i64)", "q32 = -2147483648 (i32)", "r32 = 0 (i32)"]),
        )
        .input(Input::Value("a", Value::scalar(Scalar::I64(i64::MIN))))
        .input(Input::Value("b", Value::scalar(Scalar::I64(-1))))
        .input(Input::Value("c", Value::scalar(Scalar::I32(i32::MIN))))
        .input(Input::Value("d", Value::scalar(Scalar::I32(-1)))),
        case(
            "MIN / -1 elementwise",
            "input xs : i64[n]\noutput y = map (\\x -> x / (-1)) xs\noutput z = map (\\x -> x % (-1)) xs\n",
            Want::Ok(&["y = i64[2] [-9223372036854775808, -9223372036854775807]", "z = i64[2] [0, 0]"]),
        )
        .input(Input::Value("xs", Value::from(ndarray::arr1(&[i64::MIN, i64::MAX]).into_dyn()))),
        case(
            "the optimiser at its smallest limits, unfused",
            "input xs : i64[n]\noutput y = reduce (+) 0 (map (\\x -> x / (-1)) (reverse xs))\n",
            Want::Ok(&["y = -1 (i64)"]),
        )
        .input(Input::Value("xs", Value::from(ndarray::arr1(&[i64::MIN, 2, i64::MAX]).into_dyn())))
        .args(&["--node-limit", "1", "--iter-limit", "1", "--time-limit-ms", "1", "--no-opt"]),
        case(
            "overflow wraps",
            "input xs : i32[n]\noutput y = map (\\x -> x + 1) xs\noutput z = map (\\x -> x * x) xs\n",
            Want::Ok(&["y = i32[2] [-2147483648, -2147483646]", "z = i32[2] [1, 1]"]),
        )
        .input(Input::Value("xs", Value::from(ndarray::arr1(&[i32::MAX, i32::MIN + 1]).into_dyn()))),
        case(
            "out-of-range casts saturate, NaN becomes 0",
            "input xs : f64[n]\noutput a = map (\\x -> i32 x) xs\noutput b = map (\\x -> i64 x) xs\noutput c = map (\\x -> f32 x) xs\n",
            Want::Ok(&[
                "a = i32[6] [2147483647, -2147483648, 0, 2147483647, -2147483648, -1]",
                "b = i64[6] [9223372036854775807, -9223372036854775808, 0, 9223372036854775807, -9223372036854775808, -1]",
                "c = f32[6] [inf, -inf, NaN, inf, -inf, -1.5]",
            ]),
        )
        .input(Input::Value("xs", f64s(&[6], &[1e300, -1e300, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -1.5]))),
        case(
            "wide integers to narrow wrap",
            "input xs : i64[n]\noutput y = map (\\x -> i32 x) xs\n",
            Want::Ok(&["y = i32[2] [-1, 0]"]),
        )
        .input(Input::Value("xs", Value::from(ndarray::arr1(&[i64::MAX, 1i64 << 32]).into_dyn()))),
        case(
            "NaN and infinities propagate",
            "input xs : f32[n]\noutput m = reduce max (-inf) xs\noutput s = reduce (+) 0 xs\n\
             output z = map (\\x -> x * 0) xs\noutput lt = map (\\x -> x < 1) xs\n",
            Want::Ok(&["m = NaN (f32)", "s = NaN (f32)", "z = f32[4] [NaN, NaN, NaN, 0.0]", "lt = bool[4] [false, false, true, true]"]),
        )
        .input(Input::Value("xs", f32s(&[4], &[f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.5]))),
        case(
            "an index in an untaken branch",
            "input xs : f64[n]\noutput y = map (\\i -> if i < 3 then xs[i] else -1.0) (iota 5)\n\
             output z = if length xs > 10 then xs[10] else 0.0\n",
            Want::Ok(&["y = f64[5] [1.0, 2.0, 3.0, -1.0, -1.0]", "z = 0.0 (f64)"]),
        )
        .input(Input::Value("xs", f64s(&[3], &[1.0, 2.0, 3.0]))),
        case(
            "a division by zero in an untaken branch",
            "input ks : i64[n]\noutput y = map (\\k -> if k == 0 then 0 else 100 / k) ks\n",
            Want::Ok(&["y = i64[3] [0, 50, -100]"]),
        )
        .input(Input::Value("ks", Value::from(ndarray::arr1(&[0i64, 2, -1]).into_dyn()))),
        case("an index out of bounds", "input xs : f64[n]\noutput y = xs[3]\n", Want::Fails("E-INDEX", ""))
            .input(Input::Value("xs", f64s(&[3], &[1.0, 2.0, 3.0]))),
        case("a negative index", "input xs : f64[n]\noutput y = map (\\i -> xs[i - 1]) (iota 3)\n", Want::Fails("E-INDEX", ""))
            .input(Input::Value("xs", f64s(&[3], &[1.0, 2.0, 3.0]))),
        case("a division by zero", "input ks : i64[n]\noutput y = map (\\k -> 1 / k) ks\n", Want::Fails("E-DIV-ZERO", ""))
            .input(Input::Value("ks", Value::from(ndarray::arr1(&[1i64, 0]).into_dyn()))),
        case("a remainder by zero", "input ks : i32[n]\noutput y = map (\\k -> k % (k - k)) ks\n", Want::Fails("E-DIV-ZERO", ""))
            .input(Input::Value("ks", Value::from(ndarray::arr1(&[3i32]).into_dyn()))),
    ];
    run_table(&table, "arith");
}

#[test]
fn empty_arrays_of_every_rank() {
    let table = vec![
        case(
            "rank 1",
            "input xs : f32[n]\noutput s = reduce (+) 0 xs\noutput y = map (\\x -> x + 1) xs\n\
             output c = scan (+) 0 xs\noutput f = filter (\\x -> x > 0) xs\noutput r = reverse xs\n",
            Want::Ok(&["s = 0.0 (f32)", "y = f32[0] []", "c = f32[0] []", "f = f32[0] []", "r = f32[0] []"]),
        )
        .input(Input::Value("xs", f32s(&[0], &[]))),
        case(
            "rank 2, empty rows",
            "input m : f64[r, c]\noutput s = reduce (+) 0 m\noutput t = transpose m\n",
            Want::Ok(&["s = f64[3] [0.0, 0.0, 0.0]", "t = f64[0, 3] []"]),
        )
        .input(Input::Value("m", f64s(&[3, 0], &[]))),
        case(
            "rank 2, no rows",
            "input m : f64[r, c]\noutput s = reduce (+) 0 m\noutput y = map (\\x -> x * 2.0) m\n",
            Want::Ok(&["s = f64[0] []", "y = f64[0, 4] []"]),
        )
        .input(Input::Value("m", f64s(&[0, 4], &[]))),
        case(
            "rank 3",
            "input a : i32[p, q, r]\noutput s = reduce max 0 a\noutput y = map (\\x -> x / 0) a\n",
            Want::Ok(&["s = i32[2, 0] []", "y = i32[2, 0, 4] []"]),
        )
        .input(Input::Value("a", arr(ElemType::I32, &[2, 0, 4], &[]))),
        case(
            "an empty gather and iota 0",
            "input xs : f64[n]\ninput idx : i64[k]\noutput g = gather xs idx\noutput i = iota 0\n",
            Want::Ok(&["g = f64[0] []", "i = i64[0] []"]),
        )
        .input(Input::Value("xs", f64s(&[0], &[])))
        .input(Input::Value("idx", arr(ElemType::I64, &[0], &[]))),
        case("indexing an empty array", "input xs : f64[n]\noutput y = xs[0]\n", Want::Fails("E-INDEX", ""))
            .input(Input::Value("xs", f64s(&[0], &[]))),
    ];
    run_table(&table, "empty");
}

#[test]
fn hostile_npy_files_are_input_errors_or_converted() {
    let prog = "input xs : f32[n]\noutput y = map (\\x -> x + 1) xs\n";
    let le = |xs: &[f32]| xs.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let mut non_utf8 = b"\x93NUMPY\x01\x00\x04\x00".to_vec();
    non_utf8.extend_from_slice(&[0xff, 0xfe, 0xfd, b'\n']);
    let mut long_header = b"\x93NUMPY\x02\x00\xff\xff\xff\x7f".to_vec();
    long_header.extend_from_slice(b"{'descr': '<f4'");
    let table = vec![
        case("truncated data", prog, Want::Fails("E-INPUT", "holds 8 bytes of data"))
            .input(Input::Bytes("xs", npy_bytes(&f32_header("(3,)"), &le(&[1.0, 2.0])))),
        case("trailing data", prog, Want::Fails("E-INPUT", "holds 16 bytes of data"))
            .input(Input::Bytes("xs", npy_bytes(&f32_header("(3,)"), &le(&[1.0, 2.0, 3.0, 4.0])))),
        case("a truncated header", prog, Want::Fails("E-INPUT", "truncated header"))
            .input(Input::Bytes("xs", npy_bytes(&f32_header("(3,)"), &[])[..20].to_vec())),
        case("a huge declared shape", prog, Want::Fails("E-INPUT", ""))
            .input(Input::Bytes("xs", npy_bytes(&f32_header("(100000000000, 100000000000)"), &le(&[1.0])))),
        case("a shape too large to exist", prog, Want::Fails("E-INPUT", "too large to exist"))
            .input(Input::Bytes("xs", npy_bytes(&f32_header("(18446744073709551615, 2)"), &[]))),
        case("a header that claims 2 GiB", prog, Want::Fails("E-INPUT", "the header claims"))
            .input(Input::Bytes("xs", long_header)),
        case("a non-UTF-8 header", prog, Want::Fails("E-INPUT", "not UTF-8"))
            .input(Input::Bytes("xs", non_utf8)),
        case("not .npy at all", prog, Want::Fails("E-INPUT", "magic string"))
            .input(Input::Bytes("xs", b"hello, world".to_vec())),
        case("an empty file", prog, Want::Fails("E-INPUT", "magic string"))
            .input(Input::Bytes("xs", Vec::new())),
        case("an endless file", prog, Want::Fails("E-INPUT", "magic string"))
            .input(Input::Path("xs", "/dev/zero")),
        case("an unsupported dtype", prog, Want::Fails("E-INPUT", "dtype '<f2'")).input(Input::Bytes(
            "xs",
            npy_bytes("{'descr': '<f2', 'fortran_order': False, 'shape': (1,), }", &[1, 0]),
        )),
        case("a structured dtype", prog, Want::Fails("E-INPUT", "structured dtype")).input(Input::Bytes(
            "xs",
            npy_bytes("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", &le(&[1.0])),
        )),
        case("the wrong element type", prog, Want::Fails("E-INPUT", ""))
            .input(Input::Value("xs", f64s(&[1], &[1.0]))),
        case("the wrong rank", prog, Want::Fails("E-INPUT", ""))
            .input(Input::Value("xs", f32s(&[1, 1], &[1.0]))),
        case(
            "a bool that is 7",
            "input bs : bool[n]\noutput y = map (\\b -> !b) bs\n",
            Want::Fails("E-INPUT", ""),
        )
        .input(Input::Bytes(
            "bs",
            npy_bytes("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", &[1, 7]),
        )),
        case("big-endian", prog, Want::Ok(&["y = f32[3] [2.0, 3.5, -1.0]"])).input(Input::Bytes(
            "xs",
            npy_bytes(
                "{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }",
                &[1.0f32, 2.5, -2.0].iter().flat_map(|x| x.to_be_bytes()).collect::<Vec<u8>>(),
            ),
        )),
        case(
            "Fortran order",
            "input m : i64[r, c]\noutput y = map (\\x -> x * 10) m\n",
            Want::Ok(&["y = i64[2, 3]", "[[10, 20, 30],", " [40, 50, 60]]"]),
        )
        .input(Input::Bytes(
            "m",
            npy_bytes(
                "{'descr': '<i8', 'fortran_order': True, 'shape': (2, 3), }",
                &[1i64, 4, 2, 5, 3, 6].iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>(),
            ),
        )),
        case("a big-endian scalar", "input a : i32\noutput y = a + 1\n", Want::Ok(&["y = 8 (i32)"])).input(
            Input::Bytes(
                "a",
                npy_bytes("{'descr': '>i4', 'fortran_order': False, 'shape': (), }", &7i32.to_be_bytes()),
            ),
        ),
    ];
    run_table(&table, "npy");
}
