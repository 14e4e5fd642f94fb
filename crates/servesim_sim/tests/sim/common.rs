//! Building runs the way every caller does (`servesim_sim::build`), for the tests.

use serde_json::Value;
use servesim_sim::replay::Case;
use servesim_sim::{BuildOptions, DirFiles, Input, MemFiles, Simulation, build};
use std::path::{Path, PathBuf};

pub fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)
}

/// The run of the replay case file at `path` (its files beside it), invariant checks on.
pub fn case_file(path: &Path) -> Simulation {
    let text = std::fs::read_to_string(path).unwrap();
    let case = Case::from_json_str(&text, &path.display().to_string()).unwrap();
    build(&Input::Case(case), &mut DirFiles::beside(path), &BuildOptions::default()).unwrap().with_checks(true)
}

/// The run of a replay case given as JSON whose files are beside `near` (a file path).
pub fn case_doc(doc: &Value, near: &Path) -> Simulation {
    let case = Case::from_json_str(&doc.to_string(), "case").unwrap();
    build(&Input::Case(case), &mut DirFiles::beside(near), &BuildOptions::default()).unwrap().with_checks(true)
}

/// The run of a replay case given as JSON with its trace text in memory (named as the case
/// names it).
pub fn case_with_trace(doc: &Value, trace: &str) -> Simulation {
    let case = Case::from_json_str(&doc.to_string(), "case").unwrap();
    let mut files = MemFiles::new();
    files.insert(case.trace.clone(), trace.as_bytes().to_vec());
    build(&Input::Case(case), &mut files, &BuildOptions::default()).unwrap().with_checks(true)
}
