//! A plan drawn as a Graphviz DOT graph (`eqfuse explain --dot FILE`).
//!
//! ```text
//! digraph plan {
//!   in0 [label="xs", shape=ellipse];
//!   k0 [label="k0 generate [n]", shape=box];
//!   k1 [label="k1 reduce [n]", shape=box];
//!   out0 [label="s", shape=doublecircle];
//!   in0 -> k0 [label="xs"];
//!   k0 -> k1 [label="e"];
//!   k1 -> out0 [label="s"];
//! }
//! ```
//!
//! - every kernel is a box `k<i>` labelled with its number, kind and space extents;
//! - every host scalar step is a small ellipse `s<i>`, every run-time check a small octagon
//!   `a<i>`, every `if` over arrays a diamond `if<i>` whose branches are clusters;
//! - every program input is an ellipse `in<v>`; every output a `doublecircle` `out<j>`;
//! - an edge goes from the step (or input) that produces a value to every step that reads
//!   it, labelled with the value's name, and from the producer of an output to its node.
//!
//! Steps are numbered as the text form numbers them (`k0, k1, ...` in plan order, the
//! branches of an `if` included). Size names are not nodes: they are bound from the inputs'
//! shapes and appear in the kernels' extents (a size that is itself an output gets a plain
//! node). The output is deterministic: nodes and edges in plan order.

use super::{Arg, Plan, Step, ValueId};
use std::collections::HashMap;
use std::fmt::Write;

/// The plan as a `digraph plan { ... }`.
pub fn to_dot(plan: &Plan) -> String {
    let mut d = Dot { plan, out: String::new(), producer: HashMap::new(), counts: [0; 4] };
    d.out.push_str("digraph plan {\n  rankdir=TB;\n  node [fontname=\"monospace\"];\n");
    d.out.push_str("  edge [fontname=\"monospace\", fontsize=10];\n");
    for (v, info) in plan.values.iter().enumerate() {
        if info.origin == super::Origin::Input {
            let id = format!("in{v}");
            let _ = writeln!(d.out, "  {id} [label=\"{}\", shape=ellipse];", escape(&info.name));
            d.producer.insert(v, id);
        }
    }
    let mut edges = Vec::new();
    d.steps(&plan.steps, "  ", &mut edges);
    for (j, (name, v)) in plan.outputs.iter().enumerate() {
        let id = format!("out{j}");
        let _ = writeln!(d.out, "  {id} [label=\"{}\", shape=doublecircle];", escape(name));
        if !d.producer.contains_key(v) {
            // a size (or an unknown value) as an output: give it a node of its own
            let src = format!("v{v}");
            let _ = writeln!(d.out, "  {src} [label=\"{}\", shape=plain];", escape(&d.name(*v)));
            d.producer.insert(*v, src);
        }
        edges.push((*v, id));
    }
    for (v, consumer) in edges {
        if let Some(src) = d.producer.get(&v) {
            let _ = writeln!(d.out, "  {src} -> {consumer} [label=\"{}\"];", escape(&d.name(v)));
        }
    }
    d.out.push_str("}\n");
    d.out
}

struct Dot<'a> {
    plan: &'a Plan,
    out: String,
    /// The node that produces each value (inputs, then steps as they are drawn).
    producer: HashMap<ValueId, String>,
    /// Scalars, kernels, asserts and `if`s drawn so far.
    counts: [usize; 4],
}

impl Dot<'_> {
    fn name(&self, v: ValueId) -> String {
        match self.plan.values.get(v) {
            Some(info) => info.name.clone(),
            None => format!("v{v}"),
        }
    }

    /// Draws `steps` (lines indented by `ind`); pushes (value, consumer node) for each read.
    fn steps(&mut self, steps: &[Step], ind: &str, edges: &mut Vec<(ValueId, String)>) {
        for step in steps {
            let (id, reads) = match step {
                Step::Scalar { dst, .. } => {
                    let id = format!("s{}", self.counts[0]);
                    self.counts[0] += 1;
                    let label = format!("{id} {}", self.name(*dst));
                    let _ = writeln!(
                        self.out,
                        "{ind}{id} [label=\"{}\", shape=ellipse, fontsize=10, height=0.3];",
                        escape(&label)
                    );
                    (id, step.reads())
                }
                Step::Kernel(k) => {
                    let id = format!("k{}", self.counts[1]);
                    self.counts[1] += 1;
                    let extents: Vec<String> = k
                        .space
                        .iter()
                        .map(|a| match a {
                            Arg::Const(c) => c.to_string(),
                            Arg::Value(v) => self.name(*v),
                        })
                        .collect();
                    let label = format!("{id} {} [{}]", k.kind, extents.join(", "));
                    let _ = writeln!(self.out, "{ind}{id} [label=\"{}\", shape=box];", escape(&label));
                    (id, step.reads())
                }
                Step::Assert { code, .. } => {
                    let id = format!("a{}", self.counts[2]);
                    self.counts[2] += 1;
                    let label = format!("{id} assert {code}");
                    let _ = writeln!(
                        self.out,
                        "{ind}{id} [label=\"{}\", shape=octagon, fontsize=10, height=0.3];",
                        escape(&label)
                    );
                    (id, step.reads())
                }
                Step::RowBlock { kernels, .. } | Step::SegmentBlock { kernels, .. } => {
                    // its phases, drawn as the kernels they are
                    let phases: Vec<Step> = kernels.iter().cloned().map(Step::Kernel).collect();
                    self.steps(&phases, ind, edges);
                    continue;
                }
                Step::If { cond, then_steps, then_value, else_steps, else_value, dst } => {
                    let id = format!("if{}", self.counts[3]);
                    self.counts[3] += 1;
                    let deeper = format!("{ind}  ");
                    for (branch, steps) in [("then", then_steps), ("else", else_steps)] {
                        let _ = writeln!(self.out, "{ind}subgraph cluster_{id}_{branch} {{");
                        let _ = writeln!(self.out, "{deeper}label=\"{id} {branch}\";");
                        let _ = writeln!(self.out, "{deeper}style=dashed;");
                        self.steps(steps, &deeper, edges);
                        let _ = writeln!(self.out, "{ind}}}");
                    }
                    let label = format!("{id} {} = if {}", self.name(*dst), self.name(*cond));
                    let _ = writeln!(self.out, "{ind}{id} [label=\"{}\", shape=diamond];", escape(&label));
                    (id, vec![*cond, *then_value, *else_value])
                }
                Step::Loop(l) => {
                    let id = format!("loop{}", self.counts[3]);
                    self.counts[3] += 1;
                    let deeper = format!("{ind}  ");
                    let _ = writeln!(self.out, "{ind}subgraph cluster_{id} {{");
                    let _ = writeln!(self.out, "{deeper}label=\"{id} body\";");
                    let _ = writeln!(self.out, "{deeper}style=dashed;");
                    for steps in l.step_lists() {
                        self.steps(steps, &deeper, edges);
                    }
                    let _ = writeln!(self.out, "{ind}}}");
                    let names: Vec<String> = l.dst.iter().map(|v| self.name(*v)).collect();
                    let label = format!("{id} ({}) = loop", names.join(", "));
                    let _ = writeln!(self.out, "{ind}{id} [label=\"{}\", shape=hexagon];", escape(&label));
                    (id, step.reads())
                }
            };
            let mut seen: Vec<ValueId> = Vec::new();
            for v in reads {
                if !seen.contains(&v) {
                    seen.push(v);
                    edges.push((v, id.clone()));
                }
            }
            for v in step.writes() {
                self.producer.insert(v, id.clone());
            }
        }
    }
}

/// `s` inside a DOT double-quoted string: quotes and backslashes escaped, newlines as `\n`.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}
