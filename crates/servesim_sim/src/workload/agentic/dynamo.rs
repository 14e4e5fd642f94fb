//! A Dynamo request trace (`dynamo.request.trace.v1`) whose `request_end` records carry
//! `agent_context` (`session_id`, `parent_session_id`), lowered to a request graph:
//! - within a session, each request waits for the previous one (by start) to complete, for
//!   the gap the trace recorded between the one's end and the other's start;
//! - a child session's first request is spawned by a parent request's dispatch, and a parent
//!   request joins the child's completion: named by a `tool_end`/`tool_error` event's
//!   `tool.claude` (`source_request_id`, `consumer_request_id`, `child_session_id`,
//!   `execution_mode` blocking | background), else inferred from the times (the latest parent
//!   request started by the child's first start spawns it; the earliest parent request
//!   started after the child's last end joins it);
//! - `request.replay.dependencies` (an exporter's edges to earlier requests) are taken as
//!   given and replace the inferred edges between the two sessions.
//!
//! Every delay is the recorded gap; a root request keeps its start (from the earliest).

use super::{Dependency, Node, Relation, Trigger, check_dependency, name_plays, workload};
use crate::SimError;
use crate::workload::Workload;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Deserialize;
use std::collections::BTreeMap;

/// One `request_end` record with its agent context.
pub struct Entry {
    pub start_ms: i64,
    pub end_ms: i64,
    pub request_id: String,
    pub session_id: String,
    pub parent_session_id: Option<String>,
    pub model: Option<String>,
    pub input_length: u32,
    pub output_length: u32,
    pub hashes: Vec<u64>,
    pub dependencies: Vec<ExplicitDependency>,
}

/// An exporter's edge (`request.replay.dependencies`).
#[derive(Clone, Debug, Deserialize)]
pub struct ExplicitDependency {
    pub request_id: String,
    pub relation: Relation,
    pub trigger: Trigger,
}

/// A tool event of an agent session.
pub struct Tool {
    pub session_id: String,
    pub tool_call_id: String,
    pub tool_class: String,
    pub claude: Option<Claude>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct Claude {
    pub source_request_id: String,
    #[serde(default)]
    pub consumer_request_id: Option<String>,
    #[serde(default)]
    pub child_session_id: Option<String>,
    pub execution_mode: String,
}

/// Lowers the records (sorted by start, end, id) and tool events to a graph's workload.
pub fn lower(entries: Vec<Entry>, tools: Vec<Tool>, block_size: u32, source: &str) -> Result<Workload, SimError> {
    let fail = |msg: String| SimError::new(format!("{source}: {msg}"));
    let first_start = entries.iter().map(|e| e.start_ms).min().ok_or_else(|| fail("the trace has no requests".into()))?;
    let index: FxHashMap<&str, usize> = entries.iter().enumerate().map(|(i, e)| (e.request_id.as_str(), i)).collect();
    // Sessions in name order (the order edges are added in decides nothing but ties).
    let mut sessions: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    let mut parent_of: BTreeMap<&str, &str> = BTreeMap::new();
    for (i, e) in entries.iter().enumerate() {
        if e.session_id.trim().is_empty() {
            return Err(fail(format!("request {}: session_id must be nonempty", e.request_id)));
        }
        sessions.entry(e.session_id.as_str()).or_default().push(i);
        if let Some(p) = &e.parent_session_id {
            match parent_of.get(e.session_id.as_str()) {
                Some(q) if q != p => {
                    return Err(fail(format!("session {:?} has conflicting parent_session_id values {q:?} and {p:?}", e.session_id)));
                }
                Some(_) => {}
                None => {
                    parent_of.insert(e.session_id.as_str(), p.as_str());
                }
            }
        }
    }
    let key = |i: &usize| (entries[*i].start_ms, entries[*i].end_ms, entries[*i].request_id.as_str());
    // Latest by (end, start, id).
    let latest_end = |a: usize, b: usize| {
        let k = |i: usize| (entries[i].end_ms, entries[i].start_ms, entries[i].request_id.as_str());
        if k(b) >= k(a) { b } else { a }
    };
    for members in sessions.values_mut() {
        members.sort_by_key(key);
    }
    let edge = |from: usize, to: usize, trigger: Trigger, relation: Relation| {
        let at = match trigger {
            Trigger::Dispatch => entries[from].start_ms,
            Trigger::Completion => entries[from].end_ms,
        };
        Dependency { request_id: entries[from].request_id.clone(), trigger, delay_ms: (entries[to].start_ms - at) as f64, relation }
    };
    let mut deps: Vec<Vec<Dependency>> = vec![Vec::new(); entries.len()];
    let push = |deps: &mut Vec<Vec<Dependency>>, to: usize, d: Dependency| {
        if !deps[to].iter().any(|x| x.request_id == d.request_id && x.trigger == d.trigger) {
            deps[to].push(d);
        }
    };
    for members in sessions.values() {
        for w in members.windows(2) {
            push(&mut deps, w[1], edge(w[0], w[1], Trigger::Completion, Relation::Sequence));
        }
    }

    let mut tool_of_child: FxHashMap<&str, &Claude> = FxHashMap::default();
    for t in &tools {
        let Some(c) = &t.claude else { continue };
        if !matches!(c.execution_mode.as_str(), "blocking" | "background") {
            return Err(fail(format!(
                "tool {:?} ({}) has unsupported execution_mode {:?}",
                t.tool_call_id, t.tool_class, c.execution_mode
            )));
        }
        for id in std::iter::once(c.source_request_id.as_str()).chain(c.consumer_request_id.as_deref()) {
            let Some(&r) = index.get(id) else {
                return Err(fail(format!("tool {:?} references unknown request_id {id:?}", t.tool_call_id)));
            };
            if entries[r].session_id != t.session_id {
                return Err(fail(format!(
                    "tool {:?} request {id:?} belongs to session {:?}, expected {:?}",
                    t.tool_call_id, entries[r].session_id, t.session_id
                )));
            }
        }
        let Some(child) = c.child_session_id.as_deref() else { continue };
        if !sessions.contains_key(child) {
            continue;
        }
        if tool_of_child.insert(child, c).is_some() {
            return Err(fail(format!("multiple tool events reference child session {child:?}")));
        }
    }

    // An exporter's edges are authoritative for the session pairs they link.
    let mut linked: FxHashSet<(&str, &str)> = FxHashSet::default();
    for (i, e) in entries.iter().enumerate() {
        for d in &e.dependencies {
            let Some(&s) = index.get(d.request_id.as_str()) else {
                return Err(fail(format!("request {:?} depends on unknown request_id {:?}", e.request_id, d.request_id)));
            };
            if entries[s].start_ms > e.start_ms {
                return Err(fail(format!("request {:?} depends on later request {:?}", e.request_id, d.request_id)));
            }
            let (a, b) = (e.session_id.as_str(), entries[s].session_id.as_str());
            if a != b {
                linked.insert((a, b));
                linked.insert((b, a));
            }
            let mut x = edge(s, i, d.trigger, d.relation);
            // A spawned request may start a little before its sender's response ended: it
            // waits for the completion (no negative delay).
            x.delay_ms = x.delay_ms.max(0.0);
            push(&mut deps, i, x);
        }
    }

    for (&child, &parent) in &parent_of {
        let kids = &sessions[child];
        let parents =
            sessions.get(parent).ok_or_else(|| fail(format!("child session {child:?} references unknown parent session {parent:?}")))?;
        let first_kid = kids[0];
        let last_kid = kids.iter().copied().reduce(latest_end).expect("a session has requests");
        if let Some(c) = tool_of_child.get(child) {
            let spawner = index[c.source_request_id.as_str()];
            if !parents.contains(&spawner) {
                return Err(fail(format!("tool source request {:?} is not in parent session {parent:?}", c.source_request_id)));
            }
            push(&mut deps, first_kid, edge(spawner, first_kid, Trigger::Dispatch, Relation::Spawn));
            if let Some(consumer) = &c.consumer_request_id {
                let joiner = index[consumer.as_str()];
                if !parents.contains(&joiner) {
                    return Err(fail(format!("tool consumer request {consumer:?} is not in parent session {parent:?}")));
                }
                // A background child may run on after its result was used: the consumer joins
                // the latest child request that had ended by its start.
                let done = kids.iter().copied().filter(|&k| entries[k].end_ms <= entries[joiner].start_ms).reduce(latest_end);
                if let Some(k) = done {
                    push(&mut deps, joiner, edge(k, joiner, Trigger::Completion, Relation::Join));
                }
            }
            continue;
        }
        if linked.contains(&(child, parent)) {
            continue;
        }
        // The latest parent request started by the child's first start (the last of equals).
        let spawner = parents
            .iter()
            .copied()
            .filter(|&p| entries[p].start_ms <= entries[first_kid].start_ms)
            .reduce(|a, b| if entries[b].start_ms >= entries[a].start_ms { b } else { a });
        if let Some(p) = spawner {
            push(&mut deps, first_kid, edge(p, first_kid, Trigger::Dispatch, Relation::Spawn));
        }
        // The earliest parent request started after the child's last end (the first of equals).
        let joiner = parents
            .iter()
            .copied()
            .filter(|&p| entries[p].start_ms >= entries[last_kid].end_ms)
            .reduce(|a, b| if entries[b].start_ms < entries[a].start_ms { b } else { a });
        if let Some(p) = joiner {
            push(&mut deps, p, edge(last_kid, p, Trigger::Completion, Relation::Join));
        }
    }

    let mut nodes = Vec::with_capacity(entries.len());
    for (e, dependencies) in entries.into_iter().zip(deps) {
        for d in &dependencies {
            check_dependency(d).map_err(|m| fail(format!("request {} {m}", e.request_id)))?;
        }
        if e.input_length == 0 {
            return Err(fail(format!("request {} has zero input_length", e.request_id)));
        }
        let want = e.input_length.div_ceil(block_size) as usize;
        if e.hashes.len() != want {
            return Err(fail(format!(
                "request {} has input_length {} at block_size {block_size} and requires exactly {want} hash_ids, got {}",
                e.request_id,
                e.input_length,
                e.hashes.len()
            )));
        }
        nodes.push(Node {
            not_before_ms: if dependencies.is_empty() { (e.start_ms - first_start) as f64 } else { 0.0 },
            request_id: e.request_id,
            play_id: String::new(),
            source_play_ordinal: None,
            session_id: e.session_id,
            model: e.model.unwrap_or_else(|| "unknown".into()),
            input_length: e.input_length,
            output_length: e.output_length,
            hash_ids: e.hashes,
            dependencies,
        });
    }
    name_plays(&mut nodes, "dynamo-play");
    workload(nodes, block_size, source)
}
