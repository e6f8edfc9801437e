//! A [`Func`] as a function of straight-line C: the one scalar emitter of both targets.
//!
//! ```text
//! static __device__ __forceinline__ bool NAME(const EqArgs& A, const long long ef,   // CUDA
//! static inline bool NAME(const EqArgs* restrict A, const long long ef,              // C
//!                                             P0 r0, P1 r1, R0* eq_o0, ...) {
//!   T2 r2 = 0; ...                 // one typed local per register
//!   ...                            // one statement per instruction
//!   *eq_o0 = r7; ...
//!   return true;
//! }
//! ```
//!
//! The function returns `false` when an element fails (an index out of bounds, integer
//! division by zero). In CUDA it records the error in the error record and returns at
//! once; `ef` is the flat index of the element being computed, for the message (`-1`:
//! none). In C it notes the failure and goes on without the faulting access (an
//! out-of-bounds read gives 0, a division by zero 0), so that loops over elements keep no
//! early exit and vectorise; the caller that sees `false` has the kernel rerun by the
//! interpreter, which reports the exact element and message. Lazy `if`s are `if/else` blocks (only the taken
//! block runs), `iterate` a `for` loop whose state is copied from `nexts` to `vars` through
//! temporaries (all at once). Integer `+ - *` and negation wrap (computed unsigned), `/` and
//! `%` check for zero and give `MIN / -1 == MIN`, `MIN % -1 == 0`; conversions from float to
//! integer saturate with NaN to 0; float `min`/`max` propagate NaN; `round` rounds half away
//! from zero (`roundf`/`round`); the rest is the CUDA math library in the operand's
//! precision (`expf` for `f32`).

mod range;

use crate::site::site_code;
use crate::{cty, suffix, Dialect, Layout};
use eqfuse_ir::ast::{BinOp, UnOp};
use eqfuse_ir::interp::scalar::ScalarFn;
use eqfuse_ir::plan::{Arg, Block, Func, Inst, Plan, Reg, ValueId};
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::Scalar;
use range::Ranges;
use std::collections::HashSet;
use std::fmt::Write as _;

/// What a function emitter needs from its kernel.
pub struct FnCtx<'a> {
    pub plan: &'a Plan,
    pub host: &'a HashSet<ValueId>,
    pub layout: &'a mut Layout,
    /// For an element function whose launch checks shapes first: a read whose every index
    /// is one of the function's parameters (`a[i, j]` or `mx[i]` over the space `[i, j]`)
    /// is emitted without a bounds check, and its array is listed here with, per axis, the
    /// parameter that indexes it. The host must then check, before the launch, that the
    /// space's extent along each such parameter is at most the array's dimension.
    pub in_space: Option<&'a mut Vec<InSpace>>,
    /// For a vectorised copy of an element function over a 1-d space (CUDA tiles): the
    /// rank-1 arrays whose read at the space's index comes from a parameter `eq_t<v>` (the
    /// caller loaded it with the neighbouring elements in one vector load) instead of from
    /// memory. The parameters follow the index parameters, in this order.
    pub tile: &'a [ValueId],
    /// For the interior of an edge split ([`eqfuse_ir::plan::EdgeSplit`]), run only where
    /// parameter `p` is in `[head, extent - tail)` (`margins[p] = (head, tail)`): a read at
    /// `p + c` with `-head <= c <= tail` is in `[0, extent)` too, so it is unchecked like a
    /// read at `p` (and listed in [`FnCtx::in_space`] the same way). Empty: none.
    pub margins: &'a [(usize, usize)],
    /// The kernel's space, when the function is its element function (its parameters are
    /// the space's indices): with [`FnCtx::in_space`], a read whose every index is proven
    /// in `[0, extent)` of some parameter (`a[clamp (i - 1) 0 (h - 1)]`, `a[(i + 1) % h]`,
    /// `a[i - 1]` under `if i > 0`) is unchecked and listed as a read at that parameter
    /// would be, and remainders by a proven extent lose their checks. Empty: none known.
    pub space: &'a [Arg],
}

/// An array read without bounds checks, and for each of its axes the parameter (an axis of
/// the kernel's space) whose index reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InSpace {
    /// The array.
    pub array: ValueId,
    /// Per axis of the array, the axis of the space that indexes it.
    pub axes: Vec<usize>,
}

impl InSpace {
    /// Whether the read is in bounds over a space of extents `space` when the array has
    /// `shape`: its dimension along each axis is at least the space's extent there.
    pub fn fits(&self, space: &[usize], shape: &[usize]) -> bool {
        shape.len() == self.axes.len()
            && self.axes.iter().zip(shape).all(|(&a, &len)| space.get(a).is_some_and(|&e| e <= len))
    }
}

/// Whether every read of `reads` (the reads a kernel's code does without a check) is in
/// bounds over a space of extents `space`, each array's shape given by `shape`: the check
/// the host makes before a launch, on the CPU and on the GPU.
pub fn reads_fit<E>(
    reads: &[InSpace],
    space: &[usize],
    mut shape: impl FnMut(ValueId) -> Result<Vec<usize>, E>,
) -> Result<bool, E> {
    for read in reads {
        if !read.fits(space, &shape(read.array)?) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Emits `func` as a device function called `name`.
pub fn emit(cx: &mut FnCtx<'_>, name: &str, func: &Func) -> Result<String, String> {
    emit_in(cx, name, func, false)
}

/// Emits `func` as a C function called `name` whose `f32` `sin`, `cos`, `tan` take their
/// medium path only (`eq_sin_f32_m`, ...: right below `|x| < 2^28 π/2`), with one more
/// parameter, `int* eq_big`, to which it ORs 1 when any of them had an argument that needs
/// the exact path (`eq_trig_big_f32`): where it stays 0, the results are those of
/// [`emit`]'s function.
pub(crate) fn emit_medium_trig(cx: &mut FnCtx<'_>, name: &str, func: &Func) -> Result<String, String> {
    if cx.layout.dialect() != Dialect::C {
        return Err(format!("`{name}`: the medium path of sin, cos, tan is for the C dialect"));
    }
    emit_in(cx, name, func, true)
}

/// [`emit`], or with `medium_trig` [`emit_medium_trig`].
fn emit_in(cx: &mut FnCtx<'_>, name: &str, func: &Func, medium_trig: bool) -> Result<String, String> {
    let dialect = cx.layout.dialect();
    let args_type = cx.layout.type_name().to_string();
    let params_fixed = params_never_written(&func.body, func.params.len());
    // the range analysis, for an element function whose indices are fixed
    let ranges = (cx.in_space.is_some() && params_fixed && !cx.space.is_empty())
        .then(|| Ranges::new(func, cx.space, cx.margins));
    let mut e = Emitter {
        cx,
        func,
        out: String::new(),
        loops: 0,
        params_fixed,
        ranges,
        depth: 0,
        spec: None,
        medium_trig,
        uniform: func.uniform_ifs(),
    };
    let mut sig = match dialect {
        Dialect::Cuda => {
            format!("static __device__ __forceinline__ bool {name}(const EqArgs& A, const long long ef")
        }
        Dialect::C => {
            format!("static inline __attribute__((always_inline)) bool {name}(const {args_type}* restrict A, const long long ef")
        }
    };
    for (k, t) in func.params.iter().enumerate() {
        if e.ty(k as Reg)? != *t {
            return Err(format!("`{name}`: parameter r{k} is {t} but its register is {}", e.ty(k as Reg)?));
        }
        let _ = write!(sig, ", {} r{k}", cty(*t));
    }
    for &v in e.cx.tile {
        let t = e.cx.plan.values.get(v).ok_or_else(|| format!("no value v{v}"))?.elem;
        let _ = write!(sig, ", const {} eq_t{v}", cty(t));
    }
    for (k, &r) in func.ret.iter().enumerate() {
        let _ = write!(sig, ", {}* eq_o{k}", cty(e.ty(r)?));
    }
    if medium_trig {
        sig.push_str(", int* eq_big");
    }
    sig.push_str(") {\n");
    let mut decls = String::new();
    if dialect == Dialect::C {
        decls.push_str("  (void)ef;\n  bool eq_ok = true;\n");
    }
    if medium_trig {
        decls.push_str("  int eq_big_l = 0;\n");
    }
    for (r, t) in func.reg_types.iter().enumerate().skip(func.params.len()) {
        let _ = writeln!(decls, "  {} r{r} = {};", cty(*t), zero(*t));
    }
    e.block(&func.body, 1)?;
    let mut body = std::mem::take(&mut e.out);
    for (k, &r) in func.ret.iter().enumerate() {
        let _ = writeln!(body, "  *eq_o{k} = r{r};");
    }
    if medium_trig {
        body.push_str("  *eq_big |= eq_big_l;\n");
    }
    let ret = match dialect {
        Dialect::Cuda => "true",
        Dialect::C => "eq_ok",
    };
    Ok(format!("{sig}{decls}{body}  return {ret};\n}}\n"))
}

/// A zero of type `t` as a C expression (registers start at it).
pub(crate) fn zero(t: ElemType) -> &'static str {
    match t {
        ElemType::Bool => "false",
        ElemType::I32 | ElemType::I8 | ElemType::I16 | ElemType::U8 | ElemType::U16 => "0",
        ElemType::U32 => "0u",
        ElemType::I64 => "0LL",
        ElemType::U64 => "0ULL",
        ElemType::F32 => "0.0f",
        ElemType::F64 => "0.0",
    }
}

/// A constant as a C expression, exact: integers in range (`MIN` spelled as `-MAX - 1`),
/// floats as their shortest decimal when it reads back to the same bits, else as hex float
/// literals; infinities and NaNs by their bits.
pub fn literal(s: Scalar, dialect: Dialect) -> String {
    let (f32_bits, f64_bits) = match dialect {
        Dialect::Cuda => ("__uint_as_float", "__longlong_as_double"),
        Dialect::C => ("eq_f32_from_bits", "eq_f64_from_bits"),
    };
    match s {
        Scalar::Bool(b) => b.to_string(),
        Scalar::I32(i32::MIN) => "(-2147483647 - 1)".into(),
        Scalar::I32(v) if v < 0 => format!("({v})"),
        Scalar::I32(v) => v.to_string(),
        Scalar::I64(i64::MIN) => "(-9223372036854775807LL - 1LL)".into(),
        Scalar::I64(v) if v < 0 => format!("({v}LL)"),
        Scalar::I64(v) => format!("{v}LL"),
        Scalar::I8(v) => format!("((int8_t)({v}))"),
        Scalar::I16(v) => format!("((int16_t)({v}))"),
        Scalar::U8(v) => format!("((uint8_t){v}u)"),
        Scalar::U16(v) => format!("((uint16_t){v}u)"),
        Scalar::U32(v) => format!("{v}u"),
        Scalar::U64(v) => format!("{v}ULL"),
        Scalar::F32(v) if !v.is_finite() => format!("{f32_bits}(0x{:08x}u)", v.to_bits()),
        Scalar::F64(v) if !v.is_finite() => format!("{f64_bits}(0x{:016x}LL)", v.to_bits()),
        Scalar::F32(v) => {
            let dec = format!("{v:?}");
            // Safe whether the compiler reads `1.5f` directly as a float or through double.
            let ok = dec.parse::<f32>().is_ok_and(|p| p.to_bits() == v.to_bits())
                && dec.parse::<f64>().is_ok_and(|p| (p as f32).to_bits() == v.to_bits());
            let body = if ok { format!("{dec}f") } else { hex_float(f64::from(v), "f") };
            if v.is_sign_negative() {
                format!("({body})")
            } else {
                body
            }
        }
        Scalar::F64(v) => {
            let dec = format!("{v:?}");
            let ok = dec.parse::<f64>().is_ok_and(|p| p.to_bits() == v.to_bits());
            let body = if ok { dec } else { hex_float(v, "") };
            if v.is_sign_negative() {
                format!("({body})")
            } else {
                body
            }
        }
    }
}

/// `v` (finite) as a C++17 hexadecimal floating literal: `-0x1.8p+1` (exact).
fn hex_float(v: f64, suffix: &str) -> String {
    let bits = v.to_bits();
    let sign = if bits >> 63 == 1 { "-" } else { "" };
    let exp = ((bits >> 52) & 0x7ff) as i64;
    let mant = bits & ((1u64 << 52) - 1);
    if exp == 0 && mant == 0 {
        return format!("{sign}0x0p+0{suffix}");
    }
    let (lead, e) = if exp == 0 { (0, -1022) } else { (1, exp - 1023) };
    format!("{sign}0x{lead}.{mant:013x}p{e:+}{suffix}")
}

/// The most instructions an `if`'s arm may hold to be computed unconditionally.
const SPECULATE_BUDGET: usize = 256;

struct Emitter<'c, 'a> {
    cx: &'c mut FnCtx<'a>,
    func: &'c Func,
    out: String,
    loops: usize,
    /// No instruction writes a parameter's register: a parameter register read anywhere
    /// holds the element's index.
    params_fixed: bool,
    /// The range analysis of an element function ([`FnCtx::space`]).
    ranges: Option<Ranges>,
    /// How many `if` arms enclose the instruction being emitted.
    depth: usize,
    /// While the arms of an `if` are computed unconditionally: the depth of the outermost
    /// such arms (a proof relying on their guards does not hold there).
    spec: Option<usize>,
    /// `f32` `sin`, `cos`, `tan` as their medium paths, each argument tested into
    /// `eq_big_l` ([`emit_medium_trig`]).
    medium_trig: bool,
    /// The `if`s that branch the same way at every point ([`Func::uniform_ifs`]), by the
    /// register they write: emitted as branches, which the C compiler takes out of the loop
    /// over elements (one vectorised loop per arm), so that one arm runs, as the cost model
    /// counts.
    uniform: HashSet<Reg>,
}

/// The most iterations of a loop the C dialect unrolls whole.
const UNROLL_MAX_COUNT: i64 = 64;
/// The most instructions a loop unrolled whole may become.
const UNROLL_MAX_INSTS: i64 = 4096;

/// Whether `b` (nested blocks included) calls one of eqfuse's own math functions (`exp`,
/// `log`, `sin`, `cos`, `tan`, `tanh`, `pow`, `atan2`): each is inlined as a body of
/// hundreds of instructions, so a loop over such a body unrolled whole multiplies the C
/// compiler's work (40 inlined `sin`s took gcc 10 s and 1.4 GB) for a run that is no faster
/// (the body's own work dominates the loop's overhead).
fn calls_math(b: &Block) -> bool {
    b.insts.iter().any(|inst| match inst {
        Inst::Call { f, .. } => f.is_transcendental(),
        Inst::If { then_block, else_block, .. } => calls_math(then_block) || calls_math(else_block),
        Inst::Loop { body, .. } => calls_math(body),
        _ => false,
    })
}

/// The count a loop of `func` (its `count` register, its `body`) is unrolled by in C
/// ([`Emitter::unroll`]): `None` where it stays a loop.
pub(crate) fn unroll_count(func: &Func, count: Reg, body: &Block) -> Option<i64> {
    if calls_math(body) {
        return None;
    }
    let mut defs = Vec::new();
    definitions(&func.body, count, &mut defs);
    let n = match defs.as_slice() {
        [Inst::Const { value: Scalar::I64(n), .. }] => *n,
        [Inst::Const { value: Scalar::I32(n), .. }] => i64::from(*n),
        _ => return None,
    };
    let size = i64::try_from(insts_in(body)).ok()?;
    (n > 0 && n <= UNROLL_MAX_COUNT && n.saturating_mul(size) <= UNROLL_MAX_INSTS).then_some(n)
}

/// The instructions in `b`, nested blocks included.
fn insts_in(b: &Block) -> usize {
    b.insts
        .iter()
        .map(|inst| match inst {
            Inst::If { then_block, else_block, .. } => 1 + insts_in(then_block) + insts_in(else_block),
            Inst::Loop { body, .. } => 1 + insts_in(body),
            _ => 1,
        })
        .sum()
}

/// Every instruction in `b` (nested blocks included) that writes register `r`.
pub(crate) fn definitions<'b>(b: &'b Block, r: Reg, out: &mut Vec<&'b Inst>) {
    for inst in &b.insts {
        if inst.dsts().contains(&r) || matches!(inst, Inst::Loop { vars, .. } if vars.contains(&r)) {
            out.push(inst);
        }
        match inst {
            Inst::If { then_block, else_block, .. } => {
                definitions(then_block, r, out);
                definitions(else_block, r, out);
            }
            Inst::Loop { body, .. } => definitions(body, r, out),
            _ => {}
        }
    }
}

/// Whether no instruction in `b` (nested blocks included) writes registers `0..params`.
fn params_never_written(b: &Block, params: usize) -> bool {
    (0..params).all(|p| {
        let mut defs = Vec::new();
        definitions(b, p as Reg, &mut defs);
        defs.is_empty()
    })
}

impl Emitter<'_, '_> {
    /// Register `r`'s type.
    fn ty(&self, r: Reg) -> Result<ElemType, String> {
        self.func
            .reg_types
            .get(r as usize)
            .copied()
            .ok_or_else(|| format!("register r{r} out of range ({} registers)", self.func.reg_types.len()))
    }

    fn line(&mut self, ind: usize, text: &str) {
        for _ in 0..ind {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn block(&mut self, b: &Block, ind: usize) -> Result<(), String> {
        for inst in &b.insts {
            self.inst(inst, ind)?;
        }
        Ok(())
    }

    /// `eq_fail(...); return false;` for an error with `ix` recorded, of the instruction
    /// writing `dst` (its source position goes into the record's code: [`site_code`]).
    fn fail(&mut self, code: &str, dst: Reg, what: &str, ix: &[String]) -> String {
        if self.cx.layout.dialect() == Dialect::C {
            return "eq_ok = false;".into();
        }
        // the source line and column, packed above the code as [`site_code`] packs them
        let code = match self.func.span_of(dst).filter(|s| site_code(s.line, s.col).is_some()) {
            Some(s) => format!("({code} + ({}LL << 8) + ({}LL << 36))", s.line, s.col),
            None => code.to_string(),
        };
        let err = self.cx.layout.err();
        let kid = self.cx.layout.kid();
        let list = if ix.is_empty() { "0".to_string() } else { ix.join(", ") };
        format!(
            "{{ const long long eq_ix[{}] = {{{list}}}; eq_fail({err}, {kid}, {code}, {what}, ef, {}, eq_ix); return false; }}",
            ix.len().max(1),
            ix.len()
        )
    }

    fn inst(&mut self, inst: &Inst, ind: usize) -> Result<(), String> {
        match inst {
            Inst::Const { dst, value } => {
                let t = self.ty(*dst)?;
                if value.elem_type() != t {
                    return Err(format!("r{dst} of type {t} assigned the constant {value}"));
                }
                let lit = literal(*value, self.cx.layout.dialect());
                self.line(ind, &format!("r{dst} = {lit};"));
            }
            Inst::Unary { dst, op, a } => {
                let t = self.ty(*a)?;
                let e = match (op, t) {
                    (UnOp::Neg, _) if t.is_int() => format!("eq_neg_{}(r{a})", suffix(t)),
                    (UnOp::Neg, ElemType::F32 | ElemType::F64) => format!("(-r{a})"),
                    (UnOp::Not, ElemType::Bool) => format!("(!r{a})"),
                    // `!` on an integer: its bitwise complement
                    (UnOp::Not, _) if t.is_int() => format!("(({})~r{a})", cty(t)),
                    _ => return Err(format!("`{}` on {t}", op.symbol())),
                };
                self.line(ind, &format!("r{dst} = {e};"));
            }
            Inst::Binary { dst, op, a, b } => self.binary(*dst, *op, *a, *b, ind)?,
            Inst::Call { dst, f, args } if self.medium_trig_name(*f, args)?.is_some() => {
                let name = self.medium_trig_name(*f, args)?.unwrap_or_default();
                self.line(ind, &format!("eq_big_l |= eq_trig_big_f32(r{});", args[0]));
                self.line(ind, &format!("r{dst} = {name}(r{});", args[0]));
            }
            Inst::Call { dst, f, args } => {
                // a `clamp` (`min`, `max`) proven to leave an argument as it is: that
                // argument (an index the C compiler then sees as affine)
                let pick = self.ranges.as_ref().and_then(|r| r.pick(*dst));
                let e = match pick {
                    Some((r, level)) if self.spec.is_none_or(|s| level < s) => {
                        self.call(*f, args)?;
                        format!("r{r}")
                    }
                    _ => self.call(*f, args)?,
                };
                self.line(ind, &format!("r{dst} = {e};"));
            }
            Inst::Read { dst, array, index } => self.read(*dst, *array, index, ind)?,
            Inst::Dim { dst, array, axis } => {
                let rank = self.rank(*array)?;
                let plan = self.cx.plan;
                let mut text = String::new();
                for k in 0..rank {
                    let d = self.cx.layout.dim(plan, *array, k);
                    let _ = write!(text, "if ((long long)r{axis} == {k}) r{dst} = {d}; else ");
                }
                let fail =
                    self.fail("EQ_ERR_DIM", *dst, &array.to_string(), &[format!("(long long)r{axis}")]);
                text.push_str(&fail);
                self.line(ind, &text);
            }
            Inst::Load { dst, value } => {
                let rank = self.rank(*value)?;
                if rank != 0 {
                    return Err(format!("`load` of value v{value} of rank {rank}"));
                }
                let plan = self.cx.plan;
                let e = if self.cx.host.contains(value) {
                    self.cx.layout.host_scalar(plan, *value)
                } else {
                    format!("{}[0]", self.cx.layout.array(plan, *value))
                };
                self.line(ind, &format!("r{dst} = {e};"));
            }
            Inst::If { dst, cond, then_block, then_ret, else_block, else_ret } => {
                let mut budget = SPECULATE_BUDGET;
                let s = self.spec.unwrap_or(self.depth + 1);
                self.depth += 1;
                if !self.uniform.contains(dst)
                    && self.speculable(then_block, &mut budget, s)
                    && self.speculable(else_block, &mut budget, s)
                {
                    // Neither arm can fail: both are computed and one is selected, so that
                    // the loop around this element has no control flow and the C compiler
                    // vectorises it (and a GPU warp does not diverge).
                    let outer = self.spec.replace(s);
                    self.block(then_block, ind)?;
                    self.block(else_block, ind)?;
                    self.spec = outer;
                    self.depth -= 1;
                    // a floating-point select by bit masks: gcc vectorises a reduction
                    // over it where it leaves one over `?:` scalar (an `argmin` written as
                    // `reduce min` of `if d[i] == m then f32 i else inf` ran 3x slower)
                    let sel = match self.ty(*dst)? {
                        ElemType::F32 => format!("eq_sel_f32(r{cond}, r{then_ret}, r{else_ret})"),
                        ElemType::F64 => format!("eq_sel_f64(r{cond}, r{then_ret}, r{else_ret})"),
                        _ => format!("r{cond} ? r{then_ret} : r{else_ret}"),
                    };
                    self.line(ind, &format!("r{dst} = {sel};"));
                } else {
                    self.line(ind, &format!("if (r{cond}) {{"));
                    self.block(then_block, ind + 1)?;
                    self.line(ind + 1, &format!("r{dst} = r{then_ret};"));
                    self.line(ind, "} else {");
                    self.block(else_block, ind + 1)?;
                    self.line(ind + 1, &format!("r{dst} = r{else_ret};"));
                    self.line(ind, "}");
                    self.depth -= 1;
                }
            }
            Inst::Loop { dsts, count, inits, vars, body, nexts } => {
                if inits.len() != vars.len() || nexts.len() != vars.len() || dsts.len() != vars.len() {
                    return Err(format!(
                        "a loop of {} state registers with {} initial, {} next and {} result registers",
                        vars.len(),
                        inits.len(),
                        nexts.len(),
                        dsts.len()
                    ));
                }
                let l = self.loops;
                self.loops += 1;
                self.line(ind, "{");
                for (v, i) in vars.iter().zip(inits) {
                    self.line(ind + 1, &format!("r{v} = r{i};"));
                }
                self.line(ind + 1, &format!("const long long eq_n{l} = (long long)r{count};"));
                if let Some(n) = self.unroll(*count, body) {
                    // a short loop of known count: unrolled whole, so that the loop over
                    // elements around it has no inner loop and vectorises
                    self.line(ind + 1, &format!("#pragma GCC unroll {n}"));
                }
                self.line(
                    ind + 1,
                    &format!("for (long long eq_it{l} = 0; eq_it{l} < eq_n{l}; ++eq_it{l}) {{"),
                );
                self.block(body, ind + 2)?;
                for (k, n) in nexts.iter().enumerate() {
                    let t = cty(self.ty(*n)?);
                    self.line(ind + 2, &format!("const {t} eq_t{l}_{k} = r{n};"));
                }
                for (k, v) in vars.iter().enumerate() {
                    self.line(ind + 2, &format!("r{v} = eq_t{l}_{k};"));
                }
                self.line(ind + 1, "}");
                for (d, v) in dsts.iter().zip(vars) {
                    self.line(ind + 1, &format!("r{d} = r{v};"));
                }
                self.line(ind, "}");
            }
        }
        Ok(())
    }

    /// Whether `b` can run whatever its guard says: no instruction in it can fail (no
    /// checked read, integer division, `size` or loop), and it is small (at most `budget`
    /// instructions, nested arms included). `s`: the depth of the outermost arms computed
    /// unconditionally ([`Emitter::spec`]): a proof may not rely on their guards, except a
    /// read's, which is then masked ([`Emitter::read`]).
    fn speculable(&self, b: &Block, budget: &mut usize, s: usize) -> bool {
        for inst in &b.insts {
            if *budget == 0 {
                return false;
            }
            *budget -= 1;
            let ok = match inst {
                Inst::Const { .. } | Inst::Unary { .. } | Inst::Call { .. } | Inst::Load { .. } => true,
                Inst::Binary { dst, op, a, .. } => {
                    !(matches!(op, BinOp::Div | BinOp::Rem) && self.ty(*a).is_ok_and(|t| t.is_int()))
                        || self.div_proven(*dst, |p| p.nonzero, Some(s))
                }
                Inst::Read { dst, array, index } => self.read_proof(*dst, *array, index).is_some(),
                Inst::If { then_block, else_block, .. } => {
                    self.speculable(then_block, budget, s) && self.speculable(else_block, budget, s)
                }
                Inst::Dim { .. } | Inst::Loop { .. } => false,
            };
            if !ok {
                return false;
            }
        }
        true
    }

    /// For the C dialect, the count to unroll a loop of `count` iterations over `body` by:
    /// `count` is a constant, at most [`UNROLL_MAX_COUNT`], the unrolled code at most
    /// [`UNROLL_MAX_INSTS`] instructions, and the body calls none of the math functions
    /// ([`calls_math`]): such a loop stays a loop in C.
    fn unroll(&self, count: Reg, body: &Block) -> Option<i64> {
        if self.cx.layout.dialect() != Dialect::C {
            return None;
        }
        unroll_count(self.func, count, body)
    }

    /// Whether a read of `array` at `index`, writing `dst`, needs no check: each index is
    /// one of the function's parameters (an index of the space) or proven in `[0, extent)`
    /// of one ([`range`]), and the host checks the space's extents against the array's
    /// shape. `Some((axes, level))`: the parameter of each index, and how many enclosing
    /// `if` arms' guards the proof relies on.
    fn read_proof(&self, dst: Reg, array: ValueId, index: &[Reg]) -> Option<(Vec<usize>, usize)> {
        let params = self.func.params.len();
        let ok = self.cx.in_space.is_some()
            && self.params_fixed
            && !index.is_empty()
            && self.rank(array).is_ok_and(|r| r == index.len());
        if !ok {
            return None;
        }
        if index.iter().all(|&r| (r as usize) < params) {
            return Some((index.iter().map(|&r| r as usize).collect(), 0));
        }
        let proof = self.ranges.as_ref()?.read(dst)?;
        Some((proof.axes.clone(), proof.level))
    }

    /// Whether the range analysis proves what `what` picks of the integer division or
    /// remainder writing `dst`, at a level that holds where it runs: below `spec` (the
    /// depth of arms computed unconditionally; `None`: every guard holds).
    fn div_proven(
        &self,
        dst: Reg,
        what: impl Fn(&range::DivProof) -> Option<usize>,
        spec: Option<usize>,
    ) -> bool {
        let Some(level) = self.ranges.as_ref().and_then(|r| r.div(dst)).and_then(what) else { return false };
        spec.is_none_or(|s| level < s)
    }

    fn rank(&self, v: ValueId) -> Result<usize, String> {
        self.cx.plan.values.get(v).map(|i| i.rank).ok_or_else(|| format!("no value v{v}"))
    }

    fn binary(&mut self, dst: Reg, op: BinOp, a: Reg, b: Reg, ind: usize) -> Result<(), String> {
        let t = self.ty(a)?;
        if self.ty(b)? != t {
            return Err(format!("`{}` on {t} and {}", op.symbol(), self.ty(b)?));
        }
        let sym = op.symbol();
        let e = match op {
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                format!("(r{a} {sym} r{b})")
            }
            BinOp::And | BinOp::Or if t == ElemType::Bool => format!("(r{a} {sym} r{b})"),
            BinOp::Add | BinOp::Sub | BinOp::Mul => {
                let name = match op {
                    BinOp::Add => "add",
                    BinOp::Sub => "sub",
                    _ => "mul",
                };
                match t {
                    ElemType::F32 | ElemType::F64 => format!("(r{a} {sym} r{b})"),
                    ElemType::Bool => return Err(format!("`{sym}` on bool")),
                    _ => format!("eq_{name}_{}(r{a}, r{b})", suffix(t)),
                }
            }
            BinOp::Div | BinOp::Rem => match t {
                _ if t.is_int() && self.div_proven(dst, |p| p.identity, self.spec) => {
                    // 0 <= a < b: the remainder is `a`
                    format!("r{a}")
                }
                _ if t.is_int() && self.div_proven(dst, |p| p.shift, self.spec) => {
                    // b <= a < 2b: the remainder is `a - b`
                    format!("eq_sub_{}(r{a}, r{b})", suffix(t))
                }
                _ if t.is_int() && self.div_proven(dst, |p| p.wrap, self.spec) => {
                    // 0 <= a < 2b (a wrap-around index, `(i + 1) % n`): a select, which
                    // vectorises where a 64-bit `%` does not
                    format!("(r{a} >= r{b} ? eq_sub_{s}(r{a}, r{b}) : r{a})", s = suffix(t))
                }
                _ if t.is_int() && self.div_proven(dst, |p| p.nonzero, self.spec) => {
                    // a proven nonzero divisor (an extent): no check
                    let name = if op == BinOp::Div { "div" } else { "rem" };
                    format!("eq_{name}_{}(r{a}, r{b})", suffix(t))
                }
                _ if t.is_int() => {
                    let (code, name) =
                        if op == BinOp::Div { ("EQ_ERR_DIV", "div") } else { ("EQ_ERR_REM", "rem") };
                    let what = crate::prelude_ints::type_code(t).to_string();
                    let fail = self.fail(code, dst, &what, &[format!("(long long)r{a}")]);
                    self.line(ind, &format!("if (r{b} == 0) {fail}"));
                    match self.cx.layout.dialect() {
                        Dialect::Cuda => format!("eq_{name}_{}(r{a}, r{b})", suffix(t)),
                        // no division by zero: the element has failed already
                        Dialect::C => format!("(r{b} == 0 ? 0 : eq_{name}_{}(r{a}, r{b}))", suffix(t)),
                    }
                }
                ElemType::F32 if op == BinOp::Rem => format!("fmodf(r{a}, r{b})"),
                ElemType::F64 if op == BinOp::Rem => format!("fmod(r{a}, r{b})"),
                ElemType::F32 | ElemType::F64 => format!("(r{a} / r{b})"),
                _ => return Err(format!("`{sym}` on {t}")),
            },
            BinOp::And | BinOp::Or => return Err(format!("`{sym}` on {t}")),
            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor if t.is_int() => {
                format!("(({})(r{a} {sym} r{b}))", cty(t))
            }
            BinOp::Shl | BinOp::Shr if t.is_int() => {
                let name = if op == BinOp::Shl { "shl" } else { "shr" };
                format!("eq_{name}_{}(r{a}, r{b})", suffix(t))
            }
            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr => {
                return Err(format!("`{sym}` on {t}"))
            }
        };
        self.line(ind, &format!("r{dst} = {e};"));
        Ok(())
    }

    /// In [`Emitter::medium_trig`] mode, the medium path's name of a call of `f` on `args`
    /// that has one (`sin`, `cos`, `tan` of one `f32`).
    fn medium_trig_name(&self, f: ScalarFn, args: &[Reg]) -> Result<Option<&'static str>, String> {
        let name = match f {
            ScalarFn::Sin => "eq_sin_f32_m",
            ScalarFn::Cos => "eq_cos_f32_m",
            ScalarFn::Tan => "eq_tan_f32_m",
            _ => return Ok(None),
        };
        match args {
            [a] if self.medium_trig && self.ty(*a)? == ElemType::F32 => Ok(Some(name)),
            _ => Ok(None),
        }
    }

    fn call(&mut self, f: ScalarFn, args: &[Reg]) -> Result<String, String> {
        if args.len() != f.arity() {
            return Err(format!("`{}` takes {} arguments, got {}", f.name(), f.arity(), args.len()));
        }
        let t = self.ty(args[0])?;
        for &r in &args[1..] {
            if self.ty(r)? != t {
                return Err(format!("`{}` on {t} and {}", f.name(), self.ty(r)?));
            }
        }
        let a = args[0];
        let float = |n32: &str, n64: &str| -> Result<String, String> {
            let name = match t {
                ElemType::F32 => n32,
                ElemType::F64 => n64,
                _ => return Err(format!("`{}` on {t}", f.name())),
            };
            let list: Vec<String> = args.iter().map(|r| format!("r{r}")).collect();
            Ok(format!("{name}({})", list.join(", ")))
        };
        Ok(match f {
            ScalarFn::Min | ScalarFn::Max => {
                let n = if f == ScalarFn::Min { "min" } else { "max" };
                format!("eq_{n}_{}(r{a}, r{})", suffix(t), args[1])
            }
            ScalarFn::Clamp => {
                let s = suffix(t);
                format!("eq_min_{s}(eq_max_{s}(r{a}, r{}), r{})", args[1], args[2])
            }
            ScalarFn::Abs => match t {
                _ if t.is_int() => format!("eq_abs_{}(r{a})", suffix(t)),
                _ => float("fabsf", "fabs")?,
            },
            ScalarFn::Sqrt => float("sqrtf", "sqrt")?,
            // eqfuse's own (eqfuse_ir::math), the same bits on every backend
            ScalarFn::Exp => float("eq_exp_f32", "eq_exp_f64")?,
            ScalarFn::Log => float("eq_log_f32", "eq_log_f64")?,
            ScalarFn::Sin => float("eq_sin_f32", "eq_sin_f64")?,
            ScalarFn::Cos => float("eq_cos_f32", "eq_cos_f64")?,
            ScalarFn::Tan => float("eq_tan_f32", "eq_tan_f64")?,
            ScalarFn::Tanh => float("eq_tanh_f32", "eq_tanh_f64")?,
            ScalarFn::Floor => float("floorf", "floor")?,
            ScalarFn::Ceil => float("ceilf", "ceil")?,
            ScalarFn::Round => float("roundf", "round")?,
            ScalarFn::Pow => float("eq_pow_f32", "eq_pow_f64")?,
            ScalarFn::Atan2 => float("eq_atan2_f32", "eq_atan2_f64")?,
            ScalarFn::Convert(to) => convert(&format!("r{a}"), t, to),
            ScalarFn::Popcount | ScalarFn::Clz if t.is_int() => {
                let n = if f == ScalarFn::Popcount { "popcount" } else { "clz" };
                format!("eq_{n}_{}(r{a})", suffix(t))
            }
            ScalarFn::IsNan => float("eq_isnan_f32", "eq_isnan_f64")?,
            ScalarFn::IsInf => float("eq_isinf_f32", "eq_isinf_f64")?,
            ScalarFn::Popcount | ScalarFn::Clz => return Err(format!("`{}` on {t}", f.name())),
            // the math helper's own (eqfuse_ir::math), as `exp`
            ScalarFn::Log2 => float("eq_log2_f32", "eq_log2_f64")?,
            ScalarFn::Log10 => float("eq_log10_f32", "eq_log10_f64")?,
            ScalarFn::Exp2 => float("eq_exp2_f32", "eq_exp2_f64")?,
            ScalarFn::Expm1 => float("eq_expm1_f32", "eq_expm1_f64")?,
            ScalarFn::Log1p => float("eq_log1p_f32", "eq_log1p_f64")?,
            ScalarFn::Erf => float("eq_erf_f32", "eq_erf_f64")?,
            ScalarFn::Erfc => float("eq_erfc_f32", "eq_erfc_f64")?,
            ScalarFn::Lgamma => float("eq_lgamma_f32", "eq_lgamma_f64")?,
        })
    }

    fn read(&mut self, dst: Reg, array: ValueId, index: &[Reg], ind: usize) -> Result<(), String> {
        let rank = self.rank(array)?;
        if index.len() != rank {
            return Err(format!("value v{array} of rank {rank} read with {} indices", index.len()));
        }
        for &r in index {
            if !self.ty(r)?.is_int() {
                return Err(format!("index register r{r} is {}", self.ty(r)?));
            }
        }
        let plan = self.cx.plan;
        let base = self.cx.layout.array(plan, array);
        // An array the kernel does not write is read through the read-only cache; one a row
        // block's earlier phase wrote ([`Layout::written`]) with a plain load, which sees it.
        let is_bool = self.ty(dst)? == ElemType::Bool;
        let dialect = self.cx.layout.dialect();
        let written = self.cx.layout.written(array);
        let load = |at: &str| {
            if is_bool || dialect == Dialect::C || written {
                format!("{base}[{at}]")
            } else {
                format!("__ldg(&{base}[{at}])")
            }
        };
        if rank == 0 {
            let e = load("0");
            self.line(ind, &format!("r{dst} = {e};"));
            return Ok(());
        }
        let dims: Vec<String> = (0..rank).map(|k| self.cx.layout.dim(plan, array, k)).collect();
        let checks: Vec<String> = index
            .iter()
            .zip(&dims)
            .map(|(r, d)| format!("(unsigned long long)r{r} < (unsigned long long){d}"))
            .collect();
        let ix: Vec<String> = index.iter().map(|r| format!("(long long)r{r}")).collect();
        let mut masked = false;
        if let Some((axes, level)) = self.read_proof(dst, array, index) {
            // at the point itself (`a[i]`; `a[i, j, k]` over the space in a flat run)
            let at_point = index.len() == self.func.params.len()
                && index.iter().enumerate().all(|(k, &r)| r as usize == k);
            if at_point && self.cx.tile.contains(&array) {
                self.line(ind, &format!("r{dst} = eq_t{array};  // loaded with its neighbours"));
                return Ok(());
            }
            // proven only under the guard of arms computed unconditionally: where the guard
            // fails the index may be anything, so the load is masked (its value unused)
            masked = self.spec.is_some_and(|s| level >= s);
            if let Some(list) = self.cx.in_space.as_deref_mut() {
                let entry = InSpace { array, axes };
                if !list.contains(&entry) {
                    list.push(entry);
                }
            }
            // else the masked load below, without a failure
            if !masked {
                let mut flat = format!("(long long)r{}", index[0]);
                for (r, d) in index.iter().zip(&dims).skip(1) {
                    flat = format!("({flat} * {d} + (long long)r{r})");
                }
                let e = load(&flat);
                self.line(
                    ind,
                    &format!("r{dst} = {e};  // in bounds: the space is checked against the shape"),
                );
                return Ok(());
            }
        }
        let fail =
            if masked { String::new() } else { self.fail("EQ_ERR_INDEX", dst, &array.to_string(), &ix) };
        let mut flat = format!("(long long)r{}", index[0]);
        for (r, d) in index.iter().zip(&dims).skip(1) {
            flat = format!("({flat} * {d} + (long long)r{r})");
        }
        let e = load(&flat);
        match dialect {
            _ if masked => {
                // no read out of bounds and no failure: the guard that proves it fails here
                self.line(ind, &format!("const bool eq_in{dst} = {};", checks.join(" && ")));
                self.line(ind, &format!("r{dst} = eq_in{dst} ? {e} : r{dst};"));
            }
            Dialect::Cuda => {
                self.line(ind, &format!("if (!({})) {fail}", checks.join(" && ")));
                self.line(ind, &format!("r{dst} = {e};"));
            }
            Dialect::C => {
                // no read out of bounds: a conditional load (masked when vectorised)
                self.line(ind, &format!("const bool eq_in{dst} = {};", checks.join(" && ")));
                self.line(ind, &format!("if (!eq_in{dst}) {fail}"));
                self.line(ind, &format!("r{dst} = eq_in{dst} ? {e} : r{dst};"));
            }
        }
        Ok(())
    }
}

/// `x` (of type `from`) converted to `to` as the language converts: integers to integers
/// keep the low bits (through the target's unsigned type, no undefined behaviour), floats to
/// integers truncate and saturate with NaN to 0 (the prelude's helpers), integers to floats
/// round to nearest.
pub fn convert(x: &str, from: ElemType, to: ElemType) -> String {
    use ElemType::*;
    match (from, to) {
        _ if from == to => x.to_string(),
        (Bool, I32) => format!("({x} ? 1 : 0)"),
        (Bool, I64) => format!("({x} ? 1LL : 0LL)"),
        (Bool, F32) => format!("({x} ? 1.0f : 0.0f)"),
        (Bool, F64) => format!("({x} ? 1.0 : 0.0)"),
        (Bool, _) => format!("({x} ? ({})1 : ({})0)", cty(to), cty(to)),
        (_, Bool) => format!("({x} != 0)"),
        (I32, I64) => format!("((long long){x})"),
        (I64, I32) => format!("eq_i64_to_i32({x})"),
        (F32, F64) => format!("((double){x})"),
        (F64, F32) => format!("((float){x})"),
        // through the prelude's helpers, which keep gcc's `trunc` fold from leaving a -0.0
        // (integer to float) and saturate (float to integer)
        (_, F32 | F64) | (F32 | F64, _) => format!("eq_{}_to_{}({x})", from.name(), to.name()),
        // integer to integer: the low bits, through the unsigned type of the target's width
        _ => format!("(({})({})({x}))", cty(to), crate::prelude_ints::unsigned_cty(to)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn literal_cuda(s: Scalar) -> String {
        literal(s, Dialect::Cuda)
    }

    #[test]
    fn literals_are_exact() {
        assert_eq!(literal_cuda(Scalar::I32(i32::MIN)), "(-2147483647 - 1)");
        assert_eq!(literal_cuda(Scalar::I64(-3)), "(-3LL)");
        assert_eq!(literal_cuda(Scalar::F32(0.5)), "0.5f");
        assert_eq!(literal_cuda(Scalar::F32(-0.0)), "(-0.0f)");
        assert_eq!(literal_cuda(Scalar::F32(f32::INFINITY)), "__uint_as_float(0x7f800000u)");
        assert_eq!(literal_cuda(Scalar::F32(f32::NEG_INFINITY)), "__uint_as_float(0xff800000u)");
        assert_eq!(literal_cuda(Scalar::F64(0.1)), "0.1");
        assert_eq!(
            literal_cuda(Scalar::F64(f64::NEG_INFINITY)),
            "__longlong_as_double(0xfff0000000000000LL)"
        );
        assert_eq!(hex_float(3.0, ""), "0x1.8000000000000p+1");
        assert_eq!(hex_float(-0.0, "f"), "-0x0p+0f");
        assert_eq!(hex_float(f64::from_bits(1), ""), "0x0.0000000000001p-1022");
    }
}
