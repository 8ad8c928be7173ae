//! `nav --config FILE` checks every value where it reads it: a value out of
//! its documented range is bad input (exit 2) whose message names the file,
//! the `[section]` and the key; and the step budgets the file sets are
//! honoured by `nav run` (the `--max-steps` flag still wins).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Output};

fn nav_with_config(toml: &str, args: &[&str]) -> Output {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, toml).expect("write config");
    let path = path.to_str().expect("utf-8 path").to_string();
    Command::new(env!("CARGO_BIN_EXE_nav"))
        .args(["run", "--json", "--config", path.as_str()])
        .args(args)
        .output()
        .expect("nav runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Each bad file with the `[section]` and key its message must name.
const BAD: &[(&str, &str, &str)] = &[
    ("[explore]\ntick_s = -1\n", "[explore]", "tick_s"),
    ("[scene]\nprovider = \"openai\"\ntimeout_s = -1\n", "[scene]", "timeout_s"),
    ("[vlm]\nprovider = \"openai\"\ntimeout_s = -1\n", "[vlm]", "timeout_s"),
    ("[explore]\ntick_s = 0.0\n", "[explore]", "tick_s"),
    ("[objectnav]\npanorama_views = 0\n", "[objectnav]", "panorama_views"),
    ("[objectnav.memory_config]\ndwell_k = 0\n", "[objectnav.memory_config]", "dwell_k"),
    ("[objectnav.memory_config]\nlocalization_radius_m = -1.5\n", "[objectnav.memory_config]", "localization_radius_m"),
    ("[explore.safety.speeds]\nfast_mps = -0.1\n", "[explore.safety.speeds]", "fast_mps"),
    ("[explore.safety.watchdog]\ndecay_tau_s = 0.0\n", "[explore.safety.watchdog]", "decay_tau_s"),
    ("[explore.safety.schedule]\nskip_similarity = 1.5\n", "[explore.safety.schedule]", "skip_similarity"),
    ("[explore.safety.geofence]\nsample_step_s = 1e-12\n", "[explore.safety.geofence]", "sample_step_s"),
    ("[explore.map]\nresolution_m = 1e-6\n", "[explore.map]", "resolution_m"),
    ("[sim]\nsubstep_s = 1e-12\n", "[sim]", "substep_s"),
    ("[sim]\ngeodesic_cell_m = 1e-5\n", "[sim]", "geodesic_cell_m"),
    ("[candidates]\nresolution_m = 0.0\n", "[candidates]", "resolution_m"),
    ("[candidates]\nexplore_until_known = 2.0\n", "[candidates]", "explore_until_known"),
    ("[candidates.candidates]\nmax_candidates = 0\n", "[candidates.candidates]", "max_candidates"),
    ("[candidates]\ngoal_tolerance_m = 0.5\n", "[candidates]", "goal_tolerance_m"),
    ("[sim.noise]\nseed = 3\n", "[sim.noise]", "seed"),
];

#[test]
fn bad_values_exit_2_naming_section_and_key() {
    for (toml, section, key) in BAD {
        let o = nav_with_config(toml, &[]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{toml}: {err}");
        assert!(err.contains("bad.toml"), "{toml}: the file is not named: {err}");
        assert!(err.contains(&format!("{section} {key}:")), "{toml}: expected `{section} {key}:` in {err}");
    }
}

#[test]
fn message_states_the_range_and_the_value() {
    let o = nav_with_config("[explore.safety.speeds]\nfast_mps = -0.1\n", &[]);
    assert!(stderr(&o).contains("[explore.safety.speeds] fast_mps: must be in (0, 5] (got -0.1)"), "{}", stderr(&o));
}

fn steps(o: &Output) -> u64 {
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON summary");
    v["steps"].as_u64().expect("steps")
}

#[test]
fn objectnav_max_steps_is_honoured_and_the_flag_wins() {
    let cfg = "[objectnav]\nmax_steps = 7\n";
    assert!(steps(&nav_with_config(cfg, &[])) <= 7);
    assert!(steps(&nav_with_config(cfg, &["--max-steps", "3"])) <= 3);
}

#[test]
fn candidates_max_cycles_is_honoured_and_the_flag_wins() {
    let cfg = "[candidates]\nmax_cycles = 5\n";
    assert!(steps(&nav_with_config(cfg, &["--protocol", "candidates", "--arena", "exploration"])) <= 5);
    assert!(
        steps(&nav_with_config(cfg, &["--protocol", "candidates", "--arena", "exploration", "--max-steps", "2"])) <= 2
    );
}

/// `--preset llmos` runs a candidates episode with the preset's values, and
/// `--config` still overrides them.
#[test]
fn the_llmos_preset_runs_an_episode_and_a_file_overrides_it() {
    let run = |extra: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_nav"))
            .args(["run", "--json", "--preset", "llmos", "--protocol", "candidates", "--arena", "exploration"])
            .args(["--max-steps", "75"])
            .args(extra)
            .output()
            .expect("nav runs");
        // exit 1 is an episode that failed its criteria (the preset's runs collide), not an error
        assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON summary");
        v["end"].as_str().expect("an end").to_string()
    };
    // the offline planner STOPs once no frontier is left (about 70 cycles with navkit's defaults);
    // under the preset a STOP does not end an exploration-mode run, so it runs to the budget
    assert_eq!(run(&[]), "cycle_limit");
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("stop.toml");
    std::fs::write(&path, "[candidates]\nstop_ends_run = \"chosen\"\n").expect("write config");
    assert_eq!(run(&["--config", path.to_str().expect("utf-8 path")]), "stopped");
}
