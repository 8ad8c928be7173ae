//! The configuration file (`--config FILE`, TOML): one section per concern,
//! each the library's own serde struct with its defaults, so a file
//! only lists what it changes. Unknown keys are errors naming the key.
//!
//! ```toml
//! [vlm]
//! provider = "openai"
//! model = "gpt-4o-mini"
//!
//! [scene]              # the scene analyzer's own endpoint; default: [vlm]
//! provider = "gemini"
//! model = "gemini-2.5-flash-lite"
//!
//! [explore.safety.speeds]
//! fast_mps = 0.15
//!
//! [rosbridge]            # nav rosmaster (docs/ROSMASTER.md)
//! url = "ws://192.168.1.42:9090"
//! ```
//!
//! # Checked ranges
//!
//! Every value is checked when the file is read; one outside its range is
//! bad input (exit 2) naming the file, the table and the key, e.g.
//! `nav: config bad.toml: [explore.safety.speeds] fast_mps: must be in (0, 5] (got -0.1)`.
//! Each field's doc comment in the library states its range; the bounds
//! keep grids, loops and allocations finite. The main ones:
//!
//! | table | keys and ranges |
//! | --- | --- |
//! | `[sim]` | `substep_s` [0.0001, 1]; `geodesic_cell_m`, `coverage_cell_m` [0.01, 10]; `robot_radius_m` (0, 5]; `action_time_s` [0, 3600]; `max_linear_mps` (0, 100]; `max_angular_rps` (0, 20]; `lidar.beams` 4..=10000; `camera.width/height` 2..=4096; coverage and geodesic grids over the arena ≤ 2^24 cells; `noise.*_frac` [0, 1] |
//! | `[sim.step]`, `[objectnav.memory_config.step]` | `forward_m` (0, 10], `turn_deg` (0, 180] |
//! | `[objectnav]` | `max_steps` 1..=1000000; `panorama_views` 1..=360 and views × `[sim.camera]` width × height ≤ 2^26 pixels; `max_replans_without_motion` 0..=1000 |
//! | `[objectnav.memory_config]` | `anchor_forward_steps`, `dwell_k`, `dc_capacity`, `stuck_window`, `place_update_period`, `revisit_min_hints` ≥ 1; `localization_radius_m` (0, 1000]; `doorway_min_move_m` [0, 1000] |
//! | `[explore]` | `tick_s` [0.01, 10]; `max_time_s` (0, 1000000]; `max_decisions` 1..=1000000; `path_speed_mps` (0, 5]; `goal_tolerance_m` (0, 10]; `pacing.time_scale` (0, 1000000] |
//! | `[explore.map]` | `size_m` (0, 1000] and ≤ 4096 cells per side; `resolution_m` [0.01, 1]; `inflation_m` [0, 10]; `unknown_cost` [1, 1000000] |
//! | `[explore.safety.*]` | speeds (0, 5] m/s and creep < slow < medium < fast ≤ `max_linear_mps`; clearances stop < reject < full speed; TTC stop < slow < medium < full ≤ 60 s; watchdog continue < stop_wait < local_nav; `geofence.sample_step_s` [0.001, 10]; similarities [0, 1]; `triggers.min_adjacent_open` 1..=12; `triggers.rearm_m` [0, 100]; `schedule.mode` adaptive (default) \| fixed; `schedule.goal_max_interval_s` [`max_interval_s`, 86400] |
//! | `[candidates]` | `max_cycles` 1..=1000000; `resolution_m` [0.01, 10]; `inference_timeout_s` (0, 3600]; `inflation_m` [0, 10]; `explore_until_known` [0, 1]; `candidates.w_*` [0, 1]; `candidates.max_candidates` 1..=100; `stuck.cycles` ≥ 1; `planner.waypoint_spacing` 1..=1000; `world_model` vision (default) \| lidar \| ground_truth; `camera.fov_deg` [1, 179], `camera.range_m` [0.2, 20], `camera.initial_scan_views` 0..=36; `bridge.rotate_speed_dps` (0, 720], `bridge.nudge_m` [0, 1], `bridge.action_timeout_s` (0, 3600]; `waypoint_spacing_m` [0, 100]; `max_stuck_counter` (docs/CANDIDATES.md) |
//!
//! # Presets
//!
//! `--preset NAME` (`nav run`, `nav eval`) applies a set of values shipped
//! with navkit before the file: the preset's TOML (`nav-cli/presets/`)
//! is the first layer, `--config`'s tables are merged over it key by key
//! (a file's `[vlm]` or `[scene]` replaces the preset's whole section: a
//! backend is one unit), and the flags win over both. `llmos` is the
//! original LLMos pipeline's values (docs/CANDIDATES.md, "The LLMos preset").
//!
//! # Who decides what
//!
//! - Step budgets: `--max-steps` > the file's `[objectnav] max_steps`,
//!   `[candidates] max_cycles` or `[explore] max_decisions` (for the protocol
//!   run) > the arena's `criteria.max_steps`. `nav eval` uses the file's key
//!   when set, else the arena's.
//! - `nav run --memory` wins over `[objectnav] memory`, which wins over the
//!   default (on); `nav run --world-model` wins over `[candidates]
//!   world_model`, which wins over vision. `nav eval` chooses memory per
//!   `--configs` entry, so it rejects `[objectnav] memory`.
//! - Rejected because something else decides: `[sim.noise] seed` (`--seed`)
//!   and `[candidates] goal_tolerance_m` (the arena's
//!   `criteria.success_distance_m`).

use crate::exit::{Exit, section_and_key, usage};
use nav_core::config::ConfigError;
use nav_hal::sim::SimConfig;
use nav_planner::navigator::candidates_loop::CandidatesLoopConfig;
use nav_planner::navigator::explore_loop::ExploreLoopConfig;
use nav_planner::navigator::objectnav_loop::ObjectNavLoopConfig;
use nav_planner::protocol::ProtocolKind;
use nav_planner::vlm::{BackendConfig, Provider};
use serde::Deserialize;
use std::path::{Path, PathBuf};

#[cfg(any(feature = "rosmaster", feature = "habitat"))]
/// Most pixels one objectnav panorama may render (2^26: e.g. 12 views of
/// 2048 × 2048, or 64 of 1024 × 1024), so a step's images stay bounded.
pub const MAX_PANORAMA_PIXELS: usize = 1 << 26;

fn hal_config_error(section: &str, e: nav_hal::HalError) -> ConfigError {
    match e {
        nav_hal::HalError::InvalidConfig { field, message } => ConfigError::new(field, message).under(section),
        other => ConfigError::new(section, other.to_string()),
    }
}

/// Grounding knowledge (docs/GROUNDING.md): files to merge into
/// every system prompt and how grounding files are written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GroundingSection {
    /// Files (JSON and/or TXT) to merge;
    /// relative paths are relative to the config file's directory.
    pub files: Vec<PathBuf>,
    /// Merge format: `txt`, `json` or
    /// `both`; default `txt`.
    pub format: Option<String>,
    /// Which files an episode writes:
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

/// A set of config values shipped with navkit (`--preset`), applied before
/// `--config` and the flags (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Preset {
    /// The original LLMos navigation pipeline's values: OpenRouter with
    /// Claude Sonnet 4.5, one retry after 1 s, a 0.15 m robot, a 3 m camera
    /// range, no hard inflation, and a STOP that ends only runs with a goal.
    Llmos,
}

impl Preset {
    /// The preset's TOML, as shipped.
    pub fn toml(self) -> &'static str {
        match self {
            Preset::Llmos => include_str!("../presets/llmos.toml"),
        }
    }

    /// The name `--preset` takes.
    pub fn name(self) -> &'static str {
        match self {
            Preset::Llmos => "llmos",
        }
    }

    /// The preset as a TOML table.
    pub fn table(self) -> Result<toml::Table, Exit> {
        toml::from_str(self.toml()).map_err(|e| crate::exit::internal(format!("preset {}: {e}", self.name())))
    }
}

/// Merges `over` into `base`: tables key by key, any other value (and the
/// whole of a `[vlm]` or `[scene]` section at the top) replaced.
fn merge_tables(base: &mut toml::Table, over: toml::Table, top: bool) {
    for (key, value) in over {
        let whole = top && (key == "vlm" || key == "scene");
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) if !whole => merge_tables(b, o, false),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
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
    /// The scene analyzer's own backend (a separate endpoint, e.g.
    /// a cheaper model or another provider); default: the planner's
    /// `[vlm]`. Same keys as `[vlm]`; used with `--planner vlm`.
    pub scene: Option<BackendConfig>,
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
    /// The file as a TOML table, to tell keys the file sets from defaults
    /// (with a preset: the preset's table with the file's merged over it).
    #[serde(skip)]
    pub table: toml::Table,
    /// `[vlm]` is the preset's, not the file's: `--vlm` naming another
    /// provider starts from that provider's defaults, not the preset's
    /// endpoint.
    #[serde(skip)]
    pub vlm_from_preset: bool,
}

impl NavConfig {
    /// Loads a TOML file and checks every value against its documented
    /// range; errors (exit 2) name the file, the `[section]` and the key.
    pub fn load(path: &Path) -> Result<Self, Exit> {
        let text = nav_core::bounded::open_regular(path)
            .and_then(|f| nav_core::bounded::read_to_string_limited(f, MAX_CONFIG_BYTES))
            .map_err(|e| usage(format!("config {}: {e}", path.display())))?;
        let mut config: Self = toml::from_str(&text)
            .map_err(|e| usage(format!("config {}: {}", path.display(), redacted_toml_error(&text, &e))))?;
        config.table = toml::from_str(&text)
            .map_err(|e| usage(format!("config {}: {}", path.display(), redacted_toml_error(&text, &e))))?;
        config.validate().map_err(|e| usage(format!("config {}: {}", path.display(), section_and_key(&e))))?;
        // [grounding] files are relative to the config file's directory
        if let Some(dir) = path.parent() {
            for f in &mut config.grounding.files {
                *f = dir.join(&*f);
            }
        }
        Ok(config)
    }

    /// Checks every section (keys are `section.field…` paths).
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.sim.validate().map_err(|e| e.under("sim"))?;
        self.objectnav.validate().map_err(|e| e.under("objectnav"))?;
        self.explore.validate().map_err(|e| e.under("explore"))?;
        self.candidates.validate().map_err(|e| e.under("candidates"))?;
        self.check_panorama()?;
        for (section, backend) in [("vlm", &self.vlm), ("scene", &self.scene)] {
            if let Some(b) = backend {
                b.validate().map_err(|e| backend_config_error(section, e))?;
            }
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

    /// The objectnav panorama (views × camera pixels) rendered every step
    /// stays within [`MAX_PANORAMA_PIXELS`].
    fn check_panorama(&self) -> Result<(), ConfigError> {
        let c = &self.sim.camera;
        let pixels = self.objectnav.panorama_views.saturating_mul(c.width).saturating_mul(c.height);
        if pixels > MAX_PANORAMA_PIXELS {
            return Err(ConfigError::new(
                "objectnav.panorama_views",
                format!(
                    "{} views of {}×{} pixels ([sim.camera]) are {pixels} pixels per step, more than {MAX_PANORAMA_PIXELS}",
                    self.objectnav.panorama_views, c.width, c.height
                ),
            ));
        }
        Ok(())
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

    /// The preset (if any) with `path` (if any) merged over it (see the
    /// module docs). The file alone is checked first, so its errors name
    /// it; then the merged values are checked.
    pub fn load_layers(preset: Option<Preset>, path: Option<&Path>) -> Result<Self, Exit> {
        let Some(preset) = preset else { return Self::load_opt(path) };
        let mut table = preset.table()?;
        let file = path.map(Self::load).transpose()?;
        if let Some(f) = &file {
            merge_tables(&mut table, f.table.clone(), true);
        }
        let what =
            format!("preset {}{}", preset.name(), path.map_or(String::new(), |p| format!(" with {}", p.display())));
        let mut config: Self =
            toml::Value::Table(table.clone()).try_into().map_err(|e| usage(format!("{what}: {e}")))?;
        config.table = table;
        config.vlm_from_preset = file.as_ref().is_none_or(|f| f.vlm.is_none());
        if let Some(f) = file {
            // the file's grounding paths are already relative to its directory
            config.grounding = f.grounding;
        }
        config.validate().map_err(|e| usage(format!("{what}: {}", section_and_key(&e))))?;
        Ok(config)
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
                    cfg =
                        if self.vlm_from_preset { BackendConfig::new(p) } else { BackendConfig { provider: p, ..cfg } };
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

    /// Refuses an output that names one of the files this configuration
    /// reads (the config file itself, its `[grounding] files`): an eval's
    /// `--jsonl` over the config would replace it. Checked before anything
    /// is written.
    pub fn check_outputs(&self, path: Option<&Path>, outputs: &[(&str, Option<&Path>)]) -> Result<(), Exit> {
        let inputs: Vec<&Path> = path.into_iter().chain(self.grounding.files.iter().map(PathBuf::as_path)).collect();
        for (flag, output) in outputs {
            if let Some(o) = output {
                crate::exit::check_output(flag, o, &inputs)?;
            }
        }
        Ok(())
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

/// A backend section's validation error as `[section] key: problem`
/// (the backend names its keys `vlm.…`; `[scene]` has the same keys).
fn backend_config_error(section: &str, e: nav_planner::vlm::VlmError) -> ConfigError {
    let text = match e {
        nav_planner::vlm::VlmError::Config { message } => message,
        other => other.to_string(),
    };
    match text.split_once(' ') {
        Some((key, rest)) if key.starts_with("vlm.") => {
            ConfigError::new(format!("{section}.{}", &key["vlm.".len()..]), rest)
        }
        _ => ConfigError::new(section, text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_set_nothing() {
        let c = NavConfig::default();
        c.validate().unwrap();
        assert_eq!(c.budget(ProtocolKind::Objectnav), None);
    }

    #[test]
    fn budget_only_when_the_file_sets_it() {
        let mut c: NavConfig = toml::from_str("[candidates]\nmax_cycles = 5\n").unwrap();
        c.table = toml::from_str("[candidates]\nmax_cycles = 5\n").unwrap();
        assert_eq!(c.budget(ProtocolKind::Candidates), Some(5));
        assert_eq!(c.budget(ProtocolKind::Explore), None);
        assert!(c.is_set(&["candidates", "max_cycles"]) && !c.is_set(&["candidates", "max_cycles", "x"]));
    }

    #[test]
    fn llmos_preset_sets_each_value() {
        use nav_planner::navigator::candidates_loop::StopRule;
        use nav_planner::vlm::RetryBackoff;
        let c = NavConfig::load_layers(Some(Preset::Llmos), None).unwrap();
        let vlm = c.vlm.clone().unwrap();
        assert_eq!(vlm.provider, Provider::OpenAi);
        assert_eq!(vlm.base_url.as_deref(), Some("https://openrouter.ai/api/v1"));
        assert_eq!(vlm.api_key_env.as_deref(), Some("OPENROUTER_API_KEY"));
        assert_eq!(vlm.model.as_deref(), Some("anthropic/claude-sonnet-4-5-20250929"));
        assert_eq!(vlm.max_tokens, Some(512));
        assert_eq!(vlm.attempt_timeout_s, Some(15.0));
        assert_eq!((vlm.max_attempts, vlm.retry_base_delay_s, vlm.retry_backoff), (2, 1.0, RetryBackoff::Linear));
        assert!((c.sim.robot_radius_m - 0.15).abs() < 1e-12);
        assert!((c.candidates.inference_timeout_s - 5.0).abs() < 1e-12);
        assert!(c.candidates.inflation_m.abs() < 1e-12);
        assert_eq!(c.candidates.stop_ends_run, StopRule::NonExploration);
        assert!((c.candidates.camera.range_m - 3.0).abs() < 1e-12);
        // nothing else moves
        let d = NavConfig::default();
        assert_eq!(c.explore, d.explore);
        assert_eq!(c.objectnav, d.objectnav);
        let cands = CandidatesLoopConfig {
            inflation_m: d.candidates.inflation_m,
            stop_ends_run: d.candidates.stop_ends_run,
            camera: d.candidates.camera.clone(),
            ..c.candidates.clone()
        };
        assert_eq!(cands, d.candidates);
        assert_eq!(SimConfig { robot_radius_m: d.sim.robot_radius_m, ..c.sim.clone() }, d.sim);
        assert!(c.vlm_from_preset);
        // --vlm naming another provider does not keep the preset's endpoint
        let b = c.backend(Some("gemini"), None, None).unwrap();
        assert_eq!((b.provider, b.base_url, b.max_attempts), (Provider::Gemini, None, 3));
    }

    #[test]
    fn a_file_overrides_the_preset_key_by_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mine.toml");
        std::fs::write(&path, "[candidates.camera]\nrange_m = 2.5\n\n[vlm]\nprovider = \"gemini\"\n").unwrap();
        let c = NavConfig::load_layers(Some(Preset::Llmos), Some(&path)).unwrap();
        assert!((c.candidates.camera.range_m - 2.5).abs() < 1e-12);
        assert!(c.candidates.inflation_m.abs() < 1e-12, "the preset's other keys stay");
        let vlm = c.vlm.clone().unwrap();
        assert_eq!(
            (vlm.provider, vlm.base_url, vlm.max_attempts),
            (Provider::Gemini, None, 3),
            "[vlm] is replaced whole"
        );
        assert!(!c.vlm_from_preset);
        // without a preset, the file alone
        let plain = NavConfig::load_layers(None, Some(&path)).unwrap();
        assert!((plain.candidates.inflation_m - 0.33).abs() < 1e-12);
    }

    #[test]
    fn section_and_key_splits_at_the_last_dot() {
        let e = ConfigError::new("explore.safety.speeds.fast_mps", "must be > 0 (got -0.1)");
        assert_eq!(section_and_key(&e), "[explore.safety.speeds] fast_mps: must be > 0 (got -0.1)");
        assert_eq!(section_and_key(&ConfigError::new("habitat", "bad")), "[habitat] bad");
    }
}
