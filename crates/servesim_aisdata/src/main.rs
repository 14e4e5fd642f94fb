//! `servesim-ais-convert --package DIR --out data/ais [--only SYSTEM/BACKEND]`: converts the
//! current version of every framework for the GPUs servesim ships (or one), and writes
//! `index.json` and `models.json` beside the data files. `DIR` is the installed
//! `aiconfigurator_core` package (`site-packages/aiconfigurator_core`).

use std::path::PathBuf;

use servesim_aisdata::{LaneOrders, bundled_models, convert, current_versions, package_version};

/// The GPUs with dense data for all three frameworks.
const SYSTEMS: [&str; 8] = ["h100_sxm", "h200_sxm", "b200_sxm", "b300_sxm", "gb200", "gb300", "l40s", "rtx_pro_6000_server"];

fn main() {
    if let Err(e) = run() {
        eprintln!("servesim-ais-convert: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let get = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
    let package = PathBuf::from(get("--package").ok_or("--package DIR (the aiconfigurator_core package) is required")?);
    let out = PathBuf::from(get("--out").ok_or("--out DIR is required")?);
    let lanes_path =
        get("--lanes").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("lane-orders.json"));
    let lanes: LaneOrders =
        serde_json::from_str(&std::fs::read_to_string(&lanes_path).map_err(|e| format!("{}: {e}", lanes_path.display()))?)
            .map_err(|e| format!("{}: {e}", lanes_path.display()))?;
    let only = get("--only");
    let mut sets = Vec::new();
    for system in SYSTEMS {
        for (backend, version) in current_versions(&package, system)? {
            if only.as_ref().is_some_and(|o| o != &format!("{system}/{backend}")) {
                continue;
            }
            let c = convert(&package, system, &backend, &version, &lanes)?;
            let rel = format!("{system}/{backend}-{version}.zip");
            let path = out.join(&rel);
            std::fs::create_dir_all(path.parent().expect("parent")).map_err(|e| e.to_string())?;
            std::fs::write(&path, &c.bytes).map_err(|e| format!("{}: {e}", path.display()))?;
            eprintln!("{rel}: {} bytes, {} slices", c.bytes.len(), c.meta.slices.len());
            sets.push(serde_json::json!({"system": system, "backend": backend, "version": version, "file": rel, "bytes": c.bytes.len(),
                "gpu_memory_bytes": c.meta.system.mem_capacity, "power_w": c.meta.system.power, "sm_version": c.meta.system.sm_version}));
        }
    }
    if only.is_none() {
        let models = bundled_models(&package)?;
        std::fs::write(out.join("models.json"), serde_json::to_string_pretty(&models).map_err(|e| e.to_string())? + "\n")
            .map_err(|e| e.to_string())?;
        let index = serde_json::json!({
            "format": "servesim-measured-kernels-index", "format_version": 1,
            "package": "aiconfigurator-core", "package_version": package_version(&package),
            "models": "models.json", "sets": sets,
        });
        std::fs::write(out.join("index.json"), serde_json::to_string_pretty(&index).map_err(|e| e.to_string())? + "\n")
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}
