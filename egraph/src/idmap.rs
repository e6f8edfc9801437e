//! A map keyed by e-class id, stored densely: egg numbers classes `0, 1, 2, ..` as it
//! creates them, so a vector indexed by the id holds every class of an e-graph with no
//! hashing, and neighbouring classes (made together) sit together in memory.
//!
//! Extraction reads and writes its per-class facts (the chosen node, the parameters a class
//! needs) many times per class; on an e-graph of 100 000 classes a hash map's lookups were
//! cache misses and hashing that grew faster than the e-graph (docs/optimizer-growth.md).
//! Iteration is in the order of the ids.

use egg::Id;

/// A map from class ids to `T`, as a vector indexed by the id.
#[derive(Clone, Debug)]
pub struct IdMap<T> {
    slots: Vec<Option<T>>,
    len: usize,
}

impl<T> Default for IdMap<T> {
    fn default() -> IdMap<T> {
        IdMap { slots: Vec::new(), len: 0 }
    }
}

impl<T> IdMap<T> {
    /// An empty map with room for ids below `n`.
    pub fn with_capacity(n: usize) -> IdMap<T> {
        let mut slots = Vec::with_capacity(n);
        slots.resize_with(n, || None);
        IdMap { slots, len: 0 }
    }

    /// The value of `id`.
    pub fn get(&self, id: &Id) -> Option<&T> {
        self.slots.get(usize::from(*id)).and_then(Option::as_ref)
    }

    /// The value of `id`, to change.
    pub fn get_mut(&mut self, id: &Id) -> Option<&mut T> {
        self.slots.get_mut(usize::from(*id)).and_then(Option::as_mut)
    }

    /// Whether `id` has a value.
    pub fn contains_key(&self, id: &Id) -> bool {
        self.get(id).is_some()
    }

    /// Sets the value of `id`, returning the one it replaces.
    pub fn insert(&mut self, id: Id, value: T) -> Option<T> {
        let i = usize::from(id);
        if i >= self.slots.len() {
            self.slots.resize_with(i + 1, || None);
        }
        let old = self.slots[i].replace(value);
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    /// How many ids have a value.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no id has a value.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The ids with a value, in ascending order.
    pub fn keys(&self) -> impl Iterator<Item = Id> + '_ {
        self.iter().map(|(id, _)| id)
    }

    /// The ids with their values, in ascending order of id.
    pub fn iter(&self) -> impl Iterator<Item = (Id, &T)> + '_ {
        self.slots.iter().enumerate().filter_map(|(i, v)| v.as_ref().map(|v| (Id::from(i), v)))
    }
}

impl<T> std::ops::Index<&Id> for IdMap<T> {
    type Output = T;

    /// The value of `id`; panics where there is none, as a hash map's index does (callers
    /// index only ids they inserted).
    fn index(&self, id: &Id) -> &T {
        match self.get(id) {
            Some(v) => v,
            None => panic!("no value for class {id}"),
        }
    }
}

impl<T> FromIterator<(Id, T)> for IdMap<T> {
    fn from_iter<I: IntoIterator<Item = (Id, T)>>(iter: I) -> IdMap<T> {
        let mut m = IdMap::default();
        for (id, v) in iter {
            m.insert(id, v);
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::IdMap;
    use egg::Id;

    #[test]
    fn behaves_as_a_map_iterating_in_id_order() {
        let mut m: IdMap<&str> = IdMap::default();
        assert!(m.is_empty() && m.get(&Id::from(3usize)).is_none());
        assert_eq!(m.insert(Id::from(5usize), "five"), None);
        assert_eq!(m.insert(Id::from(1usize), "one"), None);
        assert_eq!(m.insert(Id::from(5usize), "FIVE"), Some("five"));
        assert_eq!(m.len(), 2);
        assert!(m.contains_key(&Id::from(1usize)) && !m.contains_key(&Id::from(2usize)));
        assert_eq!(m[&Id::from(5usize)], "FIVE");
        if let Some(v) = m.get_mut(&Id::from(1usize)) {
            *v = "uno";
        }
        let all: Vec<(usize, &str)> = m.iter().map(|(k, v)| (usize::from(k), *v)).collect();
        assert_eq!(all, vec![(1, "uno"), (5, "FIVE")]);
        let again: IdMap<&str> = m.iter().map(|(k, v)| (k, *v)).collect();
        assert_eq!(again.keys().collect::<Vec<_>>(), m.keys().collect::<Vec<_>>());
        assert!(IdMap::<u8>::with_capacity(4).is_empty());
    }
}
