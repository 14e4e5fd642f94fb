//! Agentic workloads: requests that depend on earlier requests (an agent's next call waits
//! for the previous answer and its tool call; a sub-agent is spawned when its parent's
//! request goes out; a parent resumes when its sub-agents are done). A trace of them is a
//! request graph ([`Graph`]), read from one of three formats:
//! - [`mooncake`]: `agentic_mooncake` (Dynamo's `dynamo.agentic_mooncake` v2 rows with typed
//!   dependencies);
//! - [`dynamo`]: a Dynamo request trace whose records carry `agent_context` (sessions,
//!   parent sessions and tool events become the graph's edges);
//! - `weka` (Weka/AgentX traces) is not read yet: refused by name.
//!
//! The graph is executed by the load driver (`workload::driver`): a request is ready when
//! every request it depends on was dispatched or completed (as its edge says), plus the
//! edge's delay, and not before its own `not_before_ms`. Every rule here was read from Dynamo
//! 1.6.1's replay (`docs/formats.md` says which); the code is servesim's own.

pub mod dynamo;
pub mod mooncake;
pub mod run;

use super::Workload;
use crate::SimError;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// When an edge fires: when its source request is dispatched, or when it completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    Dispatch,
    Completion,
}

/// What an edge stands for (it decides which triggers are allowed, and a spawn names the
/// request's parent).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Relation {
    Sequence,
    Spawn,
    Join,
    ReplayBarrier,
}

/// One edge as a trace writes it: the request waited for, and the delay after it fires.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Dependency {
    pub request_id: String,
    pub trigger: Trigger,
    pub delay_ms: f64,
    pub relation: Relation,
}

/// One request of a graph before it is validated (any format lowers to these).
#[derive(Clone, Debug, Default)]
pub struct Node {
    pub request_id: String,
    pub play_id: String,
    pub source_play_ordinal: Option<usize>,
    pub session_id: String,
    pub model: String,
    pub input_length: u32,
    pub output_length: u32,
    pub hash_ids: Vec<u64>,
    pub not_before_ms: f64,
    pub dependencies: Vec<Dependency>,
}

/// A play: one agent run (a connected set of requests), executed as a unit.
#[derive(Clone, Debug, PartialEq)]
pub struct Play {
    pub name: String,
    /// Its requests and its roots (requests without dependencies), as node indices.
    pub nodes: Vec<u32>,
    pub roots: Vec<u32>,
}

/// An edge as the driver uses it: the request it releases and the delay.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Edge {
    pub target: u32,
    pub delay_ms: f64,
}

/// A validated request graph. Nodes are ordered by `request_id` (the reference's order: it
/// numbers requests so, and requests ready at one instant are dispatched in it); node `i` is
/// the workload's row `i`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Graph {
    pub request_ids: Vec<String>,
    pub session_ids: Vec<String>,
    /// Per node: its play.
    pub play_of: Vec<u32>,
    /// In the order they are scheduled: by `source_play_ordinal` when every play has one,
    /// else by name.
    pub plays: Vec<Play>,
    /// Per node: the earliest it may be dispatched, ms from the earliest node's.
    pub not_before_ms: Vec<f64>,
    /// Per node: how many edges must fire before it is ready.
    pub num_dependencies: Vec<u32>,
    /// Per node: the edges it fires when dispatched, and when completed.
    pub on_dispatch: Vec<Vec<Edge>>,
    pub on_completion: Vec<Vec<Edge>>,
    /// The models the trace names (provenance; every request runs on the configured engine).
    pub models: BTreeSet<String>,
    /// The trace's block size (tokens per hash id).
    pub block_size: u32,
}

/// The workload of a validated graph: row `i` is node `i` (its arrival is the driver's to
/// decide), with the graph attached.
pub fn workload(nodes: Vec<Node>, block_size: u32, source: &str) -> Result<Workload, SimError> {
    let (graph, rows) = validate(nodes, block_size, source)?;
    let mut w = Workload::new(block_size);
    for (i, (input, output, ids)) in rows.into_iter().enumerate() {
        w.push(graph.not_before_ms[i], input, output, &ids);
    }
    w.graph = Some(Box::new(graph));
    Ok(w)
}

/// A node's row: input and output lengths, hash ids.
type Row = (u32, u32, Vec<u64>);

/// Validates `nodes` into a graph (the reference's rules: unique nonempty ids, known
/// dependencies within the same play, no cycles, every play with a root, source play
/// ordinals all or none, unique and contiguous from 0) and returns it with each node's row,
/// hash ids renamed 0, 1, 2, … in node order, as the reference does before making tokens of
/// them.
pub fn validate(mut nodes: Vec<Node>, block_size: u32, source: &str) -> Result<(Graph, Vec<Row>), SimError> {
    let fail = |msg: String| SimError::new(format!("{source}: {msg}"));
    if nodes.is_empty() {
        return Err(fail("the trace has no requests".into()));
    }
    nodes.sort_by(|a, b| a.request_id.cmp(&b.request_id));
    if let Some(w) = nodes.windows(2).find(|w| w[0].request_id == w[1].request_id) {
        return Err(fail(format!("request_id {} appears twice", w[0].request_id)));
    }
    let index: FxHashMap<&str, u32> = nodes.iter().enumerate().map(|(i, n)| (n.request_id.as_str(), i as u32)).collect();
    let n = nodes.len();
    let mut g = Graph { block_size, ..Graph::default() };
    g.on_dispatch = vec![Vec::new(); n];
    g.on_completion = vec![Vec::new(); n];
    let mut by_play: FxHashMap<&str, Vec<u32>> = FxHashMap::default();
    for (i, node) in nodes.iter().enumerate() {
        by_play.entry(node.play_id.as_str()).or_default().push(i as u32);
        for d in &node.dependencies {
            let Some(&s) = index.get(d.request_id.as_str()) else {
                return Err(fail(format!("request {} references unknown request_id {}", node.request_id, d.request_id)));
            };
            if s as usize == i {
                return Err(fail(format!("request {} cannot depend on itself", node.request_id)));
            }
            let src = &nodes[s as usize];
            if src.play_id != node.play_id {
                return Err(fail(format!(
                    "request {} in play {} depends on request {} in play {}",
                    node.request_id, node.play_id, d.request_id, src.play_id
                )));
            }
            let edge = Edge { target: i as u32, delay_ms: d.delay_ms };
            match d.trigger {
                Trigger::Dispatch => g.on_dispatch[s as usize].push(edge),
                Trigger::Completion => g.on_completion[s as usize].push(edge),
            }
        }
    }
    acyclic(&nodes, &g)?;
    let mut plays = Vec::with_capacity(by_play.len());
    for (name, members) in by_play {
        let ordinal = nodes[members[0] as usize].source_play_ordinal;
        if members.iter().any(|&m| nodes[m as usize].source_play_ordinal != ordinal) {
            return Err(fail(format!("play {name} has inconsistent source_play_ordinal values")));
        }
        let roots: Vec<u32> = members.iter().copied().filter(|&m| nodes[m as usize].dependencies.is_empty()).collect();
        if roots.is_empty() {
            return Err(fail(format!("play {name} must have at least one root request, found 0")));
        }
        plays.push((ordinal, Play { name: name.to_string(), nodes: members, roots }));
    }
    let ordered = plays.iter().filter(|p| p.0.is_some()).count();
    if ordered != 0 && ordered != plays.len() {
        return Err(fail("source_play_ordinal must be set for every play when it is used".into()));
    }
    if ordered == plays.len() {
        plays.sort_by_key(|p| p.0);
        for (expected, p) in plays.iter().enumerate() {
            if p.0 != Some(expected) {
                return Err(fail(format!(
                    "source_play_ordinal values must be unique and contiguous from 0; expected {expected}, found {}",
                    p.0.unwrap_or(0)
                )));
            }
        }
    } else {
        plays.sort_by(|a, b| a.1.name.cmp(&b.1.name));
    }
    g.play_of = vec![0; n];
    for (k, (_, p)) in plays.iter().enumerate() {
        for &m in &p.nodes {
            g.play_of[m as usize] = k as u32;
        }
    }
    g.plays = plays.into_iter().map(|p| p.1).collect();
    // Times count from the earliest node's `not_before_ms`.
    let t0 = nodes.iter().map(|n| n.not_before_ms).fold(f64::INFINITY, f64::min);
    let mut names: FxHashMap<u64, u64> = FxHashMap::default();
    let mut ids = Vec::with_capacity(n);
    for node in nodes {
        g.num_dependencies.push(node.dependencies.len() as u32);
        g.not_before_ms.push(node.not_before_ms - t0);
        g.models.insert(node.model);
        g.request_ids.push(node.request_id);
        g.session_ids.push(node.session_id);
        let renamed = node
            .hash_ids
            .iter()
            .map(|h| {
                let next = names.len() as u64;
                *names.entry(*h).or_insert(next)
            })
            .collect();
        ids.push((node.input_length, node.output_length, renamed));
    }
    Ok((g, ids))
}

/// Kahn's walk: every node must be reached.
fn acyclic(nodes: &[Node], g: &Graph) -> Result<(), SimError> {
    let mut indegree: Vec<usize> = nodes.iter().map(|n| n.dependencies.len()).collect();
    let mut ready: std::collections::VecDeque<usize> = (0..nodes.len()).filter(|&i| indegree[i] == 0).collect();
    let mut seen = 0;
    while let Some(i) = ready.pop_front() {
        seen += 1;
        for e in g.on_dispatch[i].iter().chain(&g.on_completion[i]) {
            let t = e.target as usize;
            indegree[t] -= 1;
            if indegree[t] == 0 {
                ready.push_back(t);
            }
        }
    }
    if seen == nodes.len() {
        return Ok(());
    }
    let blocked: Vec<&str> = (0..nodes.len()).filter(|&i| indegree[i] > 0).take(8).map(|i| nodes[i].request_id.as_str()).collect();
    Err(SimError::new(format!("cycle detected among {} agentic requests; blocked request IDs: {}", nodes.len() - seen, blocked.join(", "))))
}

/// Checks one edge as a trace gives it: a nonempty id, a finite non-negative delay, and a
/// trigger its relation allows (a spawn fires on either; the others on completion).
pub fn check_dependency(d: &Dependency) -> Result<(), String> {
    if d.request_id.trim().is_empty() {
        return Err("has a dependency with an empty request_id".into());
    }
    if !(d.delay_ms.is_finite() && d.delay_ms >= 0.0) {
        return Err(format!("has invalid dependency delay {}", d.delay_ms));
    }
    if d.trigger == Trigger::Dispatch && d.relation != Relation::Spawn {
        return Err(format!("has invalid {:?} dependency with Dispatch trigger", d.relation));
    }
    Ok(())
}

/// Names plays by the dependency components of `nodes` (when a format has no play ids): a
/// component is named `{prefix}:{root}` after its root with the earliest `not_before_ms`
/// (ties by request id).
pub fn name_plays(nodes: &mut [Node], prefix: &str) {
    fn find(parent: &mut [usize], x: usize) -> usize {
        let mut r = x;
        while parent[r] != r {
            r = parent[r];
        }
        let mut y = x;
        while parent[y] != r {
            let next = parent[y];
            parent[y] = r;
            y = next;
        }
        r
    }
    let by_id: FxHashMap<String, usize> = nodes.iter().enumerate().map(|(i, n)| (n.request_id.clone(), i)).collect();
    let mut parent: Vec<usize> = (0..nodes.len()).collect();
    for (i, node) in nodes.iter().enumerate() {
        for d in &node.dependencies {
            if let Some(&s) = by_id.get(&d.request_id) {
                let (a, b) = (find(&mut parent, i), find(&mut parent, s));
                if a != b {
                    parent[a] = b;
                }
            }
        }
    }
    let mut label: FxHashMap<usize, usize> = FxHashMap::default();
    for (i, node) in nodes.iter().enumerate() {
        if !node.dependencies.is_empty() {
            continue;
        }
        let c = find(&mut parent, i);
        let better = |j: usize| {
            let (a, b) = (&nodes[i], &nodes[j]);
            a.not_before_ms.total_cmp(&b.not_before_ms).then_with(|| a.request_id.cmp(&b.request_id)).is_lt()
        };
        match label.get(&c) {
            Some(&j) if !better(j) => {}
            _ => {
                label.insert(c, i);
            }
        }
    }
    let names: Vec<String> = (0..nodes.len())
        .map(|i| {
            let c = find(&mut parent, i);
            let l = *label.entry(c).or_insert(i);
            format!("{prefix}:{}", nodes[l].request_id)
        })
        .collect();
    for (node, name) in nodes.iter_mut().zip(names) {
        node.play_id = name;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: &str, play: &str, deps: &[(&str, Trigger, f64)]) -> Node {
        Node {
            request_id: id.into(),
            play_id: play.into(),
            session_id: "s".into(),
            model: "m".into(),
            input_length: 4,
            output_length: 2,
            hash_ids: vec![7],
            dependencies: deps
                .iter()
                .map(|(r, t, d)| Dependency {
                    request_id: r.to_string(),
                    trigger: *t,
                    delay_ms: *d,
                    relation: if *t == Trigger::Dispatch { Relation::Spawn } else { Relation::Sequence },
                })
                .collect(),
            ..Node::default()
        }
    }

    #[test]
    fn nodes_sort_by_request_id_and_edges_point_forward() {
        let nodes = vec![
            node("c", "p", &[("a", Trigger::Completion, 1.0), ("b", Trigger::Completion, 2.0)]),
            node("b", "p", &[("a", Trigger::Dispatch, 5.0)]),
            node("a", "p", &[]),
        ];
        let (g, ids) = validate(nodes, 4, "t").unwrap();
        assert_eq!(g.request_ids, ["a", "b", "c"]);
        assert_eq!(g.num_dependencies, [0, 1, 2]);
        assert_eq!(g.on_dispatch[0], [Edge { target: 1, delay_ms: 5.0 }]);
        assert_eq!(g.on_completion[0], [Edge { target: 2, delay_ms: 1.0 }]);
        assert_eq!(g.plays, [Play { name: "p".into(), nodes: vec![0, 1, 2], roots: vec![0] }]);
        assert_eq!(ids, [(4, 2, vec![0]), (4, 2, vec![0]), (4, 2, vec![0])]);
    }

    #[test]
    fn bad_graphs_are_refused_with_the_request_named() {
        let e =
            validate(vec![node("a", "p", &[("b", Trigger::Completion, 0.0)]), node("b", "p", &[("a", Trigger::Completion, 0.0)])], 4, "t");
        assert!(e.unwrap_err().0.contains("cycle detected among 2 agentic requests"));
        let e = validate(vec![node("a", "p", &[]), node("b", "q", &[("a", Trigger::Completion, 0.0)])], 4, "t");
        assert!(e.unwrap_err().0.contains("request b in play q depends on request a in play p"));
        let e = validate(vec![node("a", "p", &[("zz", Trigger::Completion, 0.0)])], 4, "t");
        assert!(e.unwrap_err().0.contains("references unknown request_id zz"));
        let bad = Dependency { request_id: "a".into(), trigger: Trigger::Dispatch, delay_ms: 0.0, relation: Relation::Join };
        assert!(check_dependency(&bad).unwrap_err().contains("invalid Join dependency"));
    }

    #[test]
    fn plays_are_named_after_their_earliest_root() {
        let mut nodes = vec![node("x", "", &[]), node("y", "", &[("x", Trigger::Completion, 0.0)]), node("w", "", &[])];
        nodes[0].not_before_ms = 5.0;
        name_plays(&mut nodes, "legacy-play");
        let names: Vec<&str> = nodes.iter().map(|n| n.play_id.as_str()).collect();
        assert_eq!(names, ["legacy-play:x", "legacy-play:x", "legacy-play:w"]);
    }
}
