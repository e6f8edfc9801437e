//! Sets of term nodes (their indices in the term): [`NodeSet`], stored as sorted indices
//! when few and as a bitset otherwise, and [`Bits`], a bitset to build one in.

/// A set of node indices, immutable once made: sorted indices when it holds few of the
/// term's nodes, else one bit per node.
#[derive(Clone, Debug)]
pub(crate) enum NodeSet {
    /// The indices, ascending.
    Sparse(Vec<usize>),
    /// One bit per node of the term.
    Dense(Vec<u64>),
}

/// A bitset over the term's nodes, to build a [`NodeSet`] in or to mark nodes seen.
#[derive(Clone, Debug)]
pub(crate) struct Bits {
    words: Vec<u64>,
    /// How many nodes the term has.
    len: usize,
}

fn bit(words: &[u64], n: usize) -> bool {
    words.get(n / 64).is_some_and(|w| w & (1 << (n % 64)) != 0)
}

impl Bits {
    /// The empty set over a term of `len` nodes.
    pub fn new(len: usize) -> Bits {
        Bits { words: vec![0; len.div_ceil(64)], len }
    }

    /// Whether `n` is in the set.
    pub fn contains(&self, n: usize) -> bool {
        bit(&self.words, n)
    }

    /// Adds `n`; whether it was not there.
    pub fn insert(&mut self, n: usize) -> bool {
        let Some(w) = self.words.get_mut(n / 64) else { return false };
        let b = 1 << (n % 64);
        let new = *w & b == 0;
        *w |= b;
        new
    }

    /// Adds every node of `s`.
    pub fn union(&mut self, s: &NodeSet) {
        match s {
            NodeSet::Sparse(v) => v.iter().for_each(|&n| {
                self.insert(n);
            }),
            NodeSet::Dense(d) => self.words.iter_mut().zip(d).for_each(|(w, x)| *w |= x),
        }
    }

    /// Adds every node of `s` that is in `mask`.
    pub fn union_masked(&mut self, s: &NodeSet, mask: &Bits) {
        match s {
            NodeSet::Sparse(v) => v.iter().filter(|&&n| mask.contains(n)).for_each(|&n| {
                self.insert(n);
            }),
            NodeSet::Dense(d) => {
                self.words.iter_mut().zip(d.iter().zip(&mask.words)).for_each(|(w, (x, m))| *w |= x & m)
            }
        }
    }

    /// The set, made immutable: sparse when it holds fewer than one node in 64.
    pub fn into_set(self) -> NodeSet {
        let count: usize = self.words.iter().map(|w| w.count_ones() as usize).sum();
        if count.saturating_mul(64) < self.len {
            NodeSet::Sparse(ones(&self.words).collect())
        } else {
            NodeSet::Dense(self.words)
        }
    }
}

/// The indices of the bits set in `words`, ascending.
fn ones(words: &[u64]) -> impl Iterator<Item = usize> + '_ {
    words.iter().enumerate().flat_map(|(k, &w)| word_ones(k, w))
}

/// The indices of the bits set in word `k`, `w`, ascending.
fn word_ones(k: usize, mut w: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (w != 0).then(|| {
            let b = w.trailing_zeros() as usize;
            w &= w - 1;
            k * 64 + b
        })
    })
}

impl NodeSet {
    /// Whether `n` is in the set.
    pub fn contains(&self, n: usize) -> bool {
        match self {
            NodeSet::Sparse(v) => v.binary_search(&n).is_ok(),
            NodeSet::Dense(d) => bit(d, n),
        }
    }

    /// The nodes of the set, ascending.
    pub fn iter(&self) -> Box<dyn Iterator<Item = usize> + '_> {
        match self {
            NodeSet::Sparse(v) => Box::new(v.iter().copied()),
            NodeSet::Dense(d) => Box::new(ones(d)),
        }
    }

    /// The nodes of the set in `mask` and not in `not`, ascending.
    pub fn iter_masked<'s>(
        &'s self,
        mask: Option<&'s Bits>,
        not: Option<&'s Bits>,
    ) -> Box<dyn Iterator<Item = usize> + 's> {
        match self {
            NodeSet::Sparse(v) => {
                Box::new(v.iter().copied().filter(move |&n| {
                    mask.is_none_or(|m| m.contains(n)) && !not.is_some_and(|x| x.contains(n))
                }))
            }
            NodeSet::Dense(d) => Box::new(d.iter().enumerate().flat_map(move |(k, &w)| {
                let m = mask.map_or(!0, |m| m.words.get(k).copied().unwrap_or(0));
                let x = not.map_or(0, |x| x.words.get(k).copied().unwrap_or(0));
                word_ones(k, w & m & !x)
            })),
        }
    }

    /// The nodes in both `self` and `other`, over a term of `len` nodes.
    pub fn intersect(&self, other: &NodeSet, len: usize) -> NodeSet {
        match (self, other) {
            (NodeSet::Sparse(v), o) | (o, NodeSet::Sparse(v)) => {
                NodeSet::Sparse(v.iter().copied().filter(|&n| o.contains(n)).collect())
            }
            (NodeSet::Dense(a), NodeSet::Dense(b)) => {
                Bits { words: a.iter().zip(b).map(|(x, y)| x & y).collect(), len }.into_set()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(len: usize, xs: &[usize]) -> NodeSet {
        let mut b = Bits::new(len);
        xs.iter().for_each(|&x| {
            b.insert(x);
        });
        b.into_set()
    }

    #[test]
    fn sparse_and_dense_sets_agree() {
        let xs = [0, 3, 63, 64, 65, 127, 128, 199];
        let (few, many) = (set(100_000, &xs), set(200, &xs));
        assert!(matches!(few, NodeSet::Sparse(_)) && matches!(many, NodeSet::Dense(_)));
        for s in [&few, &many] {
            assert_eq!(s.iter().collect::<Vec<_>>(), xs);
            assert!(s.contains(64) && !s.contains(66));
        }
        let other = set(200, &[3, 4, 64, 199]);
        for s in [&few, &many] {
            assert_eq!(s.intersect(&other, 200).iter().collect::<Vec<_>>(), [3, 64, 199]);
            assert_eq!(other.intersect(s, 200).iter().collect::<Vec<_>>(), [3, 64, 199]);
        }
        let (mask, not) = (set_bits(200, &[0, 3, 64, 65, 199]), set_bits(200, &[65]));
        for s in [&few, &many] {
            let got: Vec<_> = s.iter_masked(Some(&mask), Some(&not)).collect();
            assert_eq!(got, [0, 3, 64, 199]);
            let mut acc = Bits::new(200);
            acc.union_masked(s, &mask);
            assert_eq!(acc.into_set().iter().collect::<Vec<_>>(), [0, 3, 64, 65, 199]);
        }
    }

    fn set_bits(len: usize, xs: &[usize]) -> Bits {
        let mut b = Bits::new(len);
        xs.iter().for_each(|&x| {
            b.insert(x);
        });
        b
    }
}
