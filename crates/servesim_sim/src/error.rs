//! The harness's error: bad input, named by file and line or by field.

use std::fmt;

/// A user-facing error: bad input, named by file and line or by field.
#[derive(Clone, Debug, PartialEq)]
pub struct SimError(pub String);

/// The words every error about a part left out of a build carries (`left_out`): the page's
/// engine worker, running the smaller first module, loads the full one when it reads them.
pub const LEFT_OUT: &str = "is not in this build of the engine";

impl SimError {
    pub fn new(msg: impl Into<String>) -> Self {
        SimError(msg.into())
    }

    /// A part this build was compiled without (the cargo features `measured-kernels`,
    /// `npz-profiles`, `trace-files`): `what` names it, as the user chose it.
    pub fn left_out(what: &str) -> Self {
        SimError(format!("{what} {LEFT_OUT} (the full build has it)"))
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
