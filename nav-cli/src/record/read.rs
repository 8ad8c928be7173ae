//! Reading a recording back: the step records of its `/navkit/step`
//! channel, for `nav replay`.

use super::STEP_TOPIC;
use nav_planner::navigator::StepRecord;
use std::io::Read;
use std::path::Path;

/// The first bytes of every MCAP file.
pub const MCAP_MAGIC: &[u8; 8] = b"\x89MCAP0\r\n";

/// The largest recording `nav replay` reads (it is read whole).
pub const MAX_RECORDING_BYTES: u64 = 2 << 30;

/// Whether `path` is to be read as MCAP: its first bytes are the MCAP
/// magic, or its name ends in `.mcap` (a damaged recording: the reader then
/// names the problem).
pub fn is_mcap(path: &Path) -> bool {
    let mut head = [0u8; 8];
    let magic = std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head)).is_ok() && &head == MCAP_MAGIC;
    magic || path.extension().is_some_and(|e| e.eq_ignore_ascii_case("mcap"))
}

/// The step records of the recording at `path`, in the order written. An
/// unreadable, truncated or corrupt file, a file over
/// [`MAX_RECORDING_BYTES`] or a bad step record is an error naming the file.
pub fn read_steps(path: &Path) -> Result<Vec<StepRecord>, String> {
    let name = path.display();
    let file = std::fs::File::open(path).map_err(|e| format!("{name}: {e}"))?;
    let mut bytes = Vec::new();
    file.take(MAX_RECORDING_BYTES + 1).read_to_end(&mut bytes).map_err(|e| format!("{name}: {e}"))?;
    if bytes.len() as u64 > MAX_RECORDING_BYTES {
        return Err(format!(
            "{name}: recording is larger than the {} limit of nav replay",
            nav_core::bounded::human_bytes(MAX_RECORDING_BYTES)
        ));
    }
    if !bytes.starts_with(MCAP_MAGIC) {
        return Err(format!("{name}: not an MCAP file (it does not start with the MCAP magic bytes)"));
    }
    let stream = mcap::MessageStream::new(&bytes).map_err(|e| format!("{name}: not a valid MCAP recording: {e}"))?;
    let mut out = Vec::new();
    for m in stream {
        let m = m.map_err(|e| format!("{name}: corrupt or truncated MCAP recording: {e}"))?;
        if m.channel.topic != STEP_TOPIC {
            continue;
        }
        let r: StepRecord = serde_json::from_slice(&m.data)
            .map_err(|e| format!("{name}: {STEP_TOPIC} message {} is not a step record: {e}", m.sequence))?;
        out.push(r);
    }
    Ok(out)
}
