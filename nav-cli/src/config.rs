//! The configuration file (`--config FILE`, TOML): one section per concern,
//! each the library's own serde struct with SPEC §3 defaults, so a file
//! only lists what it changes. Unknown keys are errors naming the key.
//!
//! ```toml
//! [vlm]
//! provider = "openai"
//! model = "gpt-4o-mini"
//!
//! [explore.safety.speeds]
//! fast_mps = 0.15
//!
//! [rosbridge]            # nav rosmaster (docs/ROSMASTER.md)
//! url = "ws://192.168.1.42:9090"
//! ```

use crate::exit::{Exit, usage};
use nav_core::config::ConfigError;
use nav_hal::sim::SimConfig;
use nav_planner::navigator::candidates_loop::CandidatesLoopConfig;
use nav_planner::navigator::explore_loop::ExploreLoopConfig;
use nav_planner::navigator::objectnav_loop::ObjectNavLoopConfig;
use nav_planner::protocol::ProtocolKind;
use nav_planner::vlm::{BackendConfig, Provider};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// `[explore.safety.speeds] fast_mps: must be …` for the key
/// `explore.safety.speeds.fast_mps`: the table a user edits, then the key.
pub fn section_and_key(e: &ConfigError) -> String {
    match e.key.rsplit_once('.') {
        Some((section, key)) => format!("[{section}] {key}: {}", e.message),
        None => format!("[{}] {}", e.key, e.message),
    }
}

#[cfg(any(feature = "rosmaster", feature = "habitat"))]
fn hal_config_error(section: &str, e: nav_hal::HalError) -> ConfigError {
    match e {
        nav_hal::HalError::InvalidConfig { field, message } => ConfigError::new(field, message).under(section),
        other => ConfigError::new(section, other.to_string()),
    }
}

/// Grounding files to merge into system prompts.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GroundingSection {
    /// Files (JSON and/or TXT) to merge.
    pub files: Vec<PathBuf>,
    /// `txt`, `json` or `both`.
    pub format: Option<String>,
}

/// The whole file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NavConfig {
    /// Simulator settings.
    pub sim: SimConfig,
    /// ObjectNav loop settings (memory parameters inside).
    pub objectnav: ObjectNavLoopConfig,
    /// Explore loop settings (safety layer inside).
    pub explore: ExploreLoopConfig,
    /// Candidates loop settings.
    pub candidates: CandidatesLoopConfig,
    /// The VLM backend, when a model is used.
    pub vlm: Option<BackendConfig>,
    /// Grounding knowledge.
    pub grounding: GroundingSection,
    /// The robot behind rosbridge (`nav rosmaster`).
    #[cfg(feature = "rosmaster")]
    pub rosbridge: nav_hal::rosbridge::RosbridgeConfig,
    /// The simulator bridge's timeouts and observations (`nav habitat`).
    #[cfg(feature = "habitat")]
    pub bridge: nav_hal::bridge::BridgeConfig,
    /// Episodes, planner, memory, agent radius (`nav habitat`; flags override).
    #[cfg(feature = "habitat")]
    pub habitat: nav_planner::navigator::bridge_run::BridgeRunConfig,
    /// The file as a TOML table, to tell keys the file sets from defaults.
    #[serde(skip)]
    pub table: toml::Table,
}

impl NavConfig {
    /// Loads a TOML file and checks every value against its documented
    /// range; errors (exit 2) name the file, the `[section]` and the key.
    pub fn load(path: &Path) -> Result<Self, Exit> {
        let text = std::fs::read_to_string(path).map_err(|e| usage(format!("config {}: {e}", path.display())))?;
        let mut config: Self = toml::from_str(&text).map_err(|e| usage(format!("config {}: {e}", path.display())))?;
        config.table = toml::from_str(&text).map_err(|e| usage(format!("config {}: {e}", path.display())))?;
        config.validate().map_err(|e| usage(format!("config {}: {}", path.display(), section_and_key(&e))))?;
        Ok(config)
    }

    /// Checks every section (keys are `section.field…` paths).
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.sim.validate().map_err(|e| e.under("sim"))?;
        self.objectnav.validate().map_err(|e| e.under("objectnav"))?;
        self.explore.validate().map_err(|e| e.under("explore"))?;
        self.candidates.validate().map_err(|e| e.under("candidates"))?;
        if let Some(vlm) = &self.vlm {
            vlm.validate().map_err(|e| {
                let text = match e {
                    nav_planner::vlm::VlmError::Config { message } => message,
                    other => other.to_string(),
                };
                match text.split_once(' ') {
                    Some((key, rest)) if key.starts_with("vlm.") => ConfigError::new(key, rest),
                    _ => ConfigError::new("vlm", text),
                }
            })?;
        }
        #[cfg(feature = "rosmaster")]
        self.rosbridge.validate().map_err(|e| hal_config_error("rosbridge", e))?;
        #[cfg(feature = "habitat")]
        {
            self.bridge.validate().map_err(|e| hal_config_error("", e))?;
            self.habitat.validate().map_err(|e| ConfigError::new("habitat", e.to_string()))?;
        }
        self.check_overridden()
    }

    /// Keys `nav run`/`nav eval` would replace with something else are
    /// rejected, naming what decides instead.
    fn check_overridden(&self) -> Result<(), ConfigError> {
        if self.is_set(&["sim", "noise", "seed"]) {
            return Err(ConfigError::new("sim.noise.seed", "is set by --seed (nav run, nav eval); remove it"));
        }
        if self.is_set(&["candidates", "goal_tolerance_m"]) {
            return Err(ConfigError::new(
                "candidates.goal_tolerance_m",
                "is the arena's criteria.success_distance_m; set it in the arena file",
            ));
        }
        Ok(())
    }

    /// Whether the file itself sets the key at `path` (not a default).
    pub fn is_set(&self, path: &[&str]) -> bool {
        let Some((last, parents)) = path.split_last() else { return false };
        let mut table = &self.table;
        for p in parents {
            match table.get(*p).and_then(toml::Value::as_table) {
                Some(t) => table = t,
                None => return false,
            }
        }
        table.contains_key(*last)
    }

    /// The step budget the file sets for `protocol` (`[objectnav]
    /// max_steps`, `[candidates] max_cycles`, `[explore] max_decisions`),
    /// if it sets one.
    pub fn budget(&self, protocol: ProtocolKind) -> Option<u32> {
        match protocol {
            ProtocolKind::Objectnav => self.is_set(&["objectnav", "max_steps"]).then_some(self.objectnav.max_steps),
            ProtocolKind::Candidates => {
                self.is_set(&["candidates", "max_cycles"]).then_some(self.candidates.max_cycles)
            }
            ProtocolKind::Explore => self.is_set(&["explore", "max_decisions"]).then_some(self.explore.max_decisions),
        }
    }

    /// Loads `path` if given, else the defaults.
    pub fn load_opt(path: Option<&Path>) -> Result<Self, Exit> {
        path.map_or_else(|| Ok(Self::default()), Self::load)
    }

    /// The backend config for `--vlm/--model/--base-url`, falling back to the
    /// file's `[vlm]` section.
    pub fn backend(
        &self,
        vlm: Option<&str>,
        model: Option<&str>,
        base_url: Option<&str>,
    ) -> Result<BackendConfig, Exit> {
        let mut cfg = self.vlm.clone().unwrap_or_default();
        match vlm {
            Some(name) => {
                let p = Provider::ALL
                    .into_iter()
                    .find(|p| p.as_str() == name)
                    .ok_or_else(|| usage(format!("--vlm {name:?}: expected openai, gemini, vertex or anthropic")))?;
                if self.vlm.as_ref().is_none_or(|v| v.provider != p) {
                    cfg = BackendConfig { provider: p, ..cfg };
                    cfg.model = None;
                }
            }
            None if self.vlm.is_none() => {
                return Err(usage(
                    "--planner vlm needs --vlm openai|gemini|vertex|anthropic (or a [vlm] section in --config)",
                ));
            }
            None => {}
        }
        if let Some(m) = model {
            cfg.model = Some(m.to_string());
        }
        if let Some(u) = base_url {
            cfg.base_url = Some(u.to_string());
        }
        Ok(cfg)
    }

    /// The merged grounding section for system prompts, if configured.
    pub fn grounding_text(&self) -> Result<Option<String>, Exit> {
        if self.grounding.files.is_empty() {
            return Ok(None);
        }
        let format = crate::cmd::grounding::parse_format(self.grounding.format.as_deref().unwrap_or("txt"))?;
        let merged =
            nav_memory::grounding::merge_files(&self.grounding.files, format).map_err(|e| usage(e.to_string()))?;
        for w in &merged.warnings {
            tracing::warn!("{w}");
        }
        let text = merged.render_prompt_section();
        Ok((!text.trim().is_empty()).then_some(text))
    }
}
