//! Workers, their data-parallel ranks, the routers in front of them, and the hand-off between
//! prefill and decode pools.

pub(crate) mod fleet;
pub(crate) mod handoff;
pub mod indexer;
pub mod prefill_load;
pub mod router;

pub use handoff::TransferArgs;
pub use indexer::Indexer;
pub use router::{Placement, PrefillEstimate, PrefillLoadModel, RouteQuery, Router, RouterConfig, RouterMode};
