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
use nav_hal::sim::SimConfig;
use nav_planner::navigator::candidates_loop::CandidatesLoopConfig;
use nav_planner::navigator::explore_loop::ExploreLoopConfig;
use nav_planner::navigator::objectnav_loop::ObjectNavLoopConfig;
use nav_planner::vlm::{BackendConfig, Provider};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Grounding knowledge (seed 004, docs/GROUNDING.md): files to merge into
/// every system prompt and how grounding files are written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GroundingSection {
    /// Files (JSON and/or TXT) to merge (the seed's `GROUNDING_FILE_PATH`);
    /// relative paths are relative to the config file's directory.
    pub files: Vec<PathBuf>,
    /// Merge format (the seed's `GROUNDING_MERGE_FORMAT`): `txt`, `json` or
    /// `both`; default `txt`.
    pub format: Option<String>,
    /// Which files an episode writes (the seed's `GROUNDING_SAVE_FORMAT`):
    /// `json`, `txt` or `both`; default `both`.
    pub save_format: Option<String>,
    /// The verbalized-entropy variant of the system prompt.
    pub verbalized_entropy: bool,
}

impl GroundingSection {
    /// The merge format (exit 2 naming the key on a bad value).
    pub fn merge_format(&self) -> Result<nav_memory::grounding::MergeFormat, Exit> {
        self.format.as_deref().unwrap_or("txt").parse().map_err(|e| usage(format!("[grounding] format: {e}")))
    }

    /// The save format (exit 2 naming the key on a bad value).
    pub fn save_format(&self) -> Result<nav_memory::grounding::SaveFormat, Exit> {
        self.save_format
            .as_deref()
            .unwrap_or("both")
            .parse()
            .map_err(|e| usage(format!("[grounding] save_format: {e}")))
    }
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
}

impl NavConfig {
    /// Loads a TOML file; errors name the file and the offending key.
    pub fn load(path: &Path) -> Result<Self, Exit> {
        let text = std::fs::read_to_string(path).map_err(|e| usage(format!("config {}: {e}", path.display())))?;
        let mut config: Self = toml::from_str(&text).map_err(|e| usage(format!("config {}: {e}", path.display())))?;
        // [grounding] files are relative to the config file's directory
        if let Some(dir) = path.parent() {
            for f in &mut config.grounding.files {
                *f = dir.join(&*f);
            }
        }
        Ok(config)
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
        let format = self.grounding.merge_format()?;
        let merged =
            nav_memory::grounding::merge_files(&self.grounding.files, format).map_err(|e| usage(e.to_string()))?;
        for w in &merged.warnings {
            tracing::warn!("{w}");
        }
        let text = merged.render_prompt_section();
        Ok((!text.trim().is_empty()).then_some(text))
    }
}
