//! Reading a recording back: the messages of chosen channels
//! ([`read_messages`]), the step records of `/navkit/step`
//! ([`read_steps`], what `nav replay` draws) and the model calls of
//! `/navkit/planner` ([`read_planner_calls`]). Both JSON-encoded channels
//! read the same in every recording navkit has written.
//!
//! The file is parsed here, record by record, rather than with the `mcap`
//! crate's `MessageStream`: that reader (0.26) trusts declared lengths and
//! sizes — a record claiming 2^64 − 1 bytes panics, and a chunk whose
//! compressed bytes were damaged makes it allocate what the damaged stream
//! claims (an abort). This reader checks every length against the bytes
//! that hold it before it looks further, checks the file's CRCs (data
//! section, summary section, each chunk) before it decompresses anything,
//! and decompresses a chunk through a reader capped at its declared size,
//! itself capped at [`MAX_CHUNK_BYTES`]. So a damaged or hostile file is an
//! error naming it, in time and memory bounded by its size.

use super::{PLANNER_TOPIC, RecordError, STEP_TOPIC};
use crate::navigator::StepRecord;
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

/// The first (and last) bytes of every MCAP file.
pub const MCAP_MAGIC: &[u8; 8] = b"\x89MCAP0\r\n";

/// The largest recording `nav replay` reads (it is read whole).
pub const MAX_RECORDING_BYTES: u64 = 2 << 30;

/// The largest decompressed chunk `nav replay` accepts (the recorder writes
/// chunks of about 1 MiB plus at most one message).
pub const MAX_CHUNK_BYTES: u64 = 256 << 20;

/// The most decompressed bytes `nav replay` reads from one recording, all
/// chunks together (bounds the time a file of highly compressed chunks takes).
pub const MAX_DECOMPRESSED_BYTES: u64 = 8 << 30;

const OP_HEADER: u8 = 0x01;
const OP_FOOTER: u8 = 0x02;
const OP_CHANNEL: u8 = 0x04;
const OP_MESSAGE: u8 = 0x05;
const OP_CHUNK: u8 = 0x06;
const OP_DATA_END: u8 = 0x0f;
/// Opcode, length, summary start, summary offset start, summary CRC.
const FOOTER_LEN: usize = 1 + 8 + 8 + 8 + 4;

/// Whether `path` is to be read as MCAP: its first bytes are the MCAP
/// magic, or its name ends in `.mcap` (a damaged recording: the reader then
/// names the problem).
pub fn is_mcap(path: &Path) -> bool {
    let mut head = [0u8; 8];
    let magic =
        nav_core::bounded::open_regular(path).and_then(|mut f| f.read_exact(&mut head)).is_ok() && &head == MCAP_MAGIC;
    magic || path.extension().is_some_and(|e| e.eq_ignore_ascii_case("mcap"))
}

/// The most messages [`read_messages`] returns from one recording (as many
/// as the longest step log `nav replay` reads).
pub const MAX_MESSAGES: usize = crate::navigator::MAX_LOG_STEPS;

/// The most bytes of messages [`read_messages`] keeps from one recording,
/// all together: as much as `nav replay` reads of a step log. Chunks are
/// capped one by one, but the messages kept from each add up, and a small
/// file of compressed chunks can declare gigabytes of them.
pub const MAX_MESSAGE_BYTES: u64 = crate::navigator::MAX_LOG_BYTES;

/// One message of a recording, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedMessage {
    /// Its channel's topic.
    pub topic: String,
    /// Its sequence number on the channel.
    pub sequence: u32,
    /// Log time, ns.
    pub log_time: u64,
    /// The encoded message (JSON on navkit's own channels).
    pub data: Vec<u8>,
}

/// The step records of the recording at `path`, in the order written. An
/// unreadable, truncated or corrupt file (a CRC that does not match, a
/// length past what holds it, a chunk over [`MAX_CHUNK_BYTES`]), a file over
/// [`MAX_RECORDING_BYTES`] or a bad step record is an error naming the file.
pub fn read_steps(path: &Path) -> Result<Vec<StepRecord>, RecordError> {
    let bytes = read_file(path)?;
    steps_from_bytes(&bytes).map_err(|e| named(path, e))
}

/// The model calls of the recording at `path` (the `/navkit/planner`
/// messages, `navkit.PlannerCall`, docs/RECORDING.md), in the order made.
/// Errors as [`read_steps`]; a message that is not a JSON object is one.
pub fn read_planner_calls(path: &Path) -> Result<Vec<serde_json::Value>, RecordError> {
    let bytes = read_file(path)?;
    let calls = messages_from_bytes(&bytes, &[PLANNER_TOPIC])
        .and_then(|messages| messages.iter().map(|m| json_object(m, "a model call")).collect::<Result<Vec<_>, _>>());
    calls.map_err(|e| named(path, e))
}

/// The messages on `topics` of the recording at `path`, in file order (at
/// most [`MAX_MESSAGES`]). Errors as [`read_steps`].
pub fn read_messages(path: &Path, topics: &[&str]) -> Result<Vec<RecordedMessage>, RecordError> {
    let bytes = read_file(path)?;
    messages_from_bytes(&bytes, topics).map_err(|e| named(path, e))
}

/// The whole file, at most [`MAX_RECORDING_BYTES`].
fn read_file(path: &Path) -> Result<Vec<u8>, RecordError> {
    let file = nav_core::bounded::open_regular(path).map_err(|e| named(path, RecordError::Corrupt(e.to_string())))?;
    let mut bytes = Vec::new();
    file.take(MAX_RECORDING_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| named(path, RecordError::Corrupt(e.to_string())))?;
    if bytes.len() as u64 > MAX_RECORDING_BYTES {
        return Err(named(
            path,
            RecordError::Corrupt(format!(
                "recording is larger than the {} limit of nav replay",
                nav_core::bounded::human_bytes(MAX_RECORDING_BYTES)
            )),
        ));
    }
    Ok(bytes)
}

/// `e` naming the file `path`.
fn named(path: &Path, e: RecordError) -> RecordError {
    match e {
        RecordError::Corrupt(message) => RecordError::Read { path: path.to_path_buf(), message },
        other => other,
    }
}

/// The JSON object of message `m`, or an error calling it `what`.
fn json_object(m: &RecordedMessage, what: &str) -> Result<serde_json::Value, RecordError> {
    match serde_json::from_slice::<serde_json::Value>(&m.data) {
        Ok(v) if v.is_object() => Ok(v),
        Ok(_) => {
            Err(RecordError::Corrupt(format!("{} message {} is not {what}: not a JSON object", m.topic, m.sequence)))
        }
        Err(e) => Err(RecordError::Corrupt(format!("{} message {} is not {what}: {e}", m.topic, m.sequence))),
    }
}

/// The step records of an MCAP file's bytes; an error says what is wrong.
pub fn steps_from_bytes(bytes: &[u8]) -> Result<Vec<StepRecord>, RecordError> {
    let messages = messages_from_bytes(bytes, &[STEP_TOPIC])?;
    messages
        .iter()
        .map(|m| {
            let record: StepRecord = serde_json::from_slice(&m.data).map_err(|e| {
                RecordError::Corrupt(format!("{STEP_TOPIC} message {} is not a step record: {e}", m.sequence))
            })?;
            record.check().map_err(|e| RecordError::Corrupt(format!("{STEP_TOPIC} message {}: {e}", m.sequence)))?;
            Ok(record)
        })
        .collect()
}

/// The messages on `topics` of an MCAP file's bytes; an error says what is
/// wrong.
pub fn messages_from_bytes(bytes: &[u8], topics: &[&str]) -> Result<Vec<RecordedMessage>, RecordError> {
    messages_of(bytes, topics).map_err(RecordError::Corrupt)
}

fn messages_of(bytes: &[u8], topics: &[&str]) -> Result<Vec<RecordedMessage>, String> {
    messages_within(bytes, topics, MAX_MESSAGE_BYTES)
}

/// [`messages_of`] keeping at most `max_bytes` of messages.
fn messages_within(bytes: &[u8], topics: &[&str], max_bytes: u64) -> Result<Vec<RecordedMessage>, String> {
    if !bytes.starts_with(MCAP_MAGIC) {
        return Err("not an MCAP file (it does not start with the MCAP magic bytes)".into());
    }
    if bytes.len() < 2 * MCAP_MAGIC.len() + FOOTER_LEN || !bytes.ends_with(MCAP_MAGIC) {
        return Err("truncated or corrupt MCAP recording (it does not end with the MCAP footer and magic bytes)".into());
    }
    let footer_at = bytes.len() - MCAP_MAGIC.len() - FOOTER_LEN;
    let data_end = check_data_section(bytes, footer_at)?;
    check_summary(bytes, data_end, footer_at)?;
    let mut reader = TopicReader { topics, max_bytes, ..TopicReader::default() };
    let mut at = MCAP_MAGIC.len();
    while let Some((op, body, next)) = record_at(bytes, at, footer_at)? {
        if op == OP_DATA_END {
            break;
        }
        if op == OP_CHUNK {
            reader.chunk(body)?;
        } else {
            reader.record(op, body)?;
        }
        at = next;
    }
    Ok(reader.messages)
}

/// One record: opcode, body, and where the next record starts.
type Record<'a> = (u8, &'a [u8], usize);

/// The record at `at`, its length checked against `end`; `None` at `end`.
fn record_at(bytes: &[u8], at: usize, end: usize) -> Result<Option<Record<'_>>, String> {
    if at == end {
        return Ok(None);
    }
    let Some(head) = bytes.get(at..at + 9).filter(|_| end - at >= 9) else {
        return Err(format!("corrupt MCAP recording: a record header at byte {at} runs past its section"));
    };
    let mut len = [0u8; 8];
    len.copy_from_slice(&head[1..9]);
    let len = u64::from_le_bytes(len);
    let start = at + 9;
    let room = (end - start) as u64;
    if len > room {
        return Err(format!(
            "corrupt MCAP recording: the record at byte {at} claims {len} bytes, only {room} remain in its section"
        ));
    }
    let next = start + len as usize;
    Ok(Some((head[0], &bytes[start..next], next)))
}

/// Walks the data section up to its DataEnd record, checking the record
/// lengths and its CRC; returns where DataEnd ends.
fn check_data_section(bytes: &[u8], footer_at: usize) -> Result<usize, String> {
    let mut at = MCAP_MAGIC.len();
    let mut first = true;
    while let Some((op, body, next)) = record_at(bytes, at, footer_at)? {
        if first && op != OP_HEADER {
            return Err("corrupt MCAP recording: the first record is not a Header".into());
        }
        first = false;
        if op == OP_DATA_END {
            let mut f = Fields::new(body, "DataEnd");
            let crc = f.u32()?;
            if crc != 0 && crc != crc32fast::hash(&bytes[..at]) {
                return Err("corrupt MCAP recording: the data section's CRC does not match".into());
            }
            return Ok(next);
        }
        at = next;
    }
    Err("truncated or corrupt MCAP recording: no DataEnd record before the footer".into())
}

/// Checks the footer and the summary section's CRC (the summary is not
/// otherwise used, but a damaged one means a damaged file).
fn check_summary(bytes: &[u8], data_end: usize, footer_at: usize) -> Result<(), String> {
    let footer = &bytes[footer_at..footer_at + FOOTER_LEN];
    if footer[0] != OP_FOOTER || footer[1..9] != 20u64.to_le_bytes() {
        return Err("corrupt MCAP recording: no Footer record before the closing magic bytes".into());
    }
    let mut f = Fields::new(&footer[9..], "Footer");
    let summary_start = f.u64()?;
    let _summary_offset_start = f.u64()?;
    let crc = f.u32()?;
    if summary_start != 0 && summary_start != data_end as u64 {
        return Err("corrupt MCAP recording: the footer's summary start is not where the data section ends".into());
    }
    if crc != 0 && crc != crc32fast::hash(&bytes[data_end..footer_at + FOOTER_LEN - 4]) {
        return Err("corrupt MCAP recording: the summary section's CRC does not match".into());
    }
    Ok(())
}

/// Collects the messages of chosen topics from Channel and Message records.
#[derive(Default)]
struct TopicReader<'t> {
    /// The topics wanted.
    topics: &'t [&'t str],
    /// Channel id → its topic, when wanted.
    channels: HashMap<u16, Option<String>>,
    messages: Vec<RecordedMessage>,
    decompressed: u64,
    /// Bytes of the messages kept so far, and the most that may be kept.
    kept: u64,
    max_bytes: u64,
}

impl TopicReader<'_> {
    /// One record of the data section or of a chunk.
    fn record(&mut self, op: u8, body: &[u8]) -> Result<(), String> {
        match op {
            OP_CHANNEL => {
                let mut f = Fields::new(body, "Channel");
                let id = f.u16()?;
                let _schema = f.u16()?;
                let topic = f.string()?;
                let wanted = self.topics.contains(&topic.as_str());
                self.channels.insert(id, wanted.then_some(topic));
            }
            OP_MESSAGE => {
                let mut f = Fields::new(body, "Message");
                let channel = f.u16()?;
                let sequence = f.u32()?;
                let log_time = f.u64()?;
                let _publish_time = f.u64()?;
                match self.channels.get(&channel) {
                    None => return Err(format!("corrupt MCAP recording: a message on unknown channel {channel}")),
                    Some(None) => {}
                    Some(Some(topic)) => {
                        let what = || {
                            if topic == STEP_TOPIC { "step records".to_string() } else { format!("{topic} messages") }
                        };
                        if self.messages.len() >= MAX_MESSAGES {
                            return Err(format!(
                                "the recording holds more than {MAX_MESSAGES} {}, the most nav replay reads",
                                what()
                            ));
                        }
                        self.kept = self.kept.saturating_add(f.rest().len() as u64);
                        if self.kept > self.max_bytes {
                            return Err(format!(
                                "the recording's {} hold more than {}, the most nav replay reads",
                                what(),
                                nav_core::bounded::human_bytes(self.max_bytes)
                            ));
                        }
                        let data = f.rest().to_vec();
                        self.messages.push(RecordedMessage { topic: topic.clone(), sequence, log_time, data });
                    }
                }
            }
            OP_CHUNK | OP_DATA_END | OP_FOOTER => {
                return Err(format!("corrupt MCAP recording: record opcode {op:#04x} where it cannot be"));
            }
            _ => {}
        }
        Ok(())
    }

    /// A Chunk record: its declared sizes checked, its records
    /// decompressed through a capped reader, CRC-checked, then read.
    fn chunk(&mut self, body: &[u8]) -> Result<(), String> {
        let mut f = Fields::new(body, "Chunk");
        let _start = f.u64()?;
        let _end = f.u64()?;
        let size = f.u64()?;
        let crc = f.u32()?;
        let compression = f.string()?;
        let len = f.u64()?;
        let compressed = f.bytes(len)?;
        if size > MAX_CHUNK_BYTES {
            return Err(format!(
                "corrupt MCAP recording: a chunk declares {size} bytes uncompressed, over the {} limit of nav replay",
                nav_core::bounded::human_bytes(MAX_CHUNK_BYTES)
            ));
        }
        self.decompressed = self.decompressed.saturating_add(size);
        if self.decompressed > MAX_DECOMPRESSED_BYTES {
            return Err(format!(
                "the recording's chunks hold more than the {} nav replay reads",
                nav_core::bounded::human_bytes(MAX_DECOMPRESSED_BYTES)
            ));
        }
        let records = match compression.as_str() {
            "" => compressed.to_vec(),
            "zstd" => {
                let decoder = zstd::stream::read::Decoder::new(compressed)
                    .map_err(|e| format!("corrupt MCAP recording: a zstd chunk: {e}"))?;
                let mut out = Vec::new();
                decoder
                    .take(size + 1)
                    .read_to_end(&mut out)
                    .map_err(|e| format!("corrupt MCAP recording: a zstd chunk: {e}"))?;
                out
            }
            other => return Err(format!("MCAP chunk compression {other:?} is not supported by nav replay")),
        };
        if records.len() as u64 != size {
            return Err(format!(
                "corrupt MCAP recording: a chunk declares {size} bytes uncompressed and holds {}",
                records.len()
            ));
        }
        if crc != 0 && crc != crc32fast::hash(&records) {
            return Err("corrupt MCAP recording: a chunk's CRC does not match".into());
        }
        let mut at = 0;
        while let Some((op, rec, next)) = record_at(&records, at, records.len())? {
            self.record(op, rec)?;
            at = next;
        }
        Ok(())
    }
}

/// Little-endian fields of one record's body, each checked against what
/// remains of it.
struct Fields<'a> {
    rest: &'a [u8],
    record: &'static str,
}

impl<'a> Fields<'a> {
    fn new(body: &'a [u8], record: &'static str) -> Self {
        Self { rest: body, record }
    }

    fn take<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let (head, rest) = self.rest.split_first_chunk::<N>().ok_or_else(|| self.short())?;
        self.rest = rest;
        Ok(*head)
    }

    fn short(&self) -> String {
        format!("corrupt MCAP recording: a {} record is shorter than its fields", self.record)
    }

    fn u16(&mut self) -> Result<u16, String> {
        self.take().map(u16::from_le_bytes)
    }

    fn u32(&mut self) -> Result<u32, String> {
        self.take().map(u32::from_le_bytes)
    }

    fn u64(&mut self) -> Result<u64, String> {
        self.take().map(u64::from_le_bytes)
    }

    fn bytes(&mut self, len: u64) -> Result<&'a [u8], String> {
        if len > self.rest.len() as u64 {
            return Err(format!(
                "corrupt MCAP recording: a {} record claims a field of {len} bytes, only {} remain",
                self.record,
                self.rest.len()
            ));
        }
        let (head, rest) = self.rest.split_at(len as usize);
        self.rest = rest;
        Ok(head)
    }

    fn string(&mut self) -> Result<String, String> {
        let len = self.u32()?;
        let raw = self.bytes(u64::from(len))?;
        String::from_utf8(raw.to_vec())
            .map_err(|_| format!("corrupt MCAP recording: a {} record's text is not UTF-8", self.record))
    }

    fn rest(&self) -> &'a [u8] {
        self.rest
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn rec(op: u8, body: &[u8]) -> Vec<u8> {
        let mut v = vec![op];
        v.extend_from_slice(&(body.len() as u64).to_le_bytes());
        v.extend_from_slice(body);
        v
    }

    fn string(s: &str) -> Vec<u8> {
        let mut v = (s.len() as u32).to_le_bytes().to_vec();
        v.extend_from_slice(s.as_bytes());
        v
    }

    fn header() -> Vec<u8> {
        rec(OP_HEADER, &[string(""), string("test")].concat())
    }

    /// A file of `records` after a Header, with no CRCs.
    fn file(records: &[Vec<u8>]) -> Vec<u8> {
        let mut v = MCAP_MAGIC.to_vec();
        v.extend(header());
        for r in records {
            v.extend_from_slice(r);
        }
        v.extend(rec(OP_DATA_END, &0u32.to_le_bytes()));
        v.extend(rec(OP_FOOTER, &[0u8; 20]));
        v.extend_from_slice(MCAP_MAGIC);
        v
    }

    fn channel(id: u16, topic: &str) -> Vec<u8> {
        let body = [
            id.to_le_bytes().to_vec(),
            0u16.to_le_bytes().to_vec(),
            string(topic),
            string("json"),
            0u32.to_le_bytes().to_vec(),
        ]
        .concat();
        rec(OP_CHANNEL, &body)
    }

    fn message(id: u16, data: &[u8]) -> Vec<u8> {
        let body = [id.to_le_bytes().to_vec(), 7u32.to_le_bytes().to_vec(), vec![0; 16], data.to_vec()].concat();
        rec(OP_MESSAGE, &body)
    }

    fn chunk(size: u64, compression: &str, records: &[u8]) -> Vec<u8> {
        let body = [
            vec![0; 16],
            size.to_le_bytes().to_vec(),
            0u32.to_le_bytes().to_vec(),
            string(compression),
            (records.len() as u64).to_le_bytes().to_vec(),
            records.to_vec(),
        ]
        .concat();
        rec(OP_CHUNK, &body)
    }

    fn step() -> Vec<u8> {
        serde_json::to_vec(&StepRecord::default()).unwrap()
    }

    #[test]
    fn a_hand_made_file_gives_its_step_in_and_out_of_chunks() {
        let plain = file(&[channel(1, STEP_TOPIC), message(1, &step()), channel(2, "/other"), message(2, b"x")]);
        assert_eq!(steps_from_bytes(&plain).unwrap().len(), 1);
        let inner = [channel(1, STEP_TOPIC), message(1, &step())].concat();
        let packed = zstd::encode_all(&inner[..], 3).unwrap();
        let chunked = file(&[chunk(inner.len() as u64, "zstd", &packed), chunk(inner.len() as u64, "", &inner)]);
        assert_eq!(steps_from_bytes(&chunked).unwrap().len(), 2);
    }

    #[test]
    fn declared_lengths_past_what_the_file_holds_are_errors() {
        // a Header whose length is all ones
        let mut v = MCAP_MAGIC.to_vec();
        v.push(OP_HEADER);
        v.extend_from_slice(&u64::MAX.to_le_bytes());
        v.extend(rec(OP_FOOTER, &[0u8; 20]));
        v.extend_from_slice(MCAP_MAGIC);
        assert!(steps_from_bytes(&v).unwrap_err().to_string().contains("claims"));
        // a chunk declaring 2^64 - 1 bytes uncompressed
        let e = steps_from_bytes(&file(&[chunk(u64::MAX, "zstd", b"abc")])).unwrap_err().to_string();
        assert!(e.contains("limit"), "{e}");
        // a record inside a chunk claiming 2^64 - 1 bytes
        let mut inner = vec![OP_MESSAGE];
        inner.extend_from_slice(&u64::MAX.to_le_bytes());
        let e = steps_from_bytes(&file(&[chunk(inner.len() as u64, "", &inner)])).unwrap_err().to_string();
        assert!(e.contains("claims"), "{e}");
        // a zstd chunk that holds more than it declares
        let big = vec![0u8; 1 << 20];
        let packed = zstd::encode_all(&big[..], 3).unwrap();
        let e = steps_from_bytes(&file(&[chunk(10, "zstd", &packed)])).unwrap_err().to_string();
        assert!(e.contains("declares 10"), "{e}");
        // a string longer than its record, a message before its channel, lz4
        let e =
            steps_from_bytes(&file(&[rec(OP_CHANNEL, &[0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff])])).unwrap_err().to_string();
        assert!(e.contains("Channel"), "{e}");
        assert!(steps_from_bytes(&file(&[message(3, &step())])).unwrap_err().to_string().contains("unknown channel"));
        assert!(steps_from_bytes(&file(&[chunk(1, "lz4", b"x")])).unwrap_err().to_string().contains("lz4"));
    }

    /// A zstd frame of `prefix`, `n` copies of `byte` (RLE blocks, a few
    /// bytes each) and `suffix`: a tiny frame that decompresses to `n` bytes.
    fn zstd_rle(prefix: &[u8], byte: u8, mut n: usize, suffix: &[u8]) -> Vec<u8> {
        let block =
            |last: u32, kind: u32, size: usize| ((last | kind << 1 | (size as u32) << 3).to_le_bytes())[..3].to_vec();
        let mut v = 0xFD2F_B528u32.to_le_bytes().to_vec();
        v.extend([0x00, 0x38]); // no content size, a 128 KiB window
        v.extend(block(0, 0, prefix.len()));
        v.extend_from_slice(prefix);
        while n > 0 {
            let k = n.min(128 << 10);
            v.extend(block(0, 1, k));
            v.push(byte);
            n -= k;
        }
        v.extend(block(1, 0, suffix.len()));
        v.extend_from_slice(suffix);
        v
    }

    #[test]
    fn the_messages_kept_from_all_chunks_together_are_capped() {
        // one message record of `size` bytes in each chunk: its header, then
        // a step record padded with spaces
        let pad = 1 << 20;
        let header = message(1, b"");
        let head = [&header[..1], &((header.len() - 9 + 10 + pad) as u64).to_le_bytes(), &header[9..], b"{\"step\":0"]
            .concat();
        let frame = zstd_rle(&head, b' ', pad, b"}");
        let size = (head.len() + pad + 1) as u64;
        let one = chunk(size, "zstd", &frame);
        let two = file(&[channel(1, STEP_TOPIC), one.clone(), one]);
        assert_eq!(messages_within(&two, &[STEP_TOPIC], 3 << 20).unwrap().len(), 2);
        let e = messages_within(&two, &[STEP_TOPIC], 3 << 19).unwrap_err();
        assert!(e.contains("step records hold more than"), "{e}");
        // other topics' messages are not kept, so not counted
        assert!(messages_within(&two, &["/other"], 1).unwrap().is_empty());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, failure_persistence: None, ..Default::default() })]

        /// Any one to three flipped bits or any cut of a real recording is
        /// an error (the CRCs cover every byte), never a panic.
        #[test]
        fn flips_and_cuts_of_a_real_recording_are_errors(
            bits in proptest::collection::vec(proptest::prelude::any::<proptest::sample::Index>(), 1..4),
            cut in proptest::prelude::any::<proptest::sample::Index>(),
        ) {
            let good = small_recording();
            let mut flipped = good.clone();
            for b in &bits {
                let i = b.index(flipped.len() * 8);
                flipped[i / 8] ^= 1 << (i % 8);
            }
            if &flipped != good {
                proptest::prop_assert!(steps_from_bytes(&flipped).is_err());
            }
            proptest::prop_assert!(steps_from_bytes(&good[..cut.index(good.len())]).is_err());
        }
    }

    /// A recording of 30 steps made with the recorder, once.
    fn small_recording() -> &'static Vec<u8> {
        static REC: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
        REC.get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("r.mcap");
            let rec = super::super::Recording::create(&path, 1).unwrap();
            let mut tap = rec.step_tap();
            for i in 0..30u64 {
                let mut r = StepRecord { step: i, t_s: i as f64, action: "forward".into(), ..StepRecord::default() };
                r.info.insert("note".into(), serde_json::json!(format!("step {i}")));
                tap(&r);
            }
            rec.finish().unwrap();
            let bytes = std::fs::read(&path).unwrap();
            assert_eq!(steps_from_bytes(&bytes).unwrap().len(), 30);
            bytes
        })
    }
}
