//! The harness's error: bad input, named by file and line or by field.

use std::fmt;

/// A user-facing error: bad input, named by file and line or by field.
#[derive(Clone, Debug, PartialEq)]
pub struct SimError(pub String);

impl SimError {
    pub fn new(msg: impl Into<String>) -> Self {
        SimError(msg.into())
    }
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SimError {}

impl From<servesim_engine::ArgsError> for SimError {
    fn from(e: servesim_engine::ArgsError) -> Self {
        SimError(e.0)
    }
}
