//! Reading a configuration's mappings field by field: every value is checked where it is
//! read, every error names the file, the line and the field's path, and a mapping with a
//! field nobody read is an error (unknown fields are rejected, as the reference does).

use super::yaml::{Node, Value};
use crate::SimError;

/// `FILE:LINE: PATH: message`, or `FILE: PATH: message` for a value that did not come from
/// the file (a `--set` override, a candidate's value).
pub fn error_at(src: &str, line: u32, path: &str, msg: impl std::fmt::Display) -> SimError {
    match (line, path.is_empty()) {
        (0, true) => SimError::new(format!("{src}: {msg}")),
        (0, false) => SimError::new(format!("{src}: {path}: {msg}")),
        (_, true) => SimError::new(format!("{src}:{line}: {msg}")),
        (_, false) => SimError::new(format!("{src}:{line}: {path}: {msg}")),
    }
}

/// One mapping being read.
pub struct Obj<'a> {
    src: &'a str,
    path: String,
    line: u32,
    entries: &'a [(String, Node)],
    used: Vec<&'a str>,
}

impl<'a> Obj<'a> {
    /// A mapping (a null or absent value reads as an empty one).
    pub fn new(src: &'a str, path: &str, node: Option<&'a Node>) -> Result<Obj<'a>, SimError> {
        let line = node.map_or(0, |n| n.line);
        let entries: &[(String, Node)] = match node.map(|n| &n.value) {
            None | Some(Value::Null) => &[],
            Some(Value::Map(m)) => m,
            Some(_) => {
                return Err(error_at(src, line, path, format!("expected a mapping, got {}", node.map(Node::describe).unwrap_or_default())));
            }
        };
        Ok(Obj { src, path: path.to_string(), line, entries, used: Vec::new() })
    }

    pub fn src(&self) -> &'a str {
        self.src
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    /// The path of a field of this mapping.
    pub fn field(&self, key: &str) -> String {
        if self.path.is_empty() { key.to_string() } else { format!("{}.{key}", self.path) }
    }

    pub fn has(&self, key: &str) -> bool {
        self.entries.iter().any(|(k, v)| k == key && !matches!(v.value, Value::Null))
    }

    /// The field's node (null reads as absent); marks the name known.
    pub fn get(&mut self, key: &'a str) -> Option<&'a Node> {
        if !self.used.contains(&key) {
            self.used.push(key);
        }
        let node = self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)?;
        (!matches!(node.value, Value::Null)).then_some(node)
    }

    /// An error about a field, at its line (or this mapping's when it is absent).
    pub fn fail(&self, key: &str, msg: impl std::fmt::Display) -> SimError {
        let line = self.entries.iter().find(|(k, _)| k == key).map_or(self.line, |(_, v)| v.line);
        error_at(self.src, line, &self.field(key), msg)
    }

    /// An error about this mapping as a whole.
    pub fn fail_here(&self, msg: impl std::fmt::Display) -> SimError {
        error_at(self.src, self.line, &self.path, msg)
    }

    /// A field servesim cannot honour: refused by name, never ignored.
    pub fn refuse(&self, key: &str, why: impl std::fmt::Display) -> SimError {
        self.fail(key, format!("not simulated by servesim: {why}"))
    }

    pub fn obj(&mut self, key: &'a str) -> Result<Obj<'a>, SimError> {
        let node = self.get(key);
        Obj::new(self.src, &self.field(key), node)
    }

    pub fn str(&mut self, key: &'a str) -> Result<Option<&'a str>, SimError> {
        match self.get(key) {
            None => Ok(None),
            Some(Node { value: Value::Str(s), .. }) => Ok(Some(s)),
            Some(n) => Err(self.fail(key, format!("expected a string, got {}", n.describe()))),
        }
    }

    /// One of `choices`.
    pub fn choice(&mut self, key: &'a str, choices: &[&str]) -> Result<Option<&'a str>, SimError> {
        match self.get(key) {
            None => Ok(None),
            Some(Node { value: Value::Str(s), .. }) if choices.contains(&s.as_str()) => Ok(Some(s)),
            Some(n) => Err(self.fail(key, format!("expected one of {}, got {}", choices.join(", "), n.describe()))),
        }
    }

    pub fn bool(&mut self, key: &'a str) -> Result<Option<bool>, SimError> {
        match self.get(key) {
            None => Ok(None),
            Some(Node { value: Value::Bool(b), .. }) => Ok(Some(*b)),
            Some(n) => Err(self.fail(key, format!("expected true or false, got {}", n.describe()))),
        }
    }

    /// A finite number.
    pub fn num(&mut self, key: &'a str) -> Result<Option<f64>, SimError> {
        match self.get(key) {
            None => Ok(None),
            Some(n) => match n.value {
                Value::Int(i) => Ok(Some(i as f64)),
                Value::Float(f) if f.is_finite() => Ok(Some(f)),
                _ => Err(self.fail(key, format!("expected a finite number, got {}", n.describe()))),
            },
        }
    }

    /// A number > 0.
    pub fn positive(&mut self, key: &'a str) -> Result<Option<f64>, SimError> {
        let v = self.num(key)?;
        if let Some(x) = v
            && x <= 0.0
        {
            return Err(self.fail(key, format!("must be greater than 0, got {x}")));
        }
        Ok(v)
    }

    /// A number ≥ 0.
    pub fn non_negative(&mut self, key: &'a str) -> Result<Option<f64>, SimError> {
        let v = self.num(key)?;
        if let Some(x) = v
            && x < 0.0
        {
            return Err(self.fail(key, format!("must be at least 0, got {x}")));
        }
        Ok(v)
    }

    /// An integer (an integral float is taken too).
    pub fn int(&mut self, key: &'a str) -> Result<Option<i64>, SimError> {
        match self.get(key) {
            None => Ok(None),
            Some(n) => match n.value {
                Value::Int(i) => Ok(Some(i)),
                Value::Float(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < 9e15 => Ok(Some(f as i64)),
                _ => Err(self.fail(key, format!("expected an integer, got {}", n.describe()))),
            },
        }
    }

    /// An integer > 0.
    pub fn positive_int(&mut self, key: &'a str) -> Result<Option<u64>, SimError> {
        match self.int(key)? {
            Some(i) if i <= 0 => Err(self.fail(key, format!("must be greater than 0, got {i}"))),
            v => Ok(v.map(|i| i as u64)),
        }
    }

    /// An integer ≥ 0.
    pub fn non_negative_int(&mut self, key: &'a str) -> Result<Option<u64>, SimError> {
        match self.int(key)? {
            Some(i) if i < 0 => Err(self.fail(key, format!("must be at least 0, got {i}"))),
            v => Ok(v.map(|i| i as u64)),
        }
    }

    /// Every field was read: an unread one is unknown.
    pub fn finish(&self) -> Result<(), SimError> {
        for (k, v) in self.entries {
            if !self.used.contains(&k.as_str()) {
                let hint = if self.used.is_empty() { String::new() } else { format!(" (known here: {})", self.used.join(", ")) };
                return Err(error_at(self.src, v.line, &self.field(k), format!("unknown field{hint}")));
            }
        }
        Ok(())
    }

    /// Reads (and so accepts) these fields without using them.
    pub fn allow(&mut self, keys: &[&'a str]) {
        for k in keys {
            let _ = self.get(k);
        }
    }
}
