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

/// Grounding files to merge into system prompts.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GroundingSection {
    /// Files (JSON and/or TXT) to merge.
    pub files: Vec<PathBuf>,
    /// `txt`, `json` or `both`.
    pub format: Option<String>,
}

/// The largest config file `--config` reads.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// A TOML error without the quoted source line (which may hold an API key:
/// a typo'd `api_kee = "sk-…"`, an unterminated string): the line and
/// column, and the message with every credential-named value and every
/// key-shaped token redacted.
fn redacted_toml_error(text: &str, e: &toml::de::Error) -> String {
    let secrets = nav_planner::vlm::credential_values(text);
    let refs: Vec<&str> = secrets.iter().map(String::as_str).collect();
    let message = nav_planner::vlm::redact(e.message().trim(), &refs);
    match e.span() {
        Some(span) => {
            let before = text.get(..span.start).unwrap_or(text);
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!("line {line}, column {column}: {message}")
        }
        None => message,
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
        let text = std::fs::File::open(path)
            .and_then(|f| nav_core::bounded::read_to_string_limited(f, MAX_CONFIG_BYTES))
            .map_err(|e| usage(format!("config {}: {e}", path.display())))?;
        toml::from_str(&text)
            .map_err(|e| usage(format!("config {}: {}", path.display(), redacted_toml_error(&text, &e))))
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
        let format = self
            .grounding
            .format
            .as_deref()
            .unwrap_or("txt")
            .parse::<nav_memory::grounding::MergeFormat>()
            .map_err(|e| usage(format!("[grounding] format: {e}")))?;
        let merged =
            nav_memory::grounding::merge_files(&self.grounding.files, format).map_err(|e| usage(e.to_string()))?;
        for w in &merged.warnings {
            tracing::warn!("{w}");
        }
        let text = merged.render_prompt_section();
        Ok((!text.trim().is_empty()).then_some(text))
    }
}
