//! The TypeScript shapes of the engine's results (`bindings.d.ts`), copied by wasm-bindgen
//! into the package's `.d.ts`; the exports name them with `unchecked_return_type`, so the
//! package is typed end to end (no `any`).

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &'static str = include_str!("bindings.d.ts");
