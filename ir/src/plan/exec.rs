//! The step walker: the one interpreter of a plan's host steps, which every executor runs.
//!
//! A plan's steps are of two sorts. Host steps — [`Step::Scalar`], [`Step::Assert`],
//! [`Step::If`] — mean the same on every executor: evaluate a function of no parameters,
//! check a condition and fail with the assert's error, run one branch and name its result.
//! Kernel steps — [`Step::Kernel`], [`Step::RowBlock`], [`Step::SegmentBlock`] — are where
//! executors differ. [`run_steps`] walks the steps once, here, and asks an [`Executor`] only
//! for what differs: launch a kernel, evaluate a host function, read a 0-d value on the host,
//! write one, and give a value a second name.
//!
//! Every kernel has a [`KernelId`]: its place in [`Plan::kernels`] order (both branches of
//! an `if`, the `then` branch's first), which is also the number `explain` prints (`k3`).
//! The walker hands each launch its id, so an executor looks a kernel's prepared code up by
//! it (no map from addresses, no counter of its own).

use super::{Func, Kernel, LoopKind, LoopStep, Plan, Step, ValueId};
use crate::error::{internal, Result};
use crate::value::Scalar;

/// A kernel of a plan: its number in [`Plan::kernels`] order (`k<n>` in `explain`).
///
/// Ids are a function of the plan alone, so they are the same on every executor, in every
/// run, and in the code an executor prepared for the plan before running it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KernelId(pub usize);

impl KernelId {
    /// The kernel's position in [`Plan::kernels`].
    pub fn index(self) -> usize {
        self.0
    }

    /// The id `n` kernels after this one (phase `n` of a block whose first phase is `self`).
    pub fn offset(self, n: usize) -> KernelId {
        KernelId(self.0 + n)
    }
}

impl std::fmt::Display for KernelId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "k{}", self.0)
    }
}

/// The phases of a block step ([`Step::RowBlock`], [`Step::SegmentBlock`]) with their ids.
#[derive(Clone, Copy, Debug)]
pub struct Phases<'p> {
    /// The id of the first phase; phase `i` is `first.offset(i)`.
    pub first: KernelId,
    /// The phases, in order.
    pub kernels: &'p [Kernel],
    /// What only later phases of the block read (the step's `local`).
    pub local: &'p [ValueId],
}

impl<'p> Phases<'p> {
    /// Each phase with its id, in order.
    pub fn iter(&self) -> impl Iterator<Item = (KernelId, &'p Kernel)> + '_ {
        let first = self.first;
        self.kernels.iter().enumerate().map(move |(i, k)| (first.offset(i), k))
    }
}

/// What an executor does for [`run_steps`]: the operations on which executors differ.
pub trait Executor {
    /// Called before every step, nested ones included (the CPU executor polls its cancel
    /// flag here). Does nothing by default.
    fn before_step(&mut self) -> Result<()> {
        Ok(())
    }

    /// Runs kernel `k`, number `id`, and stores its results (its errors at the kernel's
    /// position, as the executor reports them).
    fn launch(&mut self, id: KernelId, k: &Kernel) -> Result<()>;

    /// Runs the phases of a row block. By default, one by one with [`Executor::launch`]:
    /// the same results as block by block.
    fn row_block(&mut self, phases: Phases<'_>) -> Result<()> {
        phases.iter().try_for_each(|(id, k)| self.launch(id, k))
    }

    /// Runs the phases of a segment block. By default, one by one with
    /// [`Executor::launch`]: the same results as segment by segment.
    fn segment_block(&mut self, phases: Phases<'_>) -> Result<()> {
        phases.iter().try_for_each(|(id, k)| self.launch(id, k))
    }

    /// Evaluates `f`, a function of no parameters and one result, on the host (a
    /// `Step::Scalar`'s body, an assert's condition).
    fn host(&mut self, f: &Func) -> Result<Scalar>;

    /// The 0-d value `v`, on the host.
    fn load(&mut self, v: ValueId) -> Result<Scalar>;

    /// Writes `s` as the 0-d value `dst`.
    fn put_scalar(&mut self, dst: ValueId, s: Scalar) -> Result<()>;

    /// Makes `dst` the value `src` already is (an `if`'s result is its taken branch's).
    fn alias(&mut self, dst: ValueId, src: ValueId) -> Result<()>;

    /// The shape of value `v` (empty for a 0-d value): a loop checks that its state keeps
    /// its shapes.
    fn shape(&mut self, v: ValueId) -> Result<Vec<usize>>;

    /// Forgets value `v`, which a loop's next iteration writes again (a value is otherwise
    /// written once).
    fn forget(&mut self, v: ValueId) -> Result<()>;

    /// Makes every `dst[k]` the value `src[k]` is, all at once (a `src` may be a `dst`: a
    /// loop's state that the body leaves as it is), whatever `dst[k]` was: a loop's state
    /// takes its initial values, then each iteration's results, and the loop's results its
    /// final state. With `spares` (the state taking an iteration's results), an executor
    /// that owns its buffers may keep a state's old buffer for the kernel that writes the
    /// same part next time (double buffering: no iteration after the first allocates).
    fn rebind(&mut self, dst: &[ValueId], src: &[ValueId], spares: bool) -> Result<()>;
}

/// Runs `plan`'s steps on `exec`, in order: host steps here, kernels and blocks through the
/// executor, each kernel with its [`KernelId`].
pub fn run_steps<E: Executor + ?Sized>(plan: &Plan, exec: &mut E) -> Result<()> {
    walk(&plan.steps, KernelId(0), exec)
}

/// Runs `steps`, whose first kernel is `first`. Only the taken branch of an `if` runs; its
/// kernels keep the ids they have in the whole plan (recursion bounded by the program's
/// `if` nesting).
fn walk<E: Executor + ?Sized>(steps: &[Step], first: KernelId, exec: &mut E) -> Result<()> {
    let mut next = first;
    for step in steps {
        exec.before_step()?;
        match step {
            Step::Scalar { dst, body } => {
                let s = exec.host(body)?;
                exec.put_scalar(*dst, s)?;
            }
            Step::Kernel(k) => exec.launch(next, k)?,
            Step::RowBlock { kernels, local } => exec.row_block(Phases { first: next, kernels, local })?,
            Step::SegmentBlock { kernels, local } => {
                exec.segment_block(Phases { first: next, kernels, local })?
            }
            Step::Assert { cond, code, message, shown, span } => match exec.host(cond)? {
                Scalar::Bool(true) => {}
                Scalar::Bool(false) => {
                    return Err(super::assert_error(*code, message, shown, *span, |v| exec.load(v)))
                }
                other => {
                    return Err(internal(format!("an assert's condition is {}, not bool", other.elem_type())))
                }
            },
            Step::If { cond, then_steps, then_value, else_steps, else_value, dst } => {
                let taken = match exec.load(*cond)? {
                    Scalar::Bool(b) => b,
                    other => {
                        return Err(internal(format!("an `if` condition that is {}", other.elem_type())))
                    }
                };
                if taken {
                    walk(then_steps, next, exec)?;
                } else {
                    walk(else_steps, next.offset(kernel_count(then_steps)), exec)?;
                }
                exec.alias(*dst, if taken { *then_value } else { *else_value })?;
            }
            Step::Loop(l) => run_loop(l, next, exec)?,
        }
        next = next.offset(step_kernels(step));
    }
    Ok(())
}

/// Runs a loop: the state starts as `init`; each iteration (a `for`: `count` of them; a
/// `while`: while its condition's steps give `true`) runs the body and makes its results
/// the state; the loop's results are the final state. `first` is the id of the loop's
/// first kernel (its condition's, then its body's).
fn run_loop<E: Executor + ?Sized>(l: &LoopStep, first: KernelId, exec: &mut E) -> Result<()> {
    if l.state.len() != l.init.len() || l.state.len() != l.next.len() || l.state.len() != l.dst.len() {
        return Err(internal("a loop whose state, initial state, next state and results differ in number"));
    }
    // what an iteration writes, which the next one writes again
    let mut again: Vec<ValueId> = Vec::new();
    if let LoopKind::For { counter, .. } = &l.form {
        again.push(*counter);
    }
    for steps in l.step_lists() {
        deep_writes(steps, &mut again);
    }
    exec.rebind(&l.state, &l.init, false)?;
    let shapes: Vec<Vec<usize>> = l.state.iter().map(|s| exec.shape(*s)).collect::<Result<_>>()?;
    let count = match &l.form {
        LoopKind::For { count, .. } => match exec.load(*count)? {
            Scalar::I64(n) => n,
            other => return Err(internal(format!("a loop count that is {}", other.elem_type()))),
        },
        LoopKind::While { .. } => i64::MAX,
    };
    let body_first = match &l.form {
        LoopKind::While { steps, .. } => first.offset(kernel_count(steps)),
        LoopKind::For { .. } => first,
    };
    let mut i = 0i64;
    while i < count {
        // a loop that never ends is stopped where the executor polls (cancel, time limit)
        exec.before_step()?;
        if i > 0 {
            for v in &again {
                exec.forget(*v)?;
            }
        }
        match &l.form {
            LoopKind::For { counter, .. } => exec.put_scalar(*counter, Scalar::I64(i))?,
            LoopKind::While { steps, cond } => {
                walk(steps, first, exec)?;
                match exec.load(*cond)? {
                    Scalar::Bool(true) => {}
                    Scalar::Bool(false) => break,
                    other => return Err(internal(format!("a loop condition that is {}", other.elem_type()))),
                }
            }
        }
        walk(&l.body, body_first, exec)?;
        for (k, n) in l.next.iter().enumerate() {
            let got = exec.shape(*n)?;
            if got != shapes[k] {
                let name = l.names.get(k).map_or("?", String::as_str);
                let e = crate::error::Error::new(
                    crate::error::Code::Shape,
                    format!(
                        "the loop's state `{name}` changes shape from {} to {} in iteration {i}: every array \
                         of a loop's state keeps its shape",
                        fmt_dims(&shapes[k]),
                        fmt_dims(&got)
                    ),
                );
                return Err(crate::error::Error { span: l.span, ..e });
            }
        }
        exec.rebind(&l.state, &l.next, true)?;
        i += 1;
    }
    exec.rebind(&l.dst, &l.state, false)
}

/// A shape as `[3, 4]`.
fn fmt_dims(shape: &[usize]) -> String {
    format!("{shape:?}")
}

/// Every value `steps` write, those of nested steps included (a nested loop's state,
/// counter and results, and what its body writes).
fn deep_writes(steps: &[Step], out: &mut Vec<ValueId>) {
    for s in steps {
        match s {
            Step::If { then_steps, else_steps, dst, .. } => {
                out.push(*dst);
                deep_writes(then_steps, out);
                deep_writes(else_steps, out);
            }
            Step::Loop(l) => {
                out.extend(l.state.iter().chain(&l.dst).copied());
                if let LoopKind::For { counter, .. } = &l.form {
                    out.push(*counter);
                }
                for steps in l.step_lists() {
                    deep_writes(steps, out);
                }
            }
            other => out.extend(other.writes()),
        }
    }
}

/// How many kernels `step` holds (both branches of an `if`).
fn step_kernels(step: &Step) -> usize {
    match step {
        Step::Kernel(_) => 1,
        Step::RowBlock { kernels, .. } | Step::SegmentBlock { kernels, .. } => kernels.len(),
        Step::If { then_steps, else_steps, .. } => kernel_count(then_steps) + kernel_count(else_steps),
        Step::Loop(l) => l.step_lists().into_iter().map(kernel_count).sum(),
        Step::Scalar { .. } | Step::Assert { .. } => 0,
    }
}

/// How many kernels `steps` hold, in [`Plan::kernels`] order.
fn kernel_count(steps: &[Step]) -> usize {
    steps.iter().map(step_kernels).sum()
}

/// Every step of `plan` that holds kernels (a kernel, a row block, a segment block), both
/// branches of every `if` included, with the id of its first kernel, in [`Plan::kernels`]
/// order: for what an executor prepares before running (code per kernel, per block).
pub fn kernel_steps(plan: &Plan) -> Vec<(KernelId, &Step)> {
    fn go<'p>(steps: &'p [Step], next: &mut KernelId, out: &mut Vec<(KernelId, &'p Step)>) {
        for s in steps {
            match s {
                Step::Kernel(_) | Step::RowBlock { .. } | Step::SegmentBlock { .. } => {
                    out.push((*next, s));
                    *next = next.offset(step_kernels(s));
                }
                Step::If { then_steps, else_steps, .. } => {
                    go(then_steps, next, out);
                    go(else_steps, next, out);
                }
                Step::Loop(l) => {
                    for steps in l.step_lists() {
                        go(steps, next, out);
                    }
                }
                Step::Scalar { .. } | Step::Assert { .. } => {}
            }
        }
    }
    let mut out = Vec::new();
    go(&plan.steps, &mut KernelId(0), &mut out);
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::error::Code;
    use crate::plan::{Arg, Block, KernelKind, Lane, LaneOp, Origin, ValueInfo};
    use crate::types::ElemType;
    use std::collections::HashMap;

    /// A kernel over `[1]` writing value `dst`.
    fn kernel(dst: ValueId) -> Kernel {
        Kernel {
            kind: KernelKind::Generate,
            space: vec![Arg::Const(1)],
            elem: Func {
                params: vec![ElemType::I64],
                reg_types: vec![ElemType::I64],
                body: Block { insts: vec![] },
                ret: vec![0],
                spans: vec![],
            },
            lanes: vec![Lane { dst, op: LaneOp::Generate }],
            span: None,
            contraction: None,
            view_of: None,
        }
    }

    /// A host function returning the constant `s`.
    fn constant(s: Scalar) -> Func {
        Func {
            params: vec![],
            reg_types: vec![s.elem_type()],
            body: Block { insts: vec![crate::plan::Inst::Const { dst: 0, value: s }] },
            ret: vec![0],
            spans: vec![],
        }
    }

    /// Values `v0 ..= v<n-1>`, all computed.
    fn values(n: usize) -> Vec<ValueInfo> {
        (0..n)
            .map(|i| ValueInfo {
                name: format!("v{i}"),
                elem: ElemType::I64,
                rank: 0,
                origin: Origin::Computed,
                span: None,
            })
            .collect()
    }

    /// k0; if v1 then { k1; row block k2..k3 } else { k4; segment block k5..k6 }; k7.
    fn branching(cond: bool) -> Plan {
        Plan {
            values: values(12),
            steps: vec![
                Step::Kernel(kernel(0)),
                Step::Scalar { dst: 1, body: constant(Scalar::Bool(cond)) },
                Step::If {
                    cond: 1,
                    then_steps: vec![
                        Step::Kernel(kernel(2)),
                        Step::RowBlock { kernels: vec![kernel(3), kernel(4)], local: vec![3] },
                    ],
                    then_value: 4,
                    else_steps: vec![
                        Step::Kernel(kernel(5)),
                        Step::SegmentBlock { kernels: vec![kernel(6), kernel(7)], local: vec![] },
                    ],
                    else_value: 7,
                    dst: 8,
                },
                Step::Kernel(kernel(9)),
            ],
            outputs: vec![("out".into(), 9)],
        }
    }

    /// Records what the walker asks for; 0-d values live in `vals`.
    #[derive(Default)]
    struct Log {
        launched: Vec<(KernelId, ValueId)>,
        aliases: Vec<(ValueId, ValueId)>,
        steps: usize,
        vals: HashMap<ValueId, Scalar>,
    }

    impl Executor for Log {
        fn before_step(&mut self) -> Result<()> {
            self.steps += 1;
            Ok(())
        }
        fn launch(&mut self, id: KernelId, k: &Kernel) -> Result<()> {
            self.launched.push((id, k.lanes[0].dst));
            Ok(())
        }
        fn host(&mut self, f: &Func) -> Result<Scalar> {
            match f.body.insts.first() {
                Some(crate::plan::Inst::Const { value, .. }) => Ok(*value),
                _ => Err(internal("not a constant")),
            }
        }
        fn load(&mut self, v: ValueId) -> Result<Scalar> {
            self.vals.get(&v).copied().ok_or_else(|| internal(format!("no v{v}")))
        }
        fn put_scalar(&mut self, dst: ValueId, s: Scalar) -> Result<()> {
            self.vals.insert(dst, s);
            Ok(())
        }
        fn alias(&mut self, dst: ValueId, src: ValueId) -> Result<()> {
            self.aliases.push((dst, src));
            Ok(())
        }
        fn shape(&mut self, _: ValueId) -> Result<Vec<usize>> {
            Ok(Vec::new())
        }
        fn forget(&mut self, v: ValueId) -> Result<()> {
            self.vals.remove(&v);
            Ok(())
        }
        fn rebind(&mut self, dst: &[ValueId], src: &[ValueId], _: bool) -> Result<()> {
            let got: Vec<Option<Scalar>> = src.iter().map(|s| self.vals.get(s).copied()).collect();
            for (d, g) in dst.iter().zip(got) {
                match g {
                    Some(x) => self.vals.insert(*d, x),
                    None => self.vals.remove(d),
                };
            }
            Ok(())
        }
    }

    /// The id of the kernel that writes `dst`, by its place in `Plan::kernels`.
    fn id_of(plan: &Plan, dst: ValueId) -> KernelId {
        KernelId(plan.kernels().iter().position(|k| k.lanes[0].dst == dst).unwrap_or(usize::MAX))
    }

    #[test]
    fn kernels_of_either_branch_keep_their_plan_kernels_ids() {
        for cond in [true, false] {
            let plan = branching(cond);
            let mut log = Log::default();
            run_steps(&plan, &mut log).unwrap();
            // every launch carries the id `explain` prints for that kernel, also after an
            // `if` whose `else` branch ran (a counter of launches would give k2, k3, k4)
            for &(id, dst) in &log.launched {
                assert_eq!(id, id_of(&plan, dst), "cond {cond}: {:?}", log.launched);
            }
            let dsts: Vec<ValueId> = log.launched.iter().map(|l| l.1).collect();
            let want = if cond { vec![0, 2, 3, 4, 9] } else { vec![0, 5, 6, 7, 9] };
            assert_eq!(dsts, want);
            assert_eq!(log.launched.last().map(|l| l.0), Some(KernelId(7)));
            assert_eq!(log.aliases, vec![(8, if cond { 4 } else { 7 })]);
            // four top-level steps and the taken branch's two
            assert_eq!(log.steps, 6);
        }
    }

    #[test]
    fn kernel_steps_number_both_branches_as_plan_kernels_does() {
        let plan = branching(true);
        let firsts: Vec<usize> = kernel_steps(&plan).iter().map(|(id, _)| id.index()).collect();
        assert_eq!(firsts, vec![0, 1, 2, 4, 5, 7]);
        assert_eq!(plan.kernels().len(), 8);
        assert_eq!(KernelId(3).to_string(), "k3");
    }

    #[test]
    fn a_failed_assert_is_its_error_and_stops_the_run() {
        let assert = |cond: Scalar| Step::Assert {
            cond: constant(cond),
            code: Code::Shape,
            message: "shapes {0} differ".into(),
            shown: vec![vec![Arg::Const(2), Arg::Value(0)]],
            span: None,
        };
        let mut plan = branching(true);
        plan.steps.insert(1, Step::Scalar { dst: 10, body: constant(Scalar::I64(5)) });
        plan.steps[0] = Step::Scalar { dst: 0, body: constant(Scalar::I64(3)) };
        plan.steps.insert(2, assert(Scalar::Bool(false)));
        let mut log = Log::default();
        let e = run_steps(&plan, &mut log).unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (Code::Shape, "shapes [2, 3] differ"));
        assert!(log.launched.is_empty());
        plan.steps[2] = assert(Scalar::I64(1));
        let e = run_steps(&plan, &mut Log::default()).unwrap_err();
        assert!(e.message.contains("an assert's condition is i64, not bool"), "{}", e.message);
    }

    #[test]
    fn an_if_on_a_condition_that_is_not_bool_is_an_internal_error() {
        let mut plan = branching(true);
        plan.steps[1] = Step::Scalar { dst: 1, body: constant(Scalar::I64(1)) };
        let mut log = Log::default();
        let e = run_steps(&plan, &mut log).unwrap_err();
        assert!(e.message.contains("an `if` condition that is i64"), "{}", e.message);
        assert_eq!(log.launched, vec![(KernelId(0), 0)]);
    }

    #[test]
    fn the_interpreter_names_a_kernel_of_an_else_branch_as_explain_does() {
        let plan = crate::plan::fixtures::malformed_else();
        assert!(plan.to_string().contains("k1 generate"), "{plan}");
        let e = crate::plan::eval::eval(&plan, &Default::default(), &Default::default()).unwrap_err();
        // a counter of the kernels run so far would call it k0
        assert!(e.message.contains("kernel k1: an element function of 2 results"), "{}", e.message);
    }
}
