//! Docs a reader can follow: `nav --help` of every subcommand, README.md,
//! the crate READMEs and docs/*.md never point to documents the reader does
//! not have (the project's internal spec, its design seeds, issue numbers).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The lines of `text` that refer to something outside the repository:
/// "SPEC" (as a word) or "SPEC §", "seed 000"…"seed 004" (also "seed-002",
/// "seeds 001"), "issue 7", "issue-2", "issue #7".
fn outside_references(text: &str) -> Vec<String> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| refers_outside(line))
        .map(|(i, line)| format!("{}: {}", i + 1, line.trim()))
        .collect()
}

fn refers_outside(line: &str) -> bool {
    let lower = line.to_lowercase();
    let followed_by_digit = |prefix: &str, digits: &str| {
        lower.match_indices(prefix).any(|(i, m)| {
            let starts_word = lower[..i].chars().next_back().is_none_or(|c| !c.is_alphanumeric());
            starts_word && lower[i + m.len()..].chars().next().is_some_and(|c| digits.contains(c))
        })
    };
    let spec_word = line.match_indices("SPEC").any(|(i, m)| {
        let before = line[..i].chars().next_back().is_none_or(|c| !c.is_alphanumeric() && c != '_');
        let after = line[i + m.len()..].chars().next().is_none_or(|c| !c.is_alphanumeric() && c != '_');
        before && after
    });
    spec_word
        || ["seed 00", "seed-00", "seeds 00"].iter().any(|p| followed_by_digit(p, "01234"))
        || ["issue ", "issue-", "issue #"].iter().any(|p| followed_by_digit(p, "0123456789"))
}

#[test]
fn the_matcher_finds_what_it_should_and_nothing_else() {
    for bad in [
        "see SPEC §5",
        "(SPEC)",
        "as seed 002 says",
        "the seed-004 merge",
        "seeds 001, 003",
        "Issue 14",
        "the issue-2 goal",
        "fixed in issue #7",
    ] {
        assert!(refers_outside(bad), "{bad}");
    }
    for fine in
        ["--seed 0", "seeds 0–4", "proc_<seed>", "an issue with the link", "SPECIAL", "INSPEC", "seed 5", "tissue 3"]
    {
        assert!(!refers_outside(fine), "{fine}");
    }
}

fn help(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_nav")).args(args).arg("--help").output().expect("nav runs");
    assert_eq!(o.status.code(), Some(0), "{args:?} --help: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The subcommands a help text lists under "Commands:" (without `help`).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| l.trim() != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("      "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

#[test]
fn no_help_text_points_outside_the_repository() {
    let mut pending: Vec<Vec<String>> = vec![Vec::new()];
    let mut seen = Vec::new();
    let mut problems = Vec::new();
    while let Some(path) = pending.pop() {
        let args: Vec<&str> = path.iter().map(String::as_str).collect();
        let text = help(&args);
        for line in outside_references(&text) {
            problems.push(format!("nav {} --help, line {line}", args.join(" ")));
        }
        for sub in subcommands(&text) {
            let mut next = path.clone();
            next.push(sub);
            pending.push(next);
        }
        seen.push(args.join(" "));
    }
    // the walk reached every subcommand, nested ones included
    for expected in ["run", "eval", "eval merge", "parse", "prompt", "replay", "grounding merge", "grounding generate"]
    {
        assert!(seen.iter().any(|s| s == expected), "nav {expected} --help was not checked: {seen:?}");
    }
    assert!(problems.is_empty(), "help texts refer to documents the reader does not have:\n{}", problems.join("\n"));
}

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root").to_path_buf()
}

/// README.md, docs/*.md, and every crate's and the examples' README.md.
fn documents() -> Vec<PathBuf> {
    let root = repository();
    let mut files = vec![root.join("README.md")];
    for dir in [root.join("docs"), root.clone(), root.join("examples")] {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if dir == root {
                let readme = path.join("README.md");
                if path.is_dir() && readme.is_file() {
                    files.push(readme);
                }
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            } else if path.join("README.md").is_file() {
                files.push(path.join("README.md"));
            }
        }
    }
    files.sort();
    files.dedup();
    files
}

#[test]
fn no_document_points_outside_the_repository() {
    let files = documents();
    assert!(files.iter().any(|f| f.ends_with("docs/SIMULATOR.md")), "{files:?}");
    assert!(files.iter().any(|f| f.ends_with("nav-cli/README.md")), "{files:?}");
    let mut problems = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for line in outside_references(&text) {
            problems.push(format!("{}:{line}", file.strip_prefix(repository()).unwrap_or(file).display()));
        }
    }
    assert!(problems.is_empty(), "documents refer to what the reader does not have:\n{}", problems.join("\n"));
}

/// Whether a doc-comment line refers to something outside the repository:
/// what `grep -E "SPEC|seed 00[0-4]|seed §|seeds? [0-9]|issue [0-9]+"`
/// finds, plus the spellings [`refers_outside`] also knows ("Seed 000",
/// "seed-004", "issue #7").
fn doc_line_refers_outside(line: &str) -> bool {
    let followed_by_digit = |prefix: &str| {
        line.match_indices(prefix).any(|(i, m)| line[i + m.len()..].starts_with(|c: char| c.is_ascii_digit()))
    };
    line.contains("SPEC")
        || line.contains("seed §")
        || followed_by_digit("seed ")
        || followed_by_digit("seeds ")
        || followed_by_digit("issue ")
        || refers_outside(line)
}

#[test]
fn the_doc_comment_matcher_finds_what_it_should_and_nothing_else() {
    for bad in [
        "/// the run summary (SPEC §6)",
        "//! the scene analyzer's own endpoint (seed §3)",
        "/// seed 002's 13-step cycle",
        "/// Seed 000 §10.5 says",
        "/// the seed-004 layout",
        "/// seeds 001/003",
        "/// compact (issue 16)",
    ] {
        assert!(doc_line_refers_outside(bad), "{bad}");
    }
    for fine in ["/// `proc_<seed>` names a generated house", "/// the episode's seed", "/// an issue with the link"] {
        assert!(!doc_line_refers_outside(fine), "{fine}");
    }
}

/// Every `.rs` file under `dir`, recursively (build output and hidden
/// directories skipped).
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The sources whose doc comments are published: every crate's `src/` and
/// the examples.
fn published_sources() -> Vec<PathBuf> {
    let root = repository();
    let mut files = Vec::new();
    rust_files(&root.join("examples"), &mut files);
    for entry in std::fs::read_dir(&root).unwrap().flatten() {
        if entry.file_name().to_string_lossy().starts_with("nav-") {
            rust_files(&entry.path().join("src"), &mut files);
        }
    }
    files.sort();
    files
}

#[test]
fn no_doc_comment_points_outside_the_repository() {
    let root = repository();
    let files = published_sources();
    for expected in ["nav-core/src/lib.rs", "nav-planner/src/protocol/prompts.rs", "nav-cli/src/main.rs"] {
        assert!(files.iter().any(|f| f.ends_with(expected)), "{expected} was not checked");
    }
    assert!(files.iter().any(|f| f.starts_with(root.join("examples"))), "no example was checked");
    let mut problems = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&root).unwrap_or(file).to_string_lossy().replace('\\', "/");
        let text = std::fs::read_to_string(file).unwrap();
        for (i, line) in text.lines().enumerate() {
            let trimmed = line.trim_start();
            if (trimmed.starts_with("///") || trimmed.starts_with("//!")) && doc_line_refers_outside(trimmed) {
                problems.push(format!("{relative}:{}: {}", i + 1, trimmed));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "doc comments refer to what a reader of the crate docs does not have (say what is meant, or point \
         inside the repository):\n{}",
        problems.join("\n")
    );
}
