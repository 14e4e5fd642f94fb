//! Workers, their data-parallel ranks, and the router in front of them.

pub mod router;

pub use router::{Router, RouterMode};
