//! Measured-kernel data in the page: the page fetches `index.json`, `models.json` and the data
//! file of the chosen GPU and framework (the catalog names it), hands their bytes over once
//! with [`load_kernel_data`], and every later run and inspection reads them from here.

use std::cell::RefCell;
use std::rc::Rc;

use servesim_sim::SimError;

thread_local! {
    /// By name, in the order they came (a handful: a list is all they need).
    static FILES: RefCell<Vec<(String, Rc<Vec<u8>>)>> = const { RefCell::new(Vec::new()) };
    /// The last file a call asked for and did not find: the page fetches it and calls again.
    static MISSING: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Keeps a measured-kernel file under its name in the index (`index.json`, `models.json`,
/// `h200_sxm/vllm-0.24.0.zip`).
pub fn insert(name: &str, bytes: Vec<u8>) {
    FILES.with(|f| {
        let mut f = f.borrow_mut();
        f.retain(|(n, _)| n != name);
        f.push((name.to_string(), Rc::new(bytes)));
    });
}

/// Names of the files loaded so far.
pub fn loaded() -> Vec<String> {
    FILES.with(|f| f.borrow().iter().map(|(n, _)| n.clone()).collect())
}

/// A loaded file's bytes, or an error telling the page what to fetch (also kept for
/// [`take_missing`]).
pub fn get(name: &str) -> Result<Vec<u8>, SimError> {
    FILES.with(|f| f.borrow().iter().find(|(n, _)| n == name).map(|(_, b)| b.to_vec())).ok_or_else(|| {
        MISSING.with(|m| *m.borrow_mut() = Some(name.to_string()));
        SimError::new(format!("measured-kernel data `{name}` is not loaded (fetch data/ais/{name} and pass it to loadKernelData)"))
    })
}

/// The file the last failed call missed, once: what the page must fetch before it calls
/// again (the engine decides which file a scenario reads; the page only fetches it).
pub fn take_missing() -> Option<String> {
    MISSING.with(|m| m.borrow_mut().take())
}

/// The catalog of what data exists (see `servesim_sim::kernels::catalog`), from the loaded
/// `index.json` and `models.json`, with each set marked `loaded`.
pub fn catalog() -> Result<serde_json::Value, SimError> {
    let index: serde_json::Value = serde_json::from_str(&String::from_utf8_lossy(&get(servesim_sim::kernels::INDEX)?))
        .map_err(|e| SimError::new(format!("index.json: {e}")))?;
    let models = match get("models.json") {
        Ok(b) => Some(
            serde_json::from_str::<serde_json::Value>(&String::from_utf8_lossy(&b))
                .map_err(|e| SimError::new(format!("models.json: {e}")))?,
        ),
        Err(_) => None,
    };
    let mut c = servesim_sim::kernels::catalog(&index, models.as_ref());
    let have = loaded();
    if let Some(sets) = c.get_mut("sets").and_then(|s| s.as_array_mut()) {
        for s in sets {
            let loaded = s.get("file").and_then(|f| f.as_str()).is_some_and(|f| have.iter().any(|h| h == f));
            s["loaded"] = loaded.into();
        }
    }
    Ok(c)
}
