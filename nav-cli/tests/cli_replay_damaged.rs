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

/// A hand-made MCAP file (no CRCs, which the format allows) of `records`.
fn mcap_file(records: &[Vec<u8>]) -> Vec<u8> {
    const MAGIC: &[u8] = b"\x89MCAP0\r\n";
    let rec = |op: u8, body: &[u8]| [&[op][..], &(body.len() as u64).to_le_bytes(), body].concat();
    let string = |s: &str| [&(s.len() as u32).to_le_bytes()[..], s.as_bytes()].concat();
    let mut v = MAGIC.to_vec();
    v.extend(rec(0x01, &[string(""), string("hand")].concat()));
    for r in records {
        v.extend_from_slice(r);
    }
    v.extend(rec(0x0f, &0u32.to_le_bytes()));
    v.extend(rec(0x02, &[0u8; 20]));
    v.extend_from_slice(MAGIC);
    v
}

/// A zstd frame of `prefix`, `n` spaces (RLE blocks of a few bytes each)
/// and `suffix`: a few KiB that decompress to `n` bytes.
fn zstd_spaces(prefix: &[u8], mut n: usize, suffix: &[u8]) -> Vec<u8> {
    let block = |last: u32, kind: u32, size: usize| (last | kind << 1 | (size as u32) << 3).to_le_bytes()[..3].to_vec();
    let mut v = 0xFD2F_B528u32.to_le_bytes().to_vec();
    v.extend([0x00, 0x38]); // no content size, a 128 KiB window
    v.extend(block(0, 0, prefix.len()));
    v.extend_from_slice(prefix);
    while n > 0 {
        let k = n.min(128 << 10);
        v.extend(block(0, 1, k));
        v.push(b' ');
        n -= k;
    }
    v.extend(block(1, 0, suffix.len()));
    v.extend_from_slice(suffix);
    v
}

/// A 170 KB file of twenty zstd chunks, each one step record padded to
/// 250 MiB: every chunk is under the per-chunk cap, but the messages kept
/// from all of them reached 5 GB and the allocator aborted.
#[test]
fn step_messages_of_all_chunks_together_are_capped() {
    let rec = |op: u8, body: &[u8]| [&[op][..], &(body.len() as u64).to_le_bytes(), body].concat();
    let topic = "/navkit/step";
    let channel = rec(
        0x04,
        &[
            &1u16.to_le_bytes()[..],
            &0u16.to_le_bytes(),
            &(topic.len() as u32).to_le_bytes(),
            topic.as_bytes(),
            &[0u8; 8],
        ]
        .concat(),
    );
    let pad = 250 << 20;
    let json_head = b"{\"step\":0";
    let message_len = 2 + 4 + 16 + json_head.len() + pad + 1;
    let head =
        [&[0x05u8][..], &(message_len as u64).to_le_bytes(), &1u16.to_le_bytes(), &[0u8; 20], json_head].concat();
    let frame = zstd_spaces(&head, pad, b"}");
    let size = (9 + message_len) as u64;
    let body = [&[0u8; 16][..], &size.to_le_bytes(), &0u32.to_le_bytes(), &4u32.to_le_bytes(), b"zstd"].concat();
    let chunk = rec(0x06, &[body, (frame.len() as u64).to_le_bytes().to_vec(), frame].concat());
    let mut records = vec![channel];
    records.extend(std::iter::repeat_n(chunk, 20));
    let o = replay("spaces.mcap", &mcap_file(&records));
    assert_refused("spaces.mcap", &o);
    assert!(o.stderr.contains("step records hold more than 256 MiB"), "{}", o.stderr);
}
