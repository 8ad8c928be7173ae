"""Wire-format helpers: PNG encoding, option and episode parsing, replies."""

import json
import struct
import unittest
import zlib

from navkit_bridge.protocol import (
    Blob,
    BridgeError,
    EpisodeSpec,
    ObservationOptions,
    decode_request,
    encode_png,
    encode_reply,
)


def decode_png(data: bytes):
    """Minimal reader for the encoder's own output (RGB, filter 0)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        tag, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert crc == zlib.crc32(tag + body) & 0xFFFFFFFF, tag
        if tag == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif tag == b"IDAT":
            idat += body
        pos += 12 + length
    w, h = header[0], header[1]
    raw = zlib.decompress(idat)
    rows = [raw[y * (3 * w + 1) : (y + 1) * (3 * w + 1)] for y in range(h)]
    assert all(r[0] == 0 for r in rows)
    return w, h, b"".join(r[1:] for r in rows)


class PngTest(unittest.TestCase):
    def test_round_trip(self):
        w, h = 5, 3
        rgb = bytes((x * 40 + y * 7 + c) % 256 for y in range(h) for x in range(w) for c in range(3))
        self.assertEqual(decode_png(encode_png(w, h, rgb)), (w, h, rgb))

    def test_wrong_size_is_an_error(self):
        with self.assertRaises(ValueError):
            encode_png(4, 4, b"\x00" * 10)


class ParsingTest(unittest.TestCase):
    def test_options_validate_every_field(self):
        o = ObservationOptions()
        self.assertEqual((o.rgb, o.depth, o.pose, o.detections), ("raw", False, False, True))
        o.update({"rgb": "png", "depth": True})
        self.assertEqual((o.rgb, o.depth), ("png", True))
        for bad in ({"rgb": "jpeg"}, {"depth": 1}, {"colour": True}, [1]):
            with self.assertRaises(BridgeError) as e:
                ObservationOptions().update(bad)
            self.assertEqual(e.exception.kind, "bad_request")

    def test_episode_spec(self):
        self.assertEqual(EpisodeSpec.parse(None), EpisodeSpec())
        self.assertEqual(EpisodeSpec.parse({"index": 3, "scene": "house"}), EpisodeSpec(index=3, scene="house"))
        for bad in ({"index": -1}, {"index": True}, {"seed": "7"}, {"id": ""}, {"room": "x"}, "3"):
            with self.assertRaises(BridgeError):
                EpisodeSpec.parse(bad)

    def test_requests(self):
        self.assertEqual(decode_request(b'{"id":1,"op":"ping"}')["op"], "ping")
        for line, kind in ((b"{", "parse"), (b"[1]", "parse"), (b'{"id":1}', "bad_request"), (b"\xff", "parse")):
            with self.assertRaises(BridgeError) as e:
                decode_request(line)
            self.assertEqual(e.exception.kind, kind, line)

    def test_replies_are_one_json_line(self):
        line = encode_reply(7, result={"x": 1.5}, backend_ms=2.0, encode_ms=0.5)
        self.assertTrue(line.endswith(b"\n") and line.count(b"\n") == 1)
        self.assertEqual(json.loads(line), {"id": 7, "result": {"x": 1.5}, "timing": {"backend_ms": 2.0, "encode_ms": 0.5}})
        blobs = json.loads(encode_reply(1, result={"a": Blob(b"\x00\xff"), "l": [Blob(b"xyz"), "t"]}))
        self.assertEqual(blobs["result"], {"a": "AP8=", "l": ["eHl6", "t"]})
        # A string that looks like the splice marker is still encoded correctly.
        tricky = json.loads(encode_reply(2, result={"s": "\x00blob:1", "b": Blob(b"q")}))
        self.assertEqual(tricky["result"], {"s": "\x00blob:1", "b": "cQ=="})
        err = json.loads(encode_reply(None, error=BridgeError("unknown_op", "no")))
        self.assertEqual(err, {"id": None, "error": {"kind": "unknown_op", "message": "no"}})


if __name__ == "__main__":
    unittest.main()
