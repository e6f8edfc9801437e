//! One plan from the plans of a program's pieces: each piece's plan is moved into one table
//! of values (its inputs and sizes become the values of the names they stand for), its
//! steps appended where they run (the program's steps, a loop's condition, a loop's body).

use eqfuse_ir::error::internal;
use eqfuse_ir::plan::{remap::remap_steps, Block, Func, Inst, Origin, Plan, Step, ValueId, ValueInfo};
use eqfuse_ir::types::ElemType;
use eqfuse_ir::Result;
use std::collections::HashMap;

/// A plan being put together, and what each name of the program is in it.
pub(crate) struct Builder {
    /// The plan: its values and its top-level steps.
    pub plan: Plan,
    /// The value each name stands for (inputs, sizes, bindings, loop states and results).
    pub env: HashMap<String, ValueId>,
    /// Sizes made up for an array whose dimension has no name (`x'd0`): the array's name and
    /// the axis they measure.
    pub fresh: HashMap<String, (String, usize)>,
}

impl Builder {
    /// A plan with no steps whose values are the program's inputs and sizes.
    pub fn new(inputs: &[(String, ElemType, usize)], sizes: &[String]) -> Builder {
        let mut b = Builder {
            plan: Plan { values: Vec::new(), steps: Vec::new(), outputs: Vec::new() },
            env: HashMap::new(),
            fresh: HashMap::new(),
        };
        for (name, elem, rank) in inputs {
            b.value(name, *elem, *rank, Origin::Input);
        }
        for s in sizes {
            b.value(s, ElemType::I64, 0, Origin::Size);
        }
        b
    }

    /// A new value named `name`, which the name then stands for.
    pub fn value(&mut self, name: &str, elem: ElemType, rank: usize, origin: Origin) -> ValueId {
        let id = self.plan.values.len();
        self.plan.values.push(ValueInfo { name: name.to_string(), elem, rank, origin, span: None });
        self.env.insert(name.to_string(), id);
        id
    }

    /// A new computed value that no name stands for.
    pub fn anonymous(&mut self, info: &ValueInfo) -> ValueId {
        let id = self.plan.values.len();
        self.plan.values.push(ValueInfo { origin: Origin::Computed, ..info.clone() });
        id
    }

    /// Moves `sub` (a piece's plan) into this plan: its steps are appended to `to` (the
    /// program's steps when `None`), and its outputs returned by name.
    pub fn embed(&mut self, sub: &Plan, to: Option<&mut Vec<Step>>) -> Result<HashMap<String, ValueId>> {
        let mut pre: Vec<Step> = Vec::new();
        let mut map: Vec<ValueId> = Vec::with_capacity(sub.values.len());
        for info in &sub.values {
            let id = match info.origin {
                Origin::Computed => self.anonymous(info),
                Origin::Input | Origin::Size => match self.env.get(&info.name) {
                    Some(&id) => id,
                    None => match self.fresh.get(&info.name).cloned() {
                        // a made-up size: measured on the array before the piece runs
                        Some((array, axis)) => {
                            let &arr = self.env.get(&array).ok_or_else(|| missing(&array))?;
                            let id = self.anonymous(&ValueInfo {
                                name: info.name.clone(),
                                elem: ElemType::I64,
                                rank: 0,
                                origin: Origin::Computed,
                                span: None,
                            });
                            pre.push(Step::Scalar { dst: id, body: dim_func(arr, axis) });
                            id
                        }
                        None => return Err(missing(&info.name)),
                    },
                },
            };
            map.push(id);
        }
        let mut steps = sub.steps.clone();
        remap_steps(&mut steps, &mut |v| map.get(v).copied().unwrap_or(v));
        let to = match to {
            Some(list) => list,
            None => &mut self.plan.steps,
        };
        to.extend(pre);
        to.extend(steps);
        sub.outputs
            .iter()
            .map(|(name, v)| map.get(*v).map(|&id| (name.clone(), id)).ok_or_else(|| missing(name)))
            .collect()
    }
}

fn missing(name: &str) -> eqfuse_ir::Error {
    internal(format!("putting a loop's plan together: no value for `{name}`"))
}

/// The host function `size array axis`.
fn dim_func(array: ValueId, axis: usize) -> Func {
    Func {
        params: vec![],
        reg_types: vec![ElemType::I64, ElemType::I64],
        body: Block {
            insts: vec![
                Inst::Const { dst: 0, value: eqfuse_ir::value::Scalar::I64(axis as i64) },
                Inst::Dim { dst: 1, array, axis: 0 },
            ],
        },
        ret: vec![1],
        spans: vec![],
    }
}
