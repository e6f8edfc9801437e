//! The pretty-printer: a [`Program`] or [`Expr`] back to `.eqf` text.
//!
//! The output parses back to an equal tree (`parse(print(p)) == p`, spans and types aside)
//! and printing is idempotent (print → parse → print gives the same text). Parentheses are
//! the fewest the precedence and left-associativity of the operators need
//! (`a - (b - c)`, `(a - b) - c` prints as `a - b - c`), with these conventions:
//!
//! - `let`, `if`, `loop` and lambdas are parenthesised whenever they are an operand, an argument, a
//!   function or an indexed array; they are bare at the top of an expression and inside
//!   brackets, tuples, `let`/`if` parts and lambda bodies.
//! - Negative literals are always parenthesised: `(-5)`, `(-inf)`, `(-0.0)`.
//! - Floats are printed with Rust's shortest round-trip form and always contain `.` or `e`
//!   (`1.0`, `0.1`, `1e-7`, `1e300`), or are `inf`; they read back bit-exactly.
//! - A one-element tuple prints as `(a,)`, which the parser reads back as a tuple.
//! - Hexadecimal literals print in lowercase hexadecimal (`0xff`); `loop` prints its initial
//!   state, count and condition parenthesised when they are open forms, its body bare.
//! - A lambda's tuple parameters are desugared by the parser, so they print as the plain
//!   parameters and `let` patterns they became (`\arg'0 -> let (a, i) = arg'0 in ...`),
//!   which read back to the same tree.
//!
//! Trees the parser never makes cannot all read back: `UnOp::Neg` of a non-negative numeric
//! literal prints as `-(5)`, which reads back as the folded literal `-5` (the builder folds
//! such negations as the parser does); an integer literal above `i64::MAX` (the parser
//! writes those as [`Lit::Hex`]) prints in hexadecimal and reads back as a `Lit::Hex` of the
//! same value; below `i64::MIN` it prints as `(-0x...)`, as the parser reads it. An empty
//! shape, an application without arguments, a lambda without parameters, a tuple pattern of
//! fewer than two names, a name that is a keyword and a NaN literal (printed `(0.0 / 0.0)`)
//! are not valid syntax trees either.

use std::fmt;

use crate::ast::{BinOp, Expr, ExprKind, Item, Lit, LoopForm, Program, UnOp};

/// Binding strength of the forms, loosest first. Binary operators use their
/// [`crate::ast::BinOp::precedence`], 1 to 9.
const OPEN: u8 = 0;
/// Unary `-` and `!`.
const UNARY: u8 = BinOp::TIGHTEST + 1;
/// Application `f a b`.
const APP: u8 = BinOp::TIGHTEST + 2;
/// Indexing `a[i]`.
const POSTFIX: u8 = BinOp::TIGHTEST + 3;
/// Names, literals, parenthesised forms, sections, tuples, shapes.
const ATOM: u8 = BinOp::TIGHTEST + 4;

/// Prints a whole program as `.eqf` text that parses back to the same program: one item per
/// line, each line ending with a newline.
pub fn print_program(p: &Program) -> String {
    let mut out = String::new();
    for item in &p.items {
        match item {
            Item::Input { name, ty, .. } => {
                out.push_str("input ");
                out.push_str(name);
                out.push_str(" : ");
                out.push_str(&ty.to_string());
            }
            Item::Let { name, value, .. } => {
                out.push_str("let ");
                out.push_str(name);
                out.push_str(" = ");
                write_expr(&mut out, value, OPEN);
            }
            Item::LetTuple { names, value, .. } => {
                out.push_str("let (");
                out.push_str(&names.join(", "));
                out.push_str(") = ");
                write_expr(&mut out, value, OPEN);
            }
            Item::Output { name, value, .. } => {
                out.push_str("output ");
                out.push_str(name);
                if let Some(v) = value {
                    out.push_str(" = ");
                    write_expr(&mut out, v, OPEN);
                }
            }
        }
        out.push('\n');
    }
    out
}

/// Prints one expression on one line, fully re-parseable.
pub fn print_expr(e: &Expr) -> String {
    let mut out = String::new();
    write_expr(&mut out, e, OPEN);
    out
}

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print_program(self))
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print_expr(self))
    }
}

/// How tightly the printed form of `e` binds.
fn level(e: &Expr) -> u8 {
    match &e.kind {
        ExprKind::Let { .. }
        | ExprKind::LetTuple { .. }
        | ExprKind::Loop { .. }
        | ExprKind::If { .. }
        | ExprKind::Lambda { .. } => OPEN,
        ExprKind::Binary { op, .. } => op.precedence(),
        ExprKind::Unary { .. } => UNARY,
        ExprKind::Apply { .. } => APP,
        ExprKind::Index { .. } => POSTFIX,
        ExprKind::Lit(_)
        | ExprKind::Var(_)
        | ExprKind::Tuple(_)
        | ExprKind::Section(_)
        | ExprKind::Shape(_) => ATOM,
    }
}

/// Writes `e` where a form binding at least as tightly as `min` is needed, adding
/// parentheses when `e` binds more loosely.
fn write_expr(out: &mut String, e: &Expr, min: u8) {
    if level(e) < min {
        out.push('(');
        write_bare(out, e);
        out.push(')');
    } else {
        write_bare(out, e);
    }
}

/// Writes `es` separated by `, `, each at the loosest level.
fn write_list(out: &mut String, es: &[Expr]) {
    for (i, e) in es.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_expr(out, e, OPEN);
    }
}

fn write_bare(out: &mut String, e: &Expr) {
    match &e.kind {
        ExprKind::Lit(l) => write_lit(out, *l),
        ExprKind::Var(n) => out.push_str(n),
        ExprKind::Let { name, value, body } => {
            out.push_str("let ");
            out.push_str(name);
            out.push_str(" = ");
            write_expr(out, value, OPEN);
            out.push_str(" in ");
            write_expr(out, body, OPEN);
        }
        ExprKind::LetTuple { names, value, body } => {
            out.push_str("let (");
            out.push_str(&names.join(", "));
            out.push_str(") = ");
            write_expr(out, value, OPEN);
            out.push_str(" in ");
            write_expr(out, body, OPEN);
        }
        ExprKind::Loop { pat, tuple, init, form, body } => {
            out.push_str("loop ");
            if *tuple {
                out.push('(');
                out.push_str(&pat.join(", "));
                out.push(')');
            } else {
                out.push_str(&pat.join(", "));
            }
            out.push_str(" = ");
            // the initial state ends at `for`/`while`: an open form there would swallow them
            write_expr(out, init, OPEN + 1);
            match form {
                LoopForm::For { var, count } => {
                    out.push_str(" for ");
                    out.push_str(var);
                    out.push_str(" < ");
                    write_expr(out, count, OPEN + 1);
                }
                LoopForm::While { cond } => {
                    out.push_str(" while ");
                    write_expr(out, cond, OPEN + 1);
                }
            }
            out.push_str(" do ");
            write_expr(out, body, OPEN);
        }
        ExprKind::If { cond, then_, else_ } => {
            out.push_str("if ");
            write_expr(out, cond, OPEN);
            out.push_str(" then ");
            write_expr(out, then_, OPEN);
            out.push_str(" else ");
            write_expr(out, else_, OPEN);
        }
        ExprKind::Lambda { params, body } => {
            out.push('\\');
            out.push_str(&params.join(" "));
            out.push_str(" -> ");
            write_expr(out, body, OPEN);
        }
        ExprKind::Binary { op, lhs, rhs } => {
            let p = op.precedence();
            write_expr(out, lhs, p);
            out.push(' ');
            out.push_str(op.symbol());
            out.push(' ');
            write_expr(out, rhs, p + 1);
        }
        ExprKind::Unary { op, operand } => {
            out.push_str(op.symbol());
            match operand.kind {
                // Only the builder makes this; it reads back as the folded literal.
                ExprKind::Lit(Lit::Int(_) | Lit::Hex(_) | Lit::Float(_)) if !is_negative_lit(operand) => {
                    out.push('(');
                    write_bare(out, operand);
                    out.push(')');
                }
                _ => {
                    // `--` would start a comment.
                    if *op == UnOp::Neg && matches!(operand.kind, ExprKind::Unary { op: UnOp::Neg, .. }) {
                        out.push(' ');
                    }
                    write_expr(out, operand, UNARY);
                }
            }
        }
        ExprKind::Apply { func, args } => {
            write_expr(out, func, POSTFIX);
            for a in args {
                out.push(' ');
                write_expr(out, a, POSTFIX);
            }
        }
        ExprKind::Index { array, indices } => {
            write_expr(out, array, POSTFIX);
            out.push('[');
            write_list(out, indices);
            out.push(']');
        }
        ExprKind::Tuple(es) => {
            out.push('(');
            write_list(out, es);
            if es.len() == 1 {
                out.push(',');
            }
            out.push(')');
        }
        ExprKind::Section(op) => {
            out.push('(');
            out.push_str(op.symbol());
            out.push(')');
        }
        ExprKind::Shape(es) => {
            out.push('[');
            write_list(out, es);
            out.push(']');
        }
    }
}

/// Whether `e` is a literal printed with a leading `-`.
fn is_negative_lit(e: &Expr) -> bool {
    match e.kind {
        ExprKind::Lit(Lit::Int(v)) => v < 0,
        ExprKind::Lit(Lit::Float(f)) => f.is_sign_negative() && !f.is_nan(),
        _ => false,
    }
}

fn write_lit(out: &mut String, l: Lit) {
    match l {
        Lit::Bool(b) => out.push_str(if b { "true" } else { "false" }),
        // every integer literal the lexer can read (to `u64::MAX`, negated or not) is printed
        // in decimal and reads back as the same `Lit::Int`
        Lit::Int(v) if v < 0 => {
            out.push_str("(-");
            out.push_str(&v.unsigned_abs().to_string());
            out.push(')');
        }
        Lit::Int(v) => out.push_str(&v.to_string()),
        Lit::Hex(h) => out.push_str(&format!("{h:#x}")),
        Lit::Float(f) if f.is_nan() => out.push_str("(0.0 / 0.0)"),
        Lit::Float(f) if f.is_sign_negative() => {
            out.push_str("(-");
            out.push_str(&float_text(-f));
            out.push(')');
        }
        Lit::Float(f) => out.push_str(&float_text(f)),
    }
}

/// The text of a non-negative, non-NaN float that reads back bit-exactly and as a float.
fn float_text(f: f64) -> String {
    if f.is_infinite() {
        return "inf".to_string();
    }
    let mut s = format!("{f:?}");
    if !s.contains(['.', 'e', 'E']) {
        s.push_str(".0");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_look_like_floats() {
        for f in [0.0, 1.0, 0.1, 1e-7, 1e15, 1e16, 1e300, 5e-324, f64::MAX, f64::MIN_POSITIVE, 123456789.0] {
            let s = float_text(f);
            assert!(s.contains('.') || s.contains('e'), "{s}");
            assert_eq!(s.parse::<f64>().ok().map(f64::to_bits), Some(f.to_bits()), "{s}");
        }
        assert_eq!(float_text(f64::INFINITY), "inf");
    }
}
