//! Workers, their data-parallel ranks, and the routers in front of them.

pub mod indexer;
pub mod router;

pub use indexer::Indexer;
pub use router::{Placement, RouteQuery, Router, RouterConfig, RouterMode};
