//! NPZ profiles the engines are timed by: part of a resolved [`SimConfig`], loaded once by
//! `build` through its caller's file reader (the harness reads no files itself).

use super::SimConfig;
use crate::SimError;
use servesim_engine::EngineArgs;
use servesim_engine::perf::interpolated::Profile;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The loaded profiles, by the path the arguments give.
#[derive(Clone, Debug, Default)]
pub struct Profiles(BTreeMap<String, Arc<Profile>>);

impl Profiles {
    /// Loads the profile each engine of `cfg` names (`timing_model` `dynamo_profile` or
    /// `planner_profile_data`), each once, reading its bytes with `read`.
    pub fn load(cfg: &SimConfig, mut read: impl FnMut(&str) -> Result<Vec<u8>, SimError>) -> Result<Self, SimError> {
        let mut profiles = BTreeMap::new();
        for engine in cfg.engines() {
            let Some(path) = engine.profile_path() else { continue };
            if profiles.contains_key(path) {
                continue;
            }
            let bytes = read(path)?;
            let profile = read_npz(path, &bytes)?;
            profiles.insert(path.to_string(), Arc::new(profile));
        }
        Ok(Profiles(profiles))
    }

    /// The profile `engine` is timed by, if it names one and it was loaded.
    pub fn get(&self, engine: &EngineArgs) -> Option<Arc<Profile>> {
        engine.profile_path().and_then(|p| self.0.get(p)).cloned()
    }
}

#[cfg(feature = "npz-profiles")]
fn read_npz(path: &str, bytes: &[u8]) -> Result<Profile, SimError> {
    Profile::from_npz(bytes).map_err(|e| SimError::new(format!("{path}: {e}")))
}

/// Without the NPZ reader (the page's first module): refused with the words that make the
/// page load the full one.
#[cfg(not(feature = "npz-profiles"))]
fn read_npz(path: &str, _bytes: &[u8]) -> Result<Profile, SimError> {
    Err(SimError::left_out(&format!("{path}: the NPZ profile reader")))
}
