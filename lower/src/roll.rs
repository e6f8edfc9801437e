//! Loop rolling on element functions: a recurrence unrolled in straight-line code, whose
//! state is a tuple (mandelbrot's `zr`, `zi`, `n` and escape flag per step), becomes one
//! `Loop` with tuple state.
//!
//! The rules stage turns a chain of applications of one *function* into an `iterate`
//! (`eqfuse_rules::loops`); a joint recurrence written as several arrays per step has no
//! such function. Here, on the lowered code, the step is found by matching the result's
//! computation against its previous step:
//!
//! 1. Starting from the result register `top` and an operand `prev` computed by an
//!    instruction of the same shape, a breadth-first structural match pairs each register
//!    of the last step with its counterpart one step earlier (`π`). A register already
//!    paired as a counterpart is a *state* leaf; equal registers are invariants.
//! 2. Every state leaf must be the counterpart of a register of the step (its next value),
//!    and no instruction of the step may fail (only arithmetic, comparisons, calls of pure
//!    scalar functions, constants, loads and `if`s of such): rolling must not move an error.
//! 3. The match is repeated one step down while it holds, each step's state being the
//!    previous step's next state; the lowest state is the loop's initial state.
//!
//! The step's instructions become the body of a `Loop` run as many times as there were
//! steps; the code of the unrolled steps, now dead, is dropped. Each step computes the same
//! operations in the same order, so results are bit for bit the same.

use eqfuse_ir::ast::BinOp;
use eqfuse_ir::plan::{Block, Func, Inst, Reg};
use eqfuse_ir::value::Scalar;
use std::collections::{HashMap, HashSet, VecDeque};

/// Fewest steps worth a loop.
const MIN_STEPS: usize = 3;

/// Rolls the recurrence that computes `f`'s (single) result, if there is one.
pub fn roll(f: &mut Func) {
    if f.ret.len() != 1 {
        return;
    }
    if let Some(g) = try_roll(f) {
        *f = g;
    }
}

/// The shape of a top-level instruction (its operation, constants and nested blocks, with
/// its operands abstracted) and its operands from outside it, in a fixed order.
fn shape(i: &Inst) -> (String, Vec<Reg>) {
    let mut ext: Vec<Reg> = Vec::new();
    let mut local: HashMap<Reg, usize> = HashMap::new();
    let mut key = String::new();
    shape_inst(i, &mut key, &mut ext, &mut local);
    (key, ext)
}

fn name(r: Reg, ext: &mut Vec<Reg>, local: &HashMap<Reg, usize>) -> String {
    match local.get(&r) {
        Some(k) => format!("l{k}"),
        None => {
            ext.push(r);
            "_".to_string()
        }
    }
}

fn shape_inst(i: &Inst, key: &mut String, ext: &mut Vec<Reg>, local: &mut HashMap<Reg, usize>) {
    use std::fmt::Write;
    let def = |r: Reg, local: &mut HashMap<Reg, usize>| {
        let k = local.len();
        local.insert(r, k);
    };
    match i {
        Inst::Const { dst, value } => {
            let _ = write!(key, "const {value:?};");
            def(*dst, local);
        }
        Inst::Unary { dst, op, a } => {
            let a = name(*a, ext, local);
            let _ = write!(key, "un {op:?} {a};");
            def(*dst, local);
        }
        Inst::Binary { dst, op, a, b } => {
            let (a, b) = (name(*a, ext, local), name(*b, ext, local));
            let _ = write!(key, "bin {op:?} {a} {b};");
            def(*dst, local);
        }
        Inst::Call { dst, f, args } => {
            let names: Vec<String> = args.iter().map(|r| name(*r, ext, local)).collect();
            let _ = write!(key, "call {f:?} {};", names.join(" "));
            def(*dst, local);
        }
        Inst::Load { dst, value } => {
            let _ = write!(key, "load {value};");
            def(*dst, local);
        }
        Inst::If { dst, cond, then_block, then_ret, else_block, else_ret } => {
            let c = name(*cond, ext, local);
            let _ = write!(key, "if {c} {{");
            for j in &then_block.insts {
                shape_inst(j, key, ext, local);
            }
            let t = name(*then_ret, ext, local);
            let _ = write!(key, "}} {t} {{");
            for j in &else_block.insts {
                shape_inst(j, key, ext, local);
            }
            let e = name(*else_ret, ext, local);
            let _ = write!(key, "}} {e};");
            def(*dst, local);
        }
        // reads, dims and loops are not rolled
        other => {
            let _ = write!(key, "other {other:?};");
        }
    }
}

/// Whether `i` can never fail (so moving it into a loop moves no error).
fn cannot_fail(i: &Inst, types: &[eqfuse_ir::ElemType]) -> bool {
    match i {
        Inst::Const { .. } | Inst::Unary { .. } | Inst::Load { .. } => true,
        Inst::Binary { op, a, .. } => {
            !(matches!(op, BinOp::Div | BinOp::Rem) && types.get(*a as usize).is_some_and(|t| !t.is_float()))
        }
        Inst::Call { .. } => true,
        Inst::If { then_block, else_block, .. } => {
            then_block.insts.iter().chain(&else_block.insts).all(|j| cannot_fail(j, types))
        }
        Inst::Read { .. } | Inst::Dim { .. } | Inst::Loop { .. } => false,
    }
}

/// One step matched: the pairing of its registers with the step before.
struct Step {
    /// Registers of the step (defined by its instructions) → their counterparts.
    pi: HashMap<Reg, Reg>,
    /// State leaves (registers of the step before), in discovery order.
    state: Vec<Reg>,
    /// For each state leaf, the step's register that is its next value.
    next: Vec<Reg>,
    /// For each state leaf, its counterpart one step further down.
    prev: Vec<Reg>,
}

/// Matches the step computing `top` against the one computing `prev`.
fn match_step(insts: &[Inst], def: &HashMap<Reg, usize>, top: Reg, prev: Reg) -> Option<Step> {
    let mut pi: HashMap<Reg, Reg> = HashMap::from([(top, prev)]);
    let mut targets: HashSet<Reg> = HashSet::from([prev]);
    let mut leaves: Vec<(Reg, Reg)> = Vec::new();
    let mut queue: VecDeque<(Reg, Reg)> = VecDeque::from([(top, prev)]);
    let mut in_step: HashSet<Reg> = HashSet::from([top]);
    while let Some((a, b)) = queue.pop_front() {
        let (ia, ib) = (&insts[*def.get(&a)?], &insts[*def.get(&b)?]);
        let ((ka, oa), (kb, ob)) = (shape(ia), shape(ib));
        if ka != kb || oa.len() != ob.len() {
            return None;
        }
        for (x, y) in oa.into_iter().zip(ob) {
            if let Some(&p) = pi.get(&x) {
                if p != y {
                    return None;
                }
                continue;
            }
            if x == y {
                // an invariant: it must not be a register of the steps
                if targets.contains(&x) || in_step.contains(&x) {
                    return None;
                }
                continue;
            }
            if targets.contains(&x) {
                pi.insert(x, y);
                leaves.push((x, y));
                continue;
            }
            if !def.contains_key(&x) || !def.contains_key(&y) {
                return None;
            }
            pi.insert(x, y);
            targets.insert(y);
            in_step.insert(x);
            queue.push_back((x, y));
        }
    }
    // every leaf is the counterpart of a register of the step: its next value
    let inverse: HashMap<Reg, Reg> =
        pi.iter().filter(|(k, _)| in_step.contains(k)).map(|(k, v)| (*v, *k)).collect();
    let mut state = Vec::new();
    let mut next = Vec::new();
    let mut before = Vec::new();
    for (leaf, down) in &leaves {
        if state.contains(leaf) {
            continue;
        }
        next.push(*inverse.get(leaf)?);
        state.push(*leaf);
        before.push(*down);
    }
    // `prev` (the top's counterpart) must be a state leaf: the top is its next value
    if !state.contains(&prev) {
        return None;
    }
    let step_pi: HashMap<Reg, Reg> = pi.into_iter().filter(|(k, _)| in_step.contains(k)).collect();
    Some(Step { pi: step_pi, state, next, prev: before })
}

fn try_roll(f: &Func) -> Option<Func> {
    let insts = &f.body.insts;
    let mut def: HashMap<Reg, usize> = HashMap::new();
    for (j, i) in insts.iter().enumerate() {
        for d in i.dsts() {
            def.insert(d, j);
        }
    }
    let top = f.ret[0];
    let (top_key, top_ops) = shape(insts.get(*def.get(&top)?)?);
    for &prev in top_ops.iter().filter(|r| def.get(r).is_some_and(|&j| shape(&insts[j]).0 == top_key)) {
        let Some(first) = match_step(insts, &def, top, prev) else { continue };
        if !first.pi.keys().all(|r| cannot_fail(&insts[def[r]], &f.reg_types)) {
            continue;
        }
        // the state variable the result is
        let Some(i_top) = first.next.iter().position(|r| *r == top) else { continue };
        // walk down: each step's state is the next state of the step below
        let mut steps = vec![first];
        while let Some(last) = steps.last() {
            let (down_top, down_prev) = (last.state[i_top], last.prev[i_top]);
            let Some(mut s) = match_step(insts, &def, down_top, down_prev) else { break };
            // the same state, one step down: align its order with the step above
            if s.next.len() != last.state.len() || s.pi.len() != last.pi.len() {
                break;
            }
            let Some(order) =
                last.state.iter().map(|x| s.next.iter().position(|n| n == x)).collect::<Option<Vec<usize>>>()
            else {
                break;
            };
            s.state = order.iter().map(|&j| s.state[j]).collect();
            s.next = order.iter().map(|&j| s.next[j]).collect();
            s.prev = order.iter().map(|&j| s.prev[j]).collect();
            if !s.pi.keys().all(|r| cannot_fail(&insts[def[r]], &f.reg_types)) {
                break;
            }
            steps.push(s);
        }
        if steps.len() < MIN_STEPS {
            continue;
        }
        return Some(build(f, &def, &steps, i_top));
    }
    None
}

/// The rolled function: the code of the lowest state, a loop, the code after.
fn build(f: &Func, def: &HashMap<Reg, usize>, steps: &[Step], i_top: usize) -> Func {
    let insts = &f.body.insts;
    let mut reg_types = f.reg_types.clone();
    let fresh = |t: eqfuse_ir::ElemType, reg_types: &mut Vec<eqfuse_ir::ElemType>| {
        reg_types.push(t);
        (reg_types.len() - 1) as Reg
    };
    let first = &steps[0];
    let lowest = &steps[steps.len() - 1];
    // the loop body: the first (topmost) step's instructions, state leaves as loop vars
    let vars: Vec<Reg> = first.state.iter().map(|s| fresh(reg_types[*s as usize], &mut reg_types)).collect();
    let mut rename: HashMap<Reg, Reg> = first.state.iter().copied().zip(vars.iter().copied()).collect();
    let mut body_idx: Vec<usize> = first.pi.keys().map(|r| def[r]).collect();
    body_idx.sort_unstable();
    body_idx.dedup();
    let mut body = Block::default();
    for j in body_idx {
        body.insts.push(clone_renamed(&insts[j], &mut rename, &mut reg_types));
    }
    let nexts: Vec<Reg> = first.next.iter().map(|r| rename.get(r).copied().unwrap_or(*r)).collect();
    let dsts: Vec<Reg> = first.state.iter().map(|s| fresh(reg_types[*s as usize], &mut reg_types)).collect();
    let count = fresh(eqfuse_ir::ElemType::I64, &mut reg_types);
    let inits = lowest.state.clone();
    // where the loop goes: after every instruction its initial state and invariants need
    let mut needed: Vec<Reg> = inits.clone();
    for i in &body.insts {
        needed.extend(shape(i).1);
    }
    let after = needed.iter().filter_map(|r| def.get(r)).copied().max().map_or(0, |j| j + 1);
    let mut out = Block::default();
    for (j, i) in insts.iter().enumerate() {
        if j == after {
            out.insts.push(Inst::Const { dst: count, value: Scalar::I64(steps.len() as i64) });
            out.insts.push(Inst::Loop {
                dsts: dsts.clone(),
                count,
                inits: inits.clone(),
                vars: vars.clone(),
                body: body.clone(),
                nexts: nexts.clone(),
            });
        }
        out.insts.push(i.clone());
    }
    if after >= insts.len() {
        out.insts.push(Inst::Const { dst: count, value: Scalar::I64(steps.len() as i64) });
        out.insts.push(Inst::Loop { dsts: dsts.clone(), count, inits, vars, body, nexts });
    }
    // the rolled instructions cannot fail: the positions of those that can are unchanged
    let g = Func {
        params: f.params.clone(),
        reg_types,
        body: out,
        ret: vec![dsts[i_top]],
        spans: f.spans.clone(),
    };
    dead_code(g)
}

/// `i` with its registers renamed: defined ones fresh, used ones through `rename`.
fn clone_renamed(i: &Inst, rename: &mut HashMap<Reg, Reg>, types: &mut Vec<eqfuse_ir::ElemType>) -> Inst {
    let mut c = i.clone();
    rename_inst(&mut c, rename, types);
    c
}

fn rename_inst(i: &mut Inst, rename: &mut HashMap<Reg, Reg>, types: &mut Vec<eqfuse_ir::ElemType>) {
    let use_ = |r: &mut Reg, rename: &HashMap<Reg, Reg>| {
        if let Some(n) = rename.get(r) {
            *r = *n;
        }
    };
    let def = |r: &mut Reg, rename: &mut HashMap<Reg, Reg>, types: &mut Vec<eqfuse_ir::ElemType>| {
        let t = types[*r as usize];
        types.push(t);
        let n = (types.len() - 1) as Reg;
        rename.insert(*r, n);
        *r = n;
    };
    match i {
        Inst::Const { dst, .. } | Inst::Load { dst, .. } => def(dst, rename, types),
        Inst::Unary { dst, a, .. } => {
            use_(a, rename);
            def(dst, rename, types);
        }
        Inst::Binary { dst, a, b, .. } => {
            use_(a, rename);
            use_(b, rename);
            def(dst, rename, types);
        }
        Inst::Call { dst, args, .. } => {
            for a in args.iter_mut() {
                use_(a, rename);
            }
            def(dst, rename, types);
        }
        Inst::If { dst, cond, then_block, then_ret, else_block, else_ret } => {
            use_(cond, rename);
            for j in then_block.insts.iter_mut() {
                rename_inst(j, rename, types);
            }
            use_(then_ret, rename);
            for j in else_block.insts.iter_mut() {
                rename_inst(j, rename, types);
            }
            use_(else_ret, rename);
            def(dst, rename, types);
        }
        // never in a rolled step (see `cannot_fail`)
        Inst::Read { .. } | Inst::Dim { .. } | Inst::Loop { .. } => {}
    }
}

/// Drops top-level instructions whose results nobody uses and that cannot fail.
///
/// One pass over the use–def graph (linear in the code's size): the live instructions are
/// those the results, or an instruction that can fail, reach through their operands; the
/// others go. (Removing dead code layer by layer until nothing changes, as this once did,
/// is quadratic on a long dead chain: the unrolled steps a rolled loop replaced.)
pub(crate) fn dead_code(mut f: Func) -> Func {
    let insts = &f.body.insts;
    let mut def: HashMap<Reg, usize> = HashMap::with_capacity(insts.len());
    for (j, i) in insts.iter().enumerate() {
        for d in i.dsts() {
            def.insert(d, j);
        }
    }
    let mut live = vec![false; insts.len()];
    let mut work: Vec<usize> = Vec::new();
    let mark = |j: usize, live: &mut Vec<bool>, work: &mut Vec<usize>| {
        if !live[j] {
            live[j] = true;
            work.push(j);
        }
    };
    for r in &f.ret {
        if let Some(&j) = def.get(r) {
            mark(j, &mut live, &mut work);
        }
    }
    for (j, i) in insts.iter().enumerate() {
        if !cannot_fail(i, &f.reg_types) {
            mark(j, &mut live, &mut work);
        }
    }
    let mut regs: Vec<Reg> = Vec::new();
    while let Some(j) = work.pop() {
        regs.clear();
        insts[j].uses(&mut regs);
        for r in &regs {
            if let Some(&k) = def.get(r) {
                mark(k, &mut live, &mut work);
            }
        }
    }
    if live.iter().all(|l| *l) {
        return f;
    }
    let mut it = live.into_iter();
    f.body.insts.retain(|_| it.next().unwrap_or(true));
    f
}
