//! servesim's configuration search in the browser: a second wasm-bindgen module beside
//! `servesim_wasm`, loaded only when the page searches (the playground's first download
//! carries no YAML parser, DynoSim mapping or search).
//!
//! - [`predict`]: DynoSim predict files to scenarios and back, a recommend file's search
//!   (`Recommendation`) and one candidate's run (`CandidateRun`), the same code as `servesim
//!   predict` / `servesim recommend`.
//!
//! Files a configuration names (a model's `config.json`, a trace, a measured-kernel data
//! file) come in one `Record<string, Uint8Array>` by name.

pub mod predict;

use js_sys::{Object, Reflect, Uint8Array};
use servesim_sim::SimError;
/// The page's files (the engine module's, shared): this module keeps no store of
/// measured-kernel files, so they come by name like every other file (`kernels: None`).
pub(crate) use servesim_sim::Uploads;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
}

/// The module's version (the workspace version; the engine module's `version()` is the same).
#[wasm_bindgen(js_name = searchVersion)]
pub fn search_version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

pub(crate) fn js_err(e: impl std::fmt::Display) -> JsError {
    JsError::new(&e.to_string())
}

/// A file handed over by name, or the message naming what is missing.
pub(crate) fn read_file(files: &Option<Object>, name: &str) -> Result<Vec<u8>, SimError> {
    let value = match files {
        Some(obj) => Reflect::get(obj, &JsValue::from_str(name)).unwrap_or(JsValue::UNDEFINED),
        None => JsValue::UNDEFINED,
    };
    match value.dyn_into::<Uint8Array>() {
        Ok(bytes) => Ok(bytes.to_vec()),
        Err(_) => servesim_sim::build::no_files(name),
    }
}
