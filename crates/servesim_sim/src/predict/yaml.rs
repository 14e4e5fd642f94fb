//! YAML in and out for DynoSim's configuration files: a tree of [`Node`]s that remember their
//! line (so an error names the file, the line and the field), and a block-style writer for the
//! recommendations.
//!
//! Plain scalars are typed as the reference's loader (PyYAML's `safe_load`, YAML 1.1) types
//! them: `~`/`null`/empty are null, `true`/`yes`/`on` (any case form it knows) booleans,
//! decimal, `0x` and `0o` integers, decimal floats and `.inf`/`.nan`; quoted scalars are
//! strings. Anchors and aliases work; a key given twice in one mapping is an error (PyYAML
//! keeps the last one silently).

use saphyr_parser::{Event, Parser, ScalarStyle};
use serde_json::{Map, Value as Json};

/// A YAML value.
#[derive(Clone, Debug)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    /// In file order.
    Map(Vec<(String, Node)>),
}

/// A value and the line it starts on (1-based; 0 when it did not come from the file: a
/// `--set` override or a candidate's value).
#[derive(Clone, Debug)]
pub struct Node {
    pub line: u32,
    pub value: Value,
}

/// Equal values, wherever they were written.
impl PartialEq for Node {
    fn eq(&self, other: &Self) -> bool {
        match (&self.value, &other.value) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Str(a), Value::Str(b)) => a == b,
            (Value::Seq(a), Value::Seq(b)) => a == b,
            (Value::Map(a), Value::Map(b)) => a == b,
            (a, b) => match (num(a), num(b)) {
                (Some(x), Some(y)) => x == y,
                _ => false,
            },
        }
    }
}

fn num(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        _ => None,
    }
}

impl Node {
    pub fn new(value: Value) -> Self {
        Node { line: 0, value }
    }

    pub fn map(&self) -> Option<&[(String, Node)]> {
        match &self.value {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    pub fn get(&self, key: &str) -> Option<&Node> {
        self.map()?.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The node at a dotted path (`engine.workers.aggregated`), if there is one.
    pub fn at(&self, path: &str) -> Option<&Node> {
        path.split('.').try_fold(self, |n, k| n.get(k))
    }

    /// Sets the node at a dotted path, creating mappings on the way (a scalar in the way is
    /// replaced by a mapping).
    pub fn set(&mut self, path: &str, value: Node) {
        let mut cur = self;
        let parts: Vec<&str> = path.split('.').collect();
        for (i, part) in parts.iter().enumerate() {
            if !matches!(cur.value, Value::Map(_)) {
                cur.value = Value::Map(Vec::new());
            }
            let Value::Map(m) = &mut cur.value else { unreachable!("made a mapping above") };
            let k = match m.iter().position(|(k, _)| k == part) {
                Some(k) => k,
                None => {
                    m.push((part.to_string(), Node::new(Value::Null)));
                    m.len() - 1
                }
            };
            if i + 1 == parts.len() {
                m[k].1 = value;
                return;
            }
            cur = &mut m[k].1;
        }
    }

    /// Removes the entry at a dotted path, if there is one.
    pub fn remove(&mut self, path: &str) {
        let (parent, key) = match path.rsplit_once('.') {
            Some((p, k)) => (Some(p), k),
            None => (None, path),
        };
        let mut cur = self;
        if let Some(p) = parent {
            for part in p.split('.') {
                let Value::Map(m) = &mut cur.value else { return };
                let Some(k) = m.iter().position(|(k, _)| k == part) else { return };
                cur = &mut m[k].1;
            }
        }
        if let Value::Map(m) = &mut cur.value {
            m.retain(|(k, _)| k != key);
        }
    }

    /// The value as JSON (YAML's null, booleans, numbers, strings, lists and mappings).
    pub fn to_json(&self) -> Json {
        match &self.value {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Int(i) => Json::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f).map(Json::Number).unwrap_or(Json::Null),
            Value::Str(s) => Json::String(s.clone()),
            Value::Seq(s) => Json::Array(s.iter().map(Node::to_json).collect()),
            Value::Map(m) => Json::Object(m.iter().map(|(k, v)| (k.clone(), v.to_json())).collect()),
        }
    }

    /// A tree from JSON (every line 0).
    pub fn from_json(v: &Json) -> Node {
        Node::new(match v {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => match n.as_i64() {
                Some(i) => Value::Int(i),
                None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            Json::String(s) => Value::Str(s.clone()),
            Json::Array(a) => Value::Seq(a.iter().map(Node::from_json).collect()),
            Json::Object(o) => Value::Map(o.iter().map(|(k, v)| (k.clone(), Node::from_json(v))).collect()),
        })
    }

    /// How the value reads in an error message (short).
    pub fn describe(&self) -> String {
        let text = self.to_json().to_string();
        if text.chars().count() > 60 { format!("{}…", text.chars().take(57).collect::<String>()) } else { text }
    }
}

/// Parses one YAML document. Errors are `LINE: message` (1-based line).
pub fn parse(text: &str) -> Result<Node, String> {
    let mut parser = Parser::new_from_str(text);
    let mut stack: Vec<Frame> = Vec::new();
    let mut anchors: Vec<(usize, Node)> = Vec::new();
    let mut root: Option<Node> = None;
    let mut documents = 0;
    loop {
        let (event, span) = match parser.next() {
            None => break,
            Some(Ok(e)) => e,
            Some(Err(e)) => return Err(format!("{}: {}", e.marker().line(), e.info())),
        };
        let line = span.start.line() as u32;
        let done: Option<(Node, usize)> = match event {
            Event::StreamStart | Event::StreamEnd | Event::Nothing | Event::DocumentEnd => None,
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    return Err(format!("{line}: a configuration file holds one YAML document"));
                }
                None
            }
            Event::Alias(id) => match anchors.iter().rev().find(|(a, _)| *a == id) {
                Some((_, n)) => Some((Node { line, value: n.value.clone() }, 0)),
                None => return Err(format!("{line}: an alias to an unknown anchor")),
            },
            Event::Scalar(text, style, anchor, tag) => {
                let tag = tag.map(|t| format!("{}{}", t.handle, t.suffix));
                let value = scalar(&text, style, tag.as_deref()).map_err(|m| format!("{line}: {m}"))?;
                Some((Node { line, value }, anchor))
            }
            Event::SequenceStart(anchor, _) => {
                stack.push(Frame { line, anchor, kind: Kind::Seq(Vec::new()) });
                None
            }
            Event::MappingStart(anchor, _) => {
                stack.push(Frame { line, anchor, kind: Kind::Map(Vec::new(), None) });
                None
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let f = stack.pop().ok_or_else(|| format!("{line}: unbalanced YAML"))?;
                let value = match f.kind {
                    Kind::Seq(items) => Value::Seq(items),
                    Kind::Map(entries, _) => Value::Map(entries),
                };
                Some((Node { line: f.line, value }, f.anchor))
            }
        };
        let Some((node, anchor)) = done else { continue };
        if anchor > 0 {
            anchors.push((anchor, node.clone()));
        }
        match stack.last_mut() {
            None => root = Some(node),
            Some(Frame { kind: Kind::Seq(items), .. }) => items.push(node),
            Some(Frame { kind: Kind::Map(entries, key), .. }) => match key.take() {
                None => {
                    let k = match &node.value {
                        Value::Str(s) => s.clone(),
                        Value::Int(i) => i.to_string(),
                        Value::Bool(b) => b.to_string(),
                        Value::Float(f) => f.to_string(),
                        Value::Null => "null".into(),
                        _ => return Err(format!("{}: a mapping key must be a scalar", node.line)),
                    };
                    if entries.iter().any(|(e, _)| *e == k) {
                        return Err(format!("{}: `{k}` is given twice in the same mapping", node.line));
                    }
                    *key = Some(k);
                }
                Some(k) => entries.push((k, node)),
            },
        }
    }
    Ok(root.unwrap_or(Node { line: 1, value: Value::Null }))
}

struct Frame {
    line: u32,
    anchor: usize,
    kind: Kind,
}

enum Kind {
    Seq(Vec<Node>),
    /// Entries so far, and a key waiting for its value.
    Map(Vec<(String, Node)>, Option<String>),
}

/// A scalar's value: quoted and block scalars are strings; plain ones are typed.
fn scalar(text: &str, style: ScalarStyle, tag: Option<&str>) -> Result<Value, String> {
    match tag {
        Some("!!str" | "tag:yaml.org,2002:str") => return Ok(Value::Str(text.into())),
        Some("!!int" | "tag:yaml.org,2002:int") => {
            return int(text).map(Value::Int).ok_or_else(|| format!("`{text}` is not an integer"));
        }
        Some("!!float" | "tag:yaml.org,2002:float") => {
            return float(text).or(int(text).map(|i| i as f64)).map(Value::Float).ok_or_else(|| format!("`{text}` is not a number"));
        }
        _ => {}
    }
    if style != ScalarStyle::Plain {
        return Ok(Value::Str(text.into()));
    }
    Ok(match text {
        "" | "~" | "null" | "Null" | "NULL" => Value::Null,
        "true" | "True" | "TRUE" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => Value::Bool(true),
        "false" | "False" | "FALSE" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => Value::Bool(false),
        _ => match (int(text), float(text)) {
            (Some(i), _) => Value::Int(i),
            (None, Some(f)) => Value::Float(f),
            _ => Value::Str(text.into()),
        },
    })
}

fn int(text: &str) -> Option<i64> {
    let t = text.replace('_', "");
    let (neg, digits) = match t.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, t.strip_prefix('+').unwrap_or(&t)),
    };
    let magnitude = if let Some(h) = digits.strip_prefix("0x") {
        i64::from_str_radix(h, 16).ok()?
    } else if let Some(o) = digits.strip_prefix("0o") {
        i64::from_str_radix(o, 8).ok()?
    } else if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        digits.parse().ok()?
    } else {
        return None;
    };
    Some(if neg { -magnitude } else { magnitude })
}

fn float(text: &str) -> Option<f64> {
    let t = text.replace('_', "");
    match t.as_str() {
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => return Some(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => return Some(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Some(f64::NAN),
        _ => {}
    }
    // Digits, at most one point, an optional exponent: what YAML calls a float (Rust's parser
    // would also take `inf` and `nan`, which YAML reads as strings).
    let body = t.strip_prefix(['-', '+']).unwrap_or(&t);
    let mantissa = body.split(['e', 'E']).next().unwrap_or("");
    if mantissa.is_empty() || !mantissa.bytes().all(|b| b.is_ascii_digit() || b == b'.') || !mantissa.bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse().ok()
}

/// Writes a JSON value as a block-style YAML document that [`parse`] reads back to the same
/// value (short lists of scalars and empty collections in flow style).
pub fn emit(v: &Json) -> String {
    let mut out = String::new();
    match v {
        Json::Object(m) if !m.is_empty() => emit_map(m, 0, &mut out),
        other => {
            out.push_str(&inline(other));
            out.push('\n');
        }
    }
    out
}

fn emit_map(m: &Map<String, Json>, indent: usize, out: &mut String) {
    for (k, v) in m {
        out.push_str(&" ".repeat(indent));
        out.push_str(&key(k));
        out.push(':');
        block_value(v, indent, out);
    }
}

/// After `key:` or `- `: the value on the same line if it is inline, else on the next lines.
fn block_value(v: &Json, indent: usize, out: &mut String) {
    match v {
        Json::Object(m) if !m.is_empty() => {
            out.push('\n');
            emit_map(m, indent + 2, out);
        }
        Json::Array(a) if !a.is_empty() && !flow_list(a) => {
            out.push('\n');
            for item in a {
                out.push_str(&" ".repeat(indent + 2));
                out.push('-');
                match item {
                    Json::Object(m) if !m.is_empty() => {
                        // The first entry on the dash's line, the rest under it.
                        let mut first = true;
                        for (k, v) in m {
                            if first {
                                out.push(' ');
                                first = false;
                            } else {
                                out.push_str(&" ".repeat(indent + 4));
                            }
                            out.push_str(&key(k));
                            out.push(':');
                            block_value(v, indent + 4, out);
                        }
                    }
                    other => block_value(other, indent + 2, out),
                }
            }
        }
        other => {
            out.push(' ');
            out.push_str(&inline(other));
            out.push('\n');
        }
    }
}

fn flow_list(a: &[Json]) -> bool {
    a.len() <= 8 && a.iter().all(|x| !matches!(x, Json::Object(_) | Json::Array(_)))
}

/// A scalar, an empty collection or a short list of scalars on one line.
fn inline(v: &Json) -> String {
    match v {
        Json::Null => "null".into(),
        Json::Bool(b) => b.to_string(),
        Json::Number(n) => n.to_string(),
        Json::String(s) => string(s),
        Json::Array(a) => format!("[{}]", a.iter().map(inline).collect::<Vec<_>>().join(", ")),
        Json::Object(m) if m.is_empty() => "{}".into(),
        Json::Object(m) => format!("{{{}}}", m.iter().map(|(k, v)| format!("{}: {}", key(k), inline(v))).collect::<Vec<_>>().join(", ")),
    }
}

fn key(k: &str) -> String {
    string(k)
}

/// A string plain when it reads back as the same string, else double-quoted (a JSON string
/// is a valid YAML double-quoted scalar).
fn string(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-./".contains(&b))
        && !s.starts_with(['-', '.'])
        && matches!(scalar(s, ScalarStyle::Plain, None), Ok(Value::Str(_)));
    if plain { s.into() } else { Json::String(s.into()).to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scalars_are_typed_as_the_reference_loader_types_them() {
        let n = parse("a: 1\nb: 1.5\nc: true\nd: ~\ne: '7'\nf: yes\ng: .inf\nh: 0x10\ni: 1e3\nj: text\nk: -2\nl: \"off\"\n").unwrap();
        let j = n.to_json();
        assert_eq!(j["a"], json!(1));
        assert_eq!(j["b"], json!(1.5));
        assert_eq!((j["c"].clone(), j["d"].clone(), j["e"].clone(), j["f"].clone()), (json!(true), json!(null), json!("7"), json!(true)));
        assert!(matches!(n.get("g").unwrap().value, Value::Float(f) if f.is_infinite()));
        assert_eq!(
            (j["h"].clone(), j["i"].clone(), j["j"].clone(), j["k"].clone(), j["l"].clone()),
            (json!(16), json!(1000.0), json!("text"), json!(-2), json!("off"))
        );
    }

    #[test]
    fn lines_flow_and_aliases() {
        let text = "traffic:\n  source: {type: synthetic, input_tokens: 32}\n  load:\n    type: concurrency\nbase: &b {x: 1}\ncopy: *b\nlist:\n  - 1\n  - {y: 2}\n";
        let n = parse(text).unwrap();
        assert_eq!(n.at("traffic.source.input_tokens").unwrap().line, 2);
        assert_eq!(n.at("traffic.load.type").unwrap().line, 4);
        assert_eq!(n.at("copy.x").unwrap().to_json(), json!(1));
        assert_eq!(n.get("list").unwrap().to_json(), json!([1, {"y": 2}]));
        let e = parse("a: 1\na: 2\n").unwrap_err();
        assert!(e.starts_with("2: `a` is given twice"), "{e}");
        let e = parse("a: [1, 2\n").unwrap_err();
        assert!(e.contains(':'), "{e}");
    }

    #[test]
    fn emit_reads_back_the_same_value() {
        let v = json!({"traffic": {"source": {"type": "synthetic", "input_tokens": 32}, "paths": ["a b.jsonl", "x/y.jsonl"]},
                       "engine": {"model": "org/model-1.5", "workers": {"aggregated": {"timing": {"prefill_ms": 1.0}}}},
                       "preset": [{"replicas": 1, "tensor": 2}, {"replicas": 2}], "s": ["yes", "1", "", "-x"],
                       "e": {}, "n": null, "f": 0.1, "b": false});
        let text = emit(&v);
        assert_eq!(parse(&text).unwrap().to_json(), v, "{text}");
        let mut n = parse(&text).unwrap();
        n.set("engine.workers.aggregated.parallelism.replicas", Node::new(Value::Int(3)));
        assert_eq!(n.at("engine.workers.aggregated.parallelism.replicas").unwrap().to_json(), json!(3));
        n.remove("engine.model");
        assert!(n.at("engine.model").is_none());
    }
}
