//! Collapsing a space's dimensions: an element function over `[paths, 5, 3]` that uses its
//! indices only to read arrays of the space's shape at the point itself (`p[i, j, k]`)
//! computes element `f` of the flattened space from element `f` of each array, so an
//! executor may run it as one loop over `paths * 5 * 3` points (which a C compiler
//! vectorises) instead of a loop of three points inside a loop over rows.
//! [`Func::flat_reads`] says when: which arrays are read that way, provided no index is
//! used otherwise. The executor must still check at run time that every such array has the
//! space's extents along every axis but the first (a row-major array wider than the space
//! would put point `(i, j)` at another offset).

use super::{Func, Inst, Reg, ValueId};

impl Func {
    /// The arrays this element function, over a space of `rank >= 2` dimensions (its first
    /// `rank` parameters are the space's indices), reads at the point itself (`a[i, j]`,
    /// every index in order), when those reads are the only use of the indices; `None`
    /// when an index is used otherwise (in arithmetic, a comparison, returned, or in a read
    /// at another position) or the space has one dimension.
    ///
    /// ```
    /// use eqfuse_ir::plan::fixtures::{edge_stencil, flat_map};
    /// let (elem, space) = flat_map();
    /// assert_eq!(elem.flat_reads(space.len()), Some(vec![0]));
    /// let (stencil, space) = edge_stencil();
    /// assert_eq!(stencil.flat_reads(space.len()), None);
    /// ```
    pub fn flat_reads(&self, rank: usize) -> Option<Vec<ValueId>> {
        if rank < 2 || self.params.len() != rank {
            return None;
        }
        let is_index = |r: &Reg| (*r as usize) < rank;
        if self.ret.iter().any(is_index) {
            return None;
        }
        let identity: Vec<Reg> = (0..rank as Reg).collect();
        let mut arrays = Vec::new();
        let mut flat = true;
        self.body.visit(&mut |i| {
            let operands = match i {
                Inst::Read { array, index, .. } if *index == identity => {
                    if !arrays.contains(array) {
                        arrays.push(*array);
                    }
                    return;
                }
                // a nested block's instructions are visited on their own
                Inst::If { cond, then_ret, else_ret, .. } => vec![*cond, *then_ret, *else_ret],
                Inst::Loop { count, inits, nexts, .. } => {
                    let mut v = vec![*count];
                    v.extend(inits.iter().chain(nexts));
                    v
                }
                _ => {
                    let mut v = Vec::new();
                    i.uses(&mut v);
                    v
                }
            };
            flat &= !operands.iter().any(is_index);
        });
        flat.then_some(arrays)
    }
}

impl Func {
    /// Whether this element function, over a space of two or more dimensions `[.., i, j]`
    /// (its parameters), reads an array across its rows: the array's last axis indexed by
    /// the last outer index `i` and an earlier axis by the inner index `j` (`a[j, i]`, a
    /// transposed walk; `b[p, j]` of a matrix product's `[i, j, p]`). A reduction of `j`
    /// over such a space reads one element of each row of `a` per step; folding several
    /// outer indices at once, inner index by inner index, reads those rows' elements side
    /// by side instead.
    ///
    /// ```
    /// use eqfuse_ir::plan::fixtures::{column_sum, flat_map};
    /// assert!(column_sum().walks_columns());
    /// assert!(!flat_map().0.walks_columns());
    /// ```
    pub fn walks_columns(&self) -> bool {
        let r = self.params.len();
        if r < 2 {
            return false;
        }
        let (outer, inner) = ((r - 2) as Reg, (r - 1) as Reg);
        let mut found = false;
        self.body.visit(&mut |i| {
            if let Inst::Read { index, .. } = i {
                if let Some((&last, rest)) = index.split_last() {
                    found |= last == outer && rest.contains(&inner);
                }
            }
        });
        found
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::fixtures::{column_sum, edge_stencil, flat_map};
    use super::super::{Block, Inst};
    use crate::ast::BinOp;

    #[test]
    fn a_map_over_three_dimensions_collapses() {
        let (elem, space) = flat_map();
        assert_eq!(elem.flat_reads(space.len()), Some(vec![0]));
        // not over one dimension: nothing to collapse
        assert_eq!(elem.flat_reads(1), None);
    }

    #[test]
    fn an_index_used_in_arithmetic_or_returned_does_not() {
        let (mut elem, space) = flat_map();
        // r5 = i0 + i1, unused, still an index used otherwise
        elem.reg_types.push(crate::types::ElemType::I64);
        let r = (elem.reg_types.len() - 1) as u32;
        elem.body.insts.push(Inst::Binary { dst: r, op: BinOp::Add, a: 0, b: 1 });
        assert_eq!(elem.flat_reads(space.len()), None);
        let (mut elem, space) = flat_map();
        elem.ret = vec![2];
        assert_eq!(elem.flat_reads(space.len()), None);
        // a read at the indices in another order
        let (mut elem, space) = flat_map();
        elem.body.visit_mut(&mut |i| {
            if let Inst::Read { index, .. } = i {
                index.swap(0, 1);
            }
        });
        assert_eq!(elem.flat_reads(space.len()), None);
        let (stencil, space) = edge_stencil();
        assert_eq!(stencil.flat_reads(space.len()), None);
    }

    #[test]
    fn an_index_inside_a_nested_block_is_seen() {
        let (mut elem, space) = flat_map();
        let n = elem.reg_types.len() as u32;
        elem.reg_types.extend([crate::types::ElemType::Bool, crate::types::ElemType::I64]);
        let guard = Inst::Const { dst: n, value: crate::value::Scalar::Bool(true) };
        let nested = Inst::If {
            dst: n + 1,
            cond: n,
            then_block: Block::default(),
            then_ret: 1,
            else_block: Block::default(),
            else_ret: 1,
        };
        elem.body.insts.extend([guard, nested]);
        assert_eq!(elem.flat_reads(space.len()), None);
    }

    #[test]
    fn a_transposed_read_walks_columns() {
        let mut f = column_sum();
        assert!(f.walks_columns());
        // `a[i, j]` reads along the row: no
        f.body.visit_mut(&mut |i| {
            if let Inst::Read { index, .. } = i {
                index.swap(0, 1);
            }
        });
        assert!(!f.walks_columns());
        // not over two dimensions
        assert!(!flat_map().0.walks_columns());
    }
}
