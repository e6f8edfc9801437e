//! # eqfuse-ir
//!
//! The program representation shared by every stage of eqfuse: the `.eqf` language's
//! syntax tree ([`ast`]), its lexer and parser ([`parse`]), the pretty-printer ([`mod@print`]),
//! the type and shape checker ([`check`]), run-time values ([`value`]), `.npy` files
//! ([`npy`]), and the reference interpreter ([`interp`]), the oracle every optimised plan is
//! tested against.
//!
//! ```
//! use eqfuse_ir::{parse::parse, check::check};
//! let prog = parse("input xs : f32[n]\noutput s = reduce (+) 0 xs").unwrap();
//! let checked = check(&prog).unwrap();
//! assert_eq!(checked.outputs["s"].to_string(), "f32");
//! ```

pub mod ast;
pub mod bind;
pub mod builder;
pub mod check;
pub mod checked;
#[cfg(feature = "testgen")]
pub mod conformance;
pub mod error;
pub mod interp;
pub mod lexer;
pub mod math;
pub mod npy;
pub mod parse;
pub mod plan;
pub mod print;
mod report;
pub mod stack;
#[cfg(feature = "testgen")]
pub mod testgen;
pub mod types;
pub mod value;
pub mod warning;

pub use ast::{BinOp, Expr, ExprKind, Item, Limits, Lit, Program, UnOp};
pub use builder::Builder;
pub use error::{Code, Error, Result, Span};
pub use types::{Dim, ElemType, Type};
pub use value::{Scalar, Value};
pub use warning::Warning;
