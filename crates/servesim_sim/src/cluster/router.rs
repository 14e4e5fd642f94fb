//! Request placement over routing targets (a worker's data-parallel ranks).

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RouterMode {
    /// The k-th arrival goes to target k mod n.
    RoundRobin,
}

#[derive(Clone, Debug)]
pub enum Router {
    RoundRobin { next: usize, targets: usize },
}

impl Router {
    pub fn new(mode: RouterMode, targets: usize) -> Self {
        match mode {
            RouterMode::RoundRobin => Router::RoundRobin { next: 0, targets },
        }
    }

    /// Picks the target for the next arrival.
    pub fn route(&mut self) -> usize {
        match self {
            Router::RoundRobin { next, targets } => {
                let t = *next;
                *next = (*next + 1) % *targets;
                t
            }
        }
    }
}
