//! `nav habitat` with worker processes (docs/BRIDGE.md, "Workers"): the
//! bundled colour detector as the perception stage and the rule policy
//! driving, through the real binary against the `openroom` backend; and
//! exit 2 for flags that do not fit together or a worker that cannot start.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Output};

fn nav(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nav")).args(args).env_remove("PYTHONPATH").output().expect("nav runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const OPENROOM: &str = "python3 -m navkit_bridge --backend openroom";
const DETECTOR: &str = "python3 -m navkit_bridge.colour_detector";
const POLICY: &str = "python3 -m navkit_bridge.rule_policy";

#[test]
fn the_detector_and_the_policy_workers_run_the_episodes() {
    let o = nav(&[
        "habitat",
        "--bridge",
        OPENROOM,
        "--episodes",
        "3",
        "--json",
        "--perception",
        "external",
        "--detector",
        DETECTOR,
        "--policy",
        "external",
        "--policy-cmd",
        POLICY,
    ]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(String::from_utf8_lossy(&o.stdout).trim()).unwrap();
    assert_eq!(v["policy"], "external");
    assert!(v["aborted"].is_null());
    assert_eq!(v["episodes"].as_array().unwrap().len(), 3);
}

#[test]
fn worker_flags_that_do_not_fit_are_exit_2() {
    for (args, message) in [
        (vec!["--perception", "external"], "--perception external needs --detector"),
        (vec!["--detector", DETECTOR], "--detector needs --perception external"),
        (vec!["--policy", "external"], "--policy external needs --policy-cmd"),
        (vec!["--policy-cmd", POLICY], "--policy-cmd needs --policy external"),
        (vec!["--perception", "external", "--detector", DETECTOR, "--worker-timeout", "0"], "--worker-timeout"),
    ] {
        let mut all = vec!["habitat", "--bridge", OPENROOM, "--episodes", "1"];
        all.extend(args.iter().copied());
        let o = nav(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(message), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn a_worker_that_cannot_start_or_lacks_the_op_is_exit_2() {
    let o = nav(&[
        "habitat",
        "--bridge",
        OPENROOM,
        "--episodes",
        "1",
        "--perception",
        "external",
        "--detector",
        "/nonexistent/detector",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("the detector could not start"), "{}", stderr(&o));
    // the colour detector serves detect, not act
    let o =
        nav(&["habitat", "--bridge", OPENROOM, "--episodes", "1", "--policy", "external", "--policy-cmd", DETECTOR]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("does not serve the op \"act\""), "{}", stderr(&o));
}
