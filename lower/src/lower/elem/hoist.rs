//! What every path of a block computes ([`crate::strict`]): noted as the block is written,
//! and computed once before a conditional whose branches all need it (or that the block
//! needs anyway).

use super::super::Lowerer;
use super::builder::FuncBuilder;
use super::builder::{key_of, lazy_arg, MemoKey};
use crate::strict::View;
use eqfuse_egraph::analysis::Kind;
use eqfuse_egraph::lang::ArrayLang;
use eqfuse_ir::error::Result;
use eqfuse_ir::plan::Reg;
use std::collections::HashMap;

impl Lowerer<'_> {
    /// Notes that the block being written computes `strict(i)` under `env` (and, through a
    /// parameter whose argument is not computed yet, the argument's strict subterms).
    pub(super) fn note_strict(&mut self, fb: &mut FuncBuilder, i: usize, env: &[Reg]) {
        if !self.has_cond {
            return;
        }
        let FuncBuilder { strict, lazy, memo, .. } = fb;
        let Some(will) = strict.last_mut() else { return };
        let view =
            View { nodes: self.nodes, kinds: &self.kinds, free: &self.free, branching: &self.branching };
        let (free, nodes) = (&self.free, self.nodes);
        let mut work = vec![(i, env.to_vec())];
        while let Some((root, e)) = work.pop() {
            self.strict.walk(&view, root, &mut |n| {
                let Some(k) = key_of(free, n, &e) else { return false };
                // a value an enclosing block has computed is there, and so is what it
                // needed: nothing below it is this block's to compute (without this stop,
                // a chain of `if`s walks the whole chain again in every branch)
                if memo.iter().any(|m| m.contains_key(&k)) || !will.insert(k) {
                    return false;
                }
                if let Some(arg) = lazy_arg(nodes, lazy, n, &e) {
                    work.push(arg);
                }
                true
            });
        }
    }

    /// `strict(b)` under `env` as (node, environment) pairs, through the arguments of
    /// parameters not computed yet.
    fn strict_pairs(&mut self, fb: &FuncBuilder, b: usize, env: &[Reg]) -> HashMap<MemoKey, Vec<Reg>> {
        let view =
            View { nodes: self.nodes, kinds: &self.kinds, free: &self.free, branching: &self.branching };
        let mut out = HashMap::new();
        let mut work = vec![(b, env.to_vec())];
        while let Some((root, e)) = work.pop() {
            for n in self.strict.of(&view, root).iter() {
                let Some(k) = key_of(&self.free, n, &e) else { continue };
                if out.contains_key(&k) || fb.lookup(&k).is_some() {
                    continue;
                }
                if let Some(arg) = lazy_arg(self.nodes, &fb.lazy, n, &e) {
                    work.push(arg);
                }
                out.insert(k, e.clone());
            }
        }
        out
    }

    /// Before the branches `bs` of a conditional: computes the values they need that the
    /// block computes on every path anyway ([`crate::strict`]: all of them need it, or
    /// the block does), once, here.
    pub(super) fn hoist(&mut self, fb: &mut FuncBuilder, bs: &[usize], env: &[Reg]) -> Result<()> {
        if !self.has_cond {
            return Ok(());
        }
        let sets: Vec<_> = bs.iter().map(|&b| self.strict_pairs(fb, b, env)).collect();
        let mut want: Vec<(&MemoKey, &Vec<Reg>)> = sets.iter().flat_map(|s| s.iter()).collect();
        want.sort();
        want.dedup();
        for (key, e) in want {
            let n = key.0;
            let scalar =
                matches!(self.kinds[n], Kind::Scalar(_)) && !matches!(self.nodes[n], ArrayLang::Lit(_));
            let everywhere = sets.len() > 1 && sets.iter().all(|s| s.contains_key(key));
            let anyway = fb.strict.last().is_some_and(|w| w.contains(key));
            if scalar && (everywhere || anyway) && fb.lookup(key).is_none() {
                self.scalar(fb, n, e)?;
            }
        }
        Ok(())
    }
}
