//! `nav replay` of damaged recordings: random bit flips and truncations of
//! a small real recording (written here by `nav run --record`) each end in
//! exit 2 with a message naming the file, quickly, under a 4 GiB
//! address-space limit — never a panic, an abort or a hang.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/limited.rs"]
mod limited;

use proptest::prelude::*;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

/// A damaged file is refused long before this (a debug build on a loaded machine).
const WALL: Duration = Duration::from_secs(20);

/// A small real recording, made once for the whole test binary.
fn recording() -> &'static (tempfile::TempDir, Vec<u8>) {
    static REC: OnceLock<(tempfile::TempDir, Vec<u8>)> = OnceLock::new();
    REC.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("good.mcap");
        let o = limited::nav_limited(
            &["run", "--max-steps", "12", "--record", path.to_str().unwrap()],
            None,
            Duration::from_secs(300),
        );
        assert!(matches!(o.code, Some(0 | 1)), "{o:?}");
        let bytes = std::fs::read(&path).unwrap();
        (dir, bytes)
    })
}

fn replay(name: &str, bytes: &[u8]) -> limited::Limited {
    let (dir, _) = recording();
    let path: PathBuf = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    let plot = dir.path().join(format!("{name}.svg"));
    limited::nav_limited(&["replay", path.to_str().unwrap(), "--plot", plot.to_str().unwrap()], None, WALL)
}

fn assert_refused(name: &str, o: &limited::Limited) {
    assert_eq!(o.code, Some(2), "{name}: {o:?}");
    assert!(o.stderr.contains(name), "{name}: names the file: {}", o.stderr);
    assert!(!o.stderr.contains("panicked"), "{name}: {}", o.stderr);
}

#[test]
fn the_undamaged_recording_replays() {
    let (_, bytes) = recording();
    let o = replay("intact.mcap", bytes);
    assert_eq!(o.code, Some(0), "{o:?}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    /// One to three flipped bits anywhere in the file.
    #[test]
    fn any_bit_flips_are_exit_2(bits in proptest::collection::vec(any::<prop::sample::Index>(), 1..4)) {
        let (_, good) = recording();
        let mut bytes = good.clone();
        for b in &bits {
            let i = b.index(bytes.len() * 8);
            bytes[i / 8] ^= 1 << (i % 8);
        }
        prop_assume!(&bytes != good);
        assert_refused("flipped.mcap", &replay("flipped.mcap", &bytes));
    }

    /// The file cut anywhere.
    #[test]
    fn any_truncation_is_exit_2(cut in any::<prop::sample::Index>()) {
        let (_, good) = recording();
        let len = cut.index(good.len());
        assert_refused("cut.mcap", &replay("cut.mcap", &good[..len]));
    }
}
