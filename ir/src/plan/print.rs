//! Printing a plan: a compact, deterministic text form for `eqfuse explain` and snapshot
//! tests.
//!
//! ```text
//! input xs: f32[_]
//! input ys: f32[_]
//! size n: i64
//! s0 m: i64 = scalar() { r0 = load n; r1 = 1; r2 = r0 - r1 } -> r2
//! k0 reduce over [n] -> dot
//!   elem(r0) { r1 = xs[r0]; r2 = ys[r0]; r3 = r1 * r2 } -> r3
//!   dot: f32 = reduce r3
//!     op(r0, r1) { r2 = r0 + r1 } -> r2
//!     ne() { r0 = 0.0f32 } -> r0
//! a0 assert() { r0 = load n; r1 = 0; r2 = r0 >= r1 } -> r2 else E-SHAPE "..."
//! output dot
//! ```
//!
//! Program inputs and sizes come first, then one entry per step (scalars `s<k>`, kernels
//! `k<k>`, asserts `a<k>`, each numbered in its own sequence; the two branches of an `if`
//! step indented under it), then the outputs. A kernel
//! prints its kind, space and results, its element function, then each lane: the value
//! written, its type, what is done with which result of the element function, and the
//! lane's own functions, one per line. A function is printed on one
//! line: its parameter registers, its instructions separated by `;` in braces, its results.
//! Nested blocks are printed inline: `r4 = if r3 { ... } -> r5 else { ... } -> r6`,
//! `r7 = loop r5 times (r6 = r2) { ... } next r9`. Constants of type `i32` and `f32`
//! carry a suffix (`1i32`, `0.5f32`); `i64`, `f64` and `bool` constants do not.

use super::{Arg, Block, Func, Inst, LaneOp, Origin, PermuteDest, Plan, Reg, Step, ValueId, ValueInfo};
use crate::value::Scalar;
use std::fmt::{self, Display, Formatter};

impl Display for Plan {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let names = Some(self.values.as_slice());
        for info in &self.values {
            match info.origin {
                Origin::Input => writeln!(f, "input {}: {}", info.name, ValueType(info))?,
                Origin::Size => writeln!(f, "size {}: {}", info.name, ValueType(info))?,
                Origin::Computed => {}
            }
        }
        write_steps(f, &self.steps, names, &mut (0, 0, 0), "")?;
        for (out, v) in &self.outputs {
            let vn = name(names, *v);
            if *out == vn {
                writeln!(f, "output {out}")?;
            } else {
                writeln!(f, "output {out} = {vn}")?;
            }
        }
        Ok(())
    }
}

/// Writes `steps` (each line indented by `ind`); `counts` numbers scalars, kernels and
/// asserts across the whole plan.
fn write_steps(
    f: &mut Formatter<'_>,
    steps: &[Step],
    names: Option<&[ValueInfo]>,
    counts: &mut (usize, usize, usize),
    ind: &str,
) -> fmt::Result {
    for step in steps {
        match step {
            Step::Scalar { dst, body } => {
                write!(f, "{ind}s{} {}: {} = scalar", counts.0, name(names, *dst), value_type(names, *dst))?;
                write_func(f, body, names)?;
                writeln!(f)?;
                counts.0 += 1;
            }
            Step::Kernel(k) => write_kernel(f, k, names, counts, ind)?,
            Step::RowBlock { kernels, local } | Step::SegmentBlock { kernels, local } => {
                let first = counts.1;
                let per = if matches!(step, Step::SegmentBlock { .. }) { "segment" } else { "block" };
                let kept = if local.is_empty() {
                    String::new()
                } else {
                    let ns: Vec<String> = local.iter().map(|v| name(names, *v)).collect();
                    format!("; kept per {per}, never in memory: {}", ns.join(", "))
                };
                let what = step.block_kind().unwrap_or("row");
                let over = match what {
                    "filter" => "segments, counted with the filter",
                    "scan" => "segments, the scan carried",
                    _ => "blocks of rows",
                };
                writeln!(
                    f,
                    "{ind}{what} block k{first}..k{}: one pass over {over}{kept}",
                    first + kernels.len().saturating_sub(1)
                )?;
                let deeper = format!("{ind}  ");
                for k in kernels {
                    write_kernel(f, k, names, counts, &deeper)?;
                }
            }
            Step::Assert { cond, code, message, .. } => {
                write!(f, "{ind}a{} assert", counts.2)?;
                write_func(f, cond, names)?;
                writeln!(f, " else {code} {message:?}")?;
                counts.2 += 1;
            }
            Step::If { cond, then_steps, then_value, else_steps, else_value, dst } => {
                writeln!(
                    f,
                    "{ind}{}: {} = if {} {{",
                    name(names, *dst),
                    value_type(names, *dst),
                    name(names, *cond)
                )?;
                let deeper = format!("{ind}    ");
                write_steps(f, then_steps, names, counts, &deeper)?;
                writeln!(f, "{ind}}} -> {} else {{", name(names, *then_value))?;
                write_steps(f, else_steps, names, counts, &deeper)?;
                writeln!(f, "{ind}}} -> {}", name(names, *else_value))?;
            }
            Step::Loop(l) => {
                let list = |vs: &[ValueId]| vs.iter().map(|v| name(names, *v)).collect::<Vec<_>>().join(", ");
                write!(f, "{ind}({}) = loop ({}) = ({})", list(&l.dst), list(&l.state), list(&l.init))?;
                let deeper = format!("{ind}    ");
                match &l.form {
                    super::LoopKind::For { count, counter } => {
                        writeln!(f, " for {} < {} {{", name(names, *counter), name(names, *count))?;
                    }
                    super::LoopKind::While { steps, cond } => {
                        writeln!(f, " while {{")?;
                        write_steps(f, steps, names, counts, &deeper)?;
                        writeln!(f, "{ind}}} -> {} do {{", name(names, *cond))?;
                    }
                }
                if !l.hoisted.is_empty() {
                    writeln!(f, "{deeper}-- computed once, before the loop: {}", l.hoisted.join(", "))?;
                }
                write_steps(f, &l.body, names, counts, &deeper)?;
                writeln!(f, "{ind}}} -> ({})", list(&l.next))?;
            }
        }
    }
    Ok(())
}

/// Writes extents, separated by `, `.
fn write_args(f: &mut Formatter<'_>, args: &[Arg], names: Option<&[ValueInfo]>) -> fmt::Result {
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        match a {
            Arg::Const(c) => write!(f, "{c}")?,
            Arg::Value(v) => f.write_str(&name(names, *v))?,
        }
    }
    Ok(())
}

/// Writes kernel `k` (number `counts.1`, which it advances).
fn write_kernel(
    f: &mut Formatter<'_>,
    k: &super::Kernel,
    names: Option<&[ValueInfo]>,
    counts: &mut (usize, usize, usize),
    ind: &str,
) -> fmt::Result {
    write!(f, "{ind}k{} {} over [", counts.1, k.kind)?;
    write_args(f, &k.space, names)?;
    f.write_str("] -> ")?;
    for (i, lane) in k.lanes.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        f.write_str(&name(names, lane.dst))?;
    }
    write!(f, "\n{ind}  elem")?;
    write_func(f, &k.elem, names)?;
    writeln!(f)?;
    if let (Some(c), Some(lane)) = (&k.contraction, k.lanes.first()) {
        let formula = c.formula(&name(names, lane.dst), k.space.len(), |v| name(names, v));
        writeln!(f, "{ind}  as GEMM: {formula}")?;
    }
    if let Some(v) = k.view_of {
        writeln!(f, "{ind}  as a view of {}", name(names, v))?;
    }
    for (i, lane) in k.lanes.iter().enumerate() {
        write!(f, "{ind}  {}: {} = ", name(names, lane.dst), value_type(names, lane.dst))?;
        let what = lane.op.name();
        f.write_str(what)?;
        let w = lane.op.width();
        match k.elem.ret.get(i..i + w) {
            Some([r]) => write!(f, " r{r}")?,
            Some(rs) => {
                let rs: Vec<String> = rs.iter().map(|r| format!("r{r}")).collect();
                write!(f, " ({})", rs.join(", "))?
            }
            None => f.write_str(" ?")?,
        }
        let funcs: Vec<(&str, &Func)> = match &lane.op {
            LaneOp::Generate | LaneOp::Part => vec![],
            LaneOp::Reduce { op, ne } | LaneOp::Scan { op, ne, .. } => {
                vec![("op", op), ("ne", ne)]
            }
            LaneOp::Filter { pred } => vec![("pred", pred)],
            LaneOp::Permute { op, dest, target } => {
                match dest {
                    PermuteDest::Array(v) => write!(f, " into {}", name(names, *v))?,
                    PermuteDest::Fill { shape, value, .. } => {
                        f.write_str(" into fill [")?;
                        write_args(f, shape, names)?;
                        f.write_str("] ")?;
                        write_const(f, *value)?;
                    }
                }
                vec![("target", target), ("op", op)]
            }
        };
        writeln!(f)?;
        for (label, func) in funcs {
            write!(f, "{ind}    {label}")?;
            write_func(f, func, names)?;
            writeln!(f)?;
        }
    }
    counts.1 += 1;
    Ok(())
}

/// A function on its own (values are named `v<id>`, as it does not know the plan's names):
/// `(r0, r1) { r2 = r0 + r1 } -> r2`.
impl Display for Func {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write_func(f, self, None)
    }
}

impl Plan {
    /// Function `func` of this plan, printed with the plan's value names.
    pub fn display_func<'a>(&'a self, func: &'a Func) -> impl Display + 'a {
        FuncIn { func, names: &self.values }
    }
}

/// A function printed with value names.
struct FuncIn<'a> {
    func: &'a Func,
    names: &'a [ValueInfo],
}

impl Display for FuncIn<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write_func(f, self.func, Some(self.names))
    }
}

/// A value's type: `f32`, `f32[_]`, `f32[_, _]`.
struct ValueType<'a>(&'a ValueInfo);

impl Display for ValueType<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.elem)?;
        if self.0.rank > 0 {
            let dims = vec!["_"; self.0.rank];
            write!(f, "[{}]", dims.join(", "))?;
        }
        Ok(())
    }
}

/// The name of value `v` (`v<id>` without the plan's names or when out of range).
fn name(names: Option<&[ValueInfo]>, v: ValueId) -> String {
    match names.and_then(|n| n.get(v)) {
        Some(info) => info.name.clone(),
        None => format!("v{v}"),
    }
}

/// The type of value `v` (`?` when unknown).
fn value_type(names: Option<&[ValueInfo]>, v: ValueId) -> String {
    match names.and_then(|n| n.get(v)) {
        Some(info) => ValueType(info).to_string(),
        None => "?".to_string(),
    }
}

/// `r0, r1`.
fn write_regs(f: &mut Formatter<'_>, regs: &[Reg]) -> fmt::Result {
    for (i, r) in regs.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "r{r}")?;
    }
    Ok(())
}

/// `r0` for one register, `(r0, r1)` otherwise.
fn write_tuple(f: &mut Formatter<'_>, regs: &[Reg]) -> fmt::Result {
    if let [r] = regs {
        return write!(f, "r{r}");
    }
    f.write_str("(")?;
    write_regs(f, regs)?;
    f.write_str(")")
}

/// `(r0, r1) { ... } -> r2`.
fn write_func(f: &mut Formatter<'_>, func: &Func, names: Option<&[ValueInfo]>) -> fmt::Result {
    let params: Vec<Reg> = (0..func.params.len()).map(|k| k as Reg).collect();
    f.write_str("(")?;
    write_regs(f, &params)?;
    f.write_str(") ")?;
    write_block(f, &func.body, names)?;
    f.write_str(" -> ")?;
    write_tuple(f, &func.ret)
}

/// `{ inst; inst }`, or `{ }` when empty. Nested blocks recurse: their depth is bounded by
/// the program's nesting, which the checker limits.
fn write_block(f: &mut Formatter<'_>, block: &Block, names: Option<&[ValueInfo]>) -> fmt::Result {
    f.write_str("{ ")?;
    for (i, inst) in block.insts.iter().enumerate() {
        if i > 0 {
            f.write_str("; ")?;
        }
        write_inst(f, inst, names)?;
    }
    if !block.insts.is_empty() {
        f.write_str(" ")?;
    }
    f.write_str("}")
}

/// A constant: `1`, `2.5`, `true`, `1i32`, `0.5f32`.
fn write_const(f: &mut Formatter<'_>, s: Scalar) -> fmt::Result {
    match s {
        Scalar::I32(v) => write!(f, "{v}i32"),
        Scalar::F32(v) => write!(f, "{v:?}f32"),
        Scalar::I8(_) | Scalar::I16(_) | Scalar::U8(_) | Scalar::U16(_) | Scalar::U32(_) | Scalar::U64(_) => {
            write!(f, "{s}{}", s.elem_type())
        }
        other => write!(f, "{other}"),
    }
}

/// One instruction.
fn write_inst(f: &mut Formatter<'_>, inst: &Inst, names: Option<&[ValueInfo]>) -> fmt::Result {
    match inst {
        Inst::Const { dst, value } => {
            write!(f, "r{dst} = ")?;
            write_const(f, *value)
        }
        Inst::Unary { dst, op, a } => write!(f, "r{dst} = {}r{a}", op.symbol()),
        Inst::Binary { dst, op, a, b } => write!(f, "r{dst} = r{a} {} r{b}", op.symbol()),
        Inst::Call { dst, f: func, args } => {
            write!(f, "r{dst} = {}(", func.name())?;
            write_regs(f, args)?;
            f.write_str(")")
        }
        Inst::Read { dst, array, index } => {
            write!(f, "r{dst} = {}[", name(names, *array))?;
            write_regs(f, index)?;
            f.write_str("]")
        }
        Inst::Dim { dst, array, axis } => write!(f, "r{dst} = size({}, r{axis})", name(names, *array)),
        Inst::Load { dst, value } => write!(f, "r{dst} = load {}", name(names, *value)),
        Inst::If { dst, cond, then_block, then_ret, else_block, else_ret } => {
            write!(f, "r{dst} = if r{cond} ")?;
            write_block(f, then_block, names)?;
            write!(f, " -> r{then_ret} else ")?;
            write_block(f, else_block, names)?;
            write!(f, " -> r{else_ret}")
        }
        Inst::Loop { dsts, count, inits, vars, body, nexts } => {
            write_tuple(f, dsts)?;
            write!(f, " = loop r{count} times (")?;
            for (i, v) in vars.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "r{v} = ")?;
                match inits.get(i) {
                    Some(r) => write!(f, "r{r}")?,
                    None => f.write_str("?")?,
                }
            }
            f.write_str(") ")?;
            write_block(f, body, names)?;
            f.write_str(" next ")?;
            write_tuple(f, nexts)
        }
    }
}
