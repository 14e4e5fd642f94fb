//! A small sorted map: entries in a `Vec`, kept in key order, found by binary search.
//!
//! The measured-kernel model keeps a few dozen small maps (a data file's tables by key, its
//! arrays by name, a model's sets): for those a `BTreeMap` costs more than it saves. Each of
//! its instantiations brings the B-tree's node code and a stable sort into the page's engine
//! (about 5 KB of wasm each, most of the measured-kernel model's size), where this map needs a
//! binary search and a `Vec` insert. Iteration, serialisation (as a JSON object) and the
//! handling of a repeated key (the last one wins) are those of a `BTreeMap`.

use std::borrow::Borrow;

use serde::Serialize;

#[derive(Clone, Debug, PartialEq)]
pub struct SortedMap<K, V>(Vec<(K, V)>);

impl<K, V> Default for SortedMap<K, V> {
    fn default() -> Self {
        SortedMap(Vec::new())
    }
}

impl<K: Ord, V> SortedMap<K, V> {
    pub const fn new() -> Self {
        SortedMap(Vec::new())
    }

    fn find<Q: Ord + ?Sized>(&self, key: &Q) -> Result<usize, usize>
    where
        K: Borrow<Q>,
    {
        self.0.binary_search_by(|(k, _)| k.borrow().cmp(key))
    }

    /// Sets `key` to `value`; returns the value it replaces.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.find(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, value)),
            Err(i) => {
                self.0.insert(i, (key, value));
                None
            }
        }
    }

    pub fn get<Q: Ord + ?Sized>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
    {
        self.find(key).ok().map(|i| &self.0[i].1)
    }

    pub fn contains_key<Q: Ord + ?Sized>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
    {
        self.find(key).is_ok()
    }

    /// The value at `key`, inserted by `make` first if absent.
    pub fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        let i = match self.find(&key) {
            Ok(i) => i,
            Err(i) => {
                self.0.insert(i, (key, make()));
                i
            }
        };
        &mut self.0[i].1
    }
}

impl<K, V> SortedMap<K, V> {
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.0.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.0.iter().map(|(_, v)| v)
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.0.iter_mut().map(|(_, v)| v)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<K: Ord, V> FromIterator<(K, V)> for SortedMap<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut m = SortedMap::new();
        for (k, v) in iter {
            m.insert(k, v);
        }
        m
    }
}

impl<K, V> IntoIterator for SortedMap<K, V> {
    type Item = (K, V);
    type IntoIter = std::vec::IntoIter<(K, V)>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<K: Serialize, V: Serialize> Serialize for SortedMap<K, V> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn behaves_as_a_btreemap() {
        let pairs = [(5u32, "e"), (1, "a"), (3, "c"), (1, "A"), (16, "p"), (2, "b")];
        let ours: SortedMap<u32, &str> = pairs.iter().copied().collect();
        let theirs: BTreeMap<u32, &str> = pairs.iter().copied().collect();
        assert_eq!(ours.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>(), theirs.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>());
        assert_eq!(serde_json::to_string(&ours).unwrap(), serde_json::to_string(&theirs).unwrap());
        assert_eq!(ours.get(&3), Some(&"c"));
        assert_eq!(ours.get(&4), None);
        let mut m: SortedMap<String, u32> = SortedMap::new();
        assert_eq!(m.insert("b".into(), 1), None);
        assert_eq!(m.insert("b".into(), 2), Some(1));
        *m.get_or_insert_with("a".into(), || 7) += 1;
        assert_eq!(m.keys().map(String::as_str).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(m.get("a"), Some(&8));
        assert!(m.contains_key("b") && !m.contains_key("c"));
    }
}
