//! Every conformance program survives encode → extract (AstSize) → decode: the decoded
//! program checks and computes, under the reference interpreter, bit-identical results to
//! the original, within the case's tolerances of the expected outputs.

use eqfuse_ir::check::check;
use eqfuse_ir::conformance::cases;
use eqfuse_ir::interp::interpret;
use eqfuse_ir::parse::parse;
use eqfuse_ir::print::print_program;
use eqfuse_ir::testgen::identical;
use eqfuse_ir::Value;
use indexmap::IndexMap;
use std::path::Path;

#[test]
fn conformance_programs_roundtrip() {
    let all = cases(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance"))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut ran = 0;
    for case in &all {
        let name = &case.name;
        let src = case.source().unwrap_or_else(|e| panic!("{e}"));
        let Ok(prog) = parse(&src) else { continue };
        let Ok(checked) = check(&prog) else { continue };
        let decoded = eqfuse_egraph::roundtrip(&checked).unwrap_or_else(|e| panic!("{name}: {e}"));
        let text = print_program(&decoded);
        // the same term as a RecExpr (no class names known) decodes to a program too
        let enc = eqfuse_egraph::encode(&checked).unwrap_or_else(|e| panic!("{name}: {e}"));
        let (_, term) = egg::Extractor::new(&enc.egraph, egg::AstSize).find_best(enc.root);
        let sig = eqfuse_egraph::Signature::of(&enc);
        let via_rec = eqfuse_egraph::decode_recexpr(&sig, &term).unwrap_or_else(|e| panic!("{name}: {e}"));
        let rec_checked =
            check(&via_rec).unwrap_or_else(|e| panic!("{name}: {e}\n{}", print_program(&via_rec)));
        let reparsed =
            parse(&text).unwrap_or_else(|e| panic!("{name}: decoded text does not parse: {e}\n{text}"));
        let dchecked =
            check(&reparsed).unwrap_or_else(|e| panic!("{name}: decoded does not check: {e}\n{text}"));
        let inputs = case.inputs().unwrap_or_else(|e| panic!("{name}: {e}"));
        let orig = interpret(&checked, &inputs);
        let got = interpret(&dchecked, &inputs);
        if let (Ok(g), Ok(r)) = (&got, interpret(&rec_checked, &inputs)) {
            for (k, v) in g {
                assert!(identical(v, &r[k]), "{name}: RecExpr decoding differs on {k}");
            }
        }
        match (&orig, &got) {
            (Ok(o), Ok(g)) => {
                assert_eq!(o.keys().collect::<Vec<_>>(), g.keys().collect::<Vec<_>>(), "{name}");
                for (k, v) in o {
                    assert!(identical(v, &g[k]), "{name}: output {k} differs from the original\n{text}");
                }
                if let Err(m) = case.compare(g) {
                    panic!("{name}: {m}\n{text}");
                }
            }
            (Err(a), Err(b)) => assert_eq!(a.code, b.code, "{name}: {a} vs {b}"),
            _ => panic!("{name}: original {orig:?} but decoded {got:?}\n{text}"),
        }
        ran += 1;
    }
    assert!(ran >= 19, "only {ran} conformance programs ran");
}

#[test]
fn fused_forms_decode_to_their_definitions() {
    let src = "input xs : f32[n]\noutput s = reduce (+) 0 xs\noutput c = scan (+) 0 xs";
    let checked = check(&parse(src).expect("parse")).expect("check");
    let enc = eqfuse_egraph::encode(&checked).expect("encode");
    let sig = eqfuse_egraph::Signature::of(&enc);
    let term: egg::RecExpr<eqfuse_egraph::ArrayLang> = "(outputs \
        (redomap (lam <f32,f32> (+ $1:f32 $0:f32)) 0.0:f32 (shape #n) (lam <i64> (index @xs $0:i64))) \
        (scanomap (lam <f32,f32> (+ $1:f32 $0:f32)) 0.0:f32 (shape #n) (lam <i64> (index @xs $0:i64))))"
        .parse()
        .expect("term");
    let p = eqfuse_egraph::decode_recexpr(&sig, &term).expect("decode");
    let text = print_program(&p);
    assert!(text.contains("output s = reduce (+) 0.0 (generate [n] (\\x0 -> xs[x0]))"), "{text}");
    let dchecked = check(&p).expect("check");
    let xs = Value::F32(ndarray::arr1(&[1.5f32, -2.0, 0.25]).into_dyn());
    let inputs: IndexMap<String, Value> = [("xs".to_string(), xs)].into_iter().collect();
    let a = interpret(&checked, &inputs).expect("run");
    let b = interpret(&dchecked, &inputs).expect("run");
    for (k, v) in &a {
        assert!(identical(v, &b[k]), "{k}");
    }
    let multi: egg::RecExpr<eqfuse_egraph::ArrayLang> =
        "(outputs (multi @xs @xs) @xs)".parse().expect("term");
    assert!(eqfuse_egraph::decode_recexpr(&sig, &multi).is_err());
}

#[test]
fn folded_constants_decode_exactly() {
    let src = "input xs : f32[n]
output a = 0.0 * (-1.0)
output b = i32 7 + 1
output c = f32 0.1 + f32 0.2
output d = map (\\x -> x * (f32 1 / f32 3) + f32 (i64 2.5)) xs
output e = 9223372036854775807 + 1
output f = 1.0 / 0.0
output g = i32 (f64 3000000000)";
    let checked = check(&parse(src).expect("parse")).expect("check");
    let decoded = eqfuse_egraph::roundtrip(&checked).expect("roundtrip");
    let text = print_program(&decoded);
    // everything but d folded to a literal
    for line in text.lines().filter(|l| l.starts_with("output") && !l.starts_with("output d")) {
        assert!(!line.contains('+') && !line.contains('*'), "not folded: {line}");
    }
    assert!(text.contains("output b = i32 8"), "{text}");
    let dchecked = check(&parse(&text).expect("parse")).expect("check");
    let xs = Value::F32(ndarray::arr1(&[1.5f32, -2.0, 0.1]).into_dyn());
    let inputs: IndexMap<String, Value> = [("xs".to_string(), xs)].into_iter().collect();
    let a = interpret(&checked, &inputs).expect("run");
    let b = interpret(&dchecked, &inputs).expect("run");
    for (k, v) in &a {
        assert!(identical(v, &b[k]), "{k}: {v:?} vs {:?}\n{text}", b[k]);
    }
}
