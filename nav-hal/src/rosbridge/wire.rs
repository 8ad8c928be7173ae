//! Serde helpers for the quirks of rosbridge's JSON encoding.
//!
//! rosbridge (ROS 1 and ROS 2) writes every non-finite float as JSON `null`
//! (JSON has no NaN or infinity) and every `uint8[]` as a base64 string.
//! The helpers accept both the rosbridge form and the plain one (numbers,
//! arrays of bytes). They only apply to human-readable formats: a binary
//! format (a CDR backend such as roslibrust's zenoh one) carries real
//! floats and byte sequences and takes the plain path.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

/// Deserializes a list of ranges where `null` is an *invalid* reading (NaN).
///
/// rosbridge cannot tell `+inf` (no return), `-inf` (too close) and NaN
/// (invalid) apart: all arrive as `null`. REP-117 gives them three
/// meanings, and only one of them (`+inf`) says the space is free, so a
/// `null` is read as what it certainly is: *no valid measurement*. It never
/// becomes a phantom obstacle, and never free space either; a scan with
/// too few valid beams where the robot wants to go stops it (the safety
/// layer's sensor-validity check).
pub fn ranges_null_as_nan<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f32>, D::Error> {
    nullable_f32_list(d, f32::NAN)
}

/// Deserializes a list of `f32` where `null` (a non-finite value) becomes NaN.
pub fn f32_list_null_as_nan<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f32>, D::Error> {
    nullable_f32_list(d, f32::NAN)
}

fn nullable_f32_list<'de, D: Deserializer<'de>>(d: D, null: f32) -> Result<Vec<f32>, D::Error> {
    if d.is_human_readable() {
        let raw: Vec<Option<f32>> = Vec::deserialize(d)?;
        Ok(raw.into_iter().map(|v| v.unwrap_or(null)).collect())
    } else {
        Vec::deserialize(d)
    }
}

/// Deserializes a list of `f64` where `null` (a non-finite value) becomes NaN.
pub fn f64_list_null_as_nan<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
    if d.is_human_readable() {
        let raw: Vec<Option<f64>> = Vec::deserialize(d)?;
        Ok(raw.into_iter().map(|v| v.unwrap_or(f64::NAN)).collect())
    } else {
        Vec::deserialize(d)
    }
}

/// Deserializes one `f32` where `null` (a non-finite value) becomes NaN.
pub fn f32_null_as_nan<'de, D: Deserializer<'de>>(d: D) -> Result<f32, D::Error> {
    if d.is_human_readable() { Ok(Option::<f32>::deserialize(d)?.unwrap_or(f32::NAN)) } else { f32::deserialize(d) }
}

/// Deserializes one `f64` where `null` (a non-finite value) becomes NaN.
pub fn f64_null_as_nan<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    if d.is_human_readable() { Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN)) } else { f64::deserialize(d) }
}

/// Serializes `uint8[]` the way rosbridge does: a base64 string in JSON,
/// plain bytes in binary formats.
pub fn serialize_bytes<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
    if s.is_human_readable() { BASE64.encode(bytes).serialize(s) } else { s.serialize_bytes(bytes) }
}

/// Deserializes `uint8[]` from a base64 string (rosbridge's encoding), a
/// JSON array of numbers 0–255, or bytes.
pub fn deserialize_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    d.deserialize_any(BytesVisitor)
}

struct BytesVisitor;

impl<'de> Visitor<'de> for BytesVisitor {
    type Value = Vec<u8>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a base64 string or an array of bytes")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Vec<u8>, E> {
        BASE64.decode(v.trim()).map_err(|e| E::custom(format!("invalid base64 in uint8[] data: {e}")))
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
        Ok(v.to_vec())
    }

    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
        Ok(v)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Vec<u8>, E> {
        Ok(Vec::new())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(b) = seq.next_element::<u8>()? {
            out.push(b);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, Serialize, PartialEq)]
    struct Holder {
        #[serde(deserialize_with = "ranges_null_as_nan")]
        ranges: Vec<f32>,
        #[serde(serialize_with = "serialize_bytes", deserialize_with = "deserialize_bytes")]
        data: Vec<u8>,
    }

    #[test]
    fn null_ranges_read_as_invalid_and_non_finite_writes_null() {
        let h: Holder = serde_json::from_str(r#"{"ranges":[1.5,null,0.2],"data":"AAEC"}"#).unwrap();
        assert_eq!(h.ranges[0], 1.5);
        assert!(h.ranges[1].is_nan());
        assert_eq!(h.data, vec![0, 1, 2]);
        let text = serde_json::to_string(&h).unwrap();
        assert_eq!(text, r#"{"ranges":[1.5,null,0.2],"data":"AAEC"}"#);
    }

    #[test]
    fn bytes_accept_number_arrays_and_reject_bad_base64() {
        let h: Holder = serde_json::from_str(r#"{"ranges":[],"data":[255,0,7]}"#).unwrap();
        assert_eq!(h.data, vec![255, 0, 7]);
        let err = serde_json::from_str::<Holder>(r#"{"ranges":[],"data":"@@@"}"#).unwrap_err();
        assert!(err.to_string().contains("base64"), "{err}");
        assert!(serde_json::from_str::<Holder>(r#"{"ranges":[],"data":[256]}"#).is_err());
    }
}
