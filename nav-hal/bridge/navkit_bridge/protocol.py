"""Wire format of the navkit bridge protocol (version 1).

One JSON object per line in each direction. Requests carry an ``id`` and an
``op``; replies echo the ``id`` and carry either ``result`` or
``error: {kind, message}``. Images travel as base64 (PNG or raw RGB), depth as
base64 float32 little-endian metres. docs/BRIDGE.md is the reference.

Only the standard library is used here, so the protocol core runs on any
Python 3.9+ without numpy or Pillow.
"""

from __future__ import annotations

import base64
import json
import math
import re
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

PROTOCOL = "navkit-bridge"
VERSION = 1

#: The discrete actions of the Habitat ObjectNav action space, wire names.
ACTIONS = ("forward", "turn_left", "turn_right", "stop")

#: Error kinds a reply may carry (docs/BRIDGE.md, "Errors").
ERROR_KINDS = (
    "parse",  # the line is not a JSON object
    "bad_request",  # a field is missing or has the wrong type or value
    "unknown_op",  # no such operation
    "version",  # protocol name or version mismatch in hello
    "no_episode",  # step/panorama before the first reset
    "episode_over",  # step after the episode ended (reset first)
    "unsupported",  # the backend cannot do this
    "unavailable",  # the backend could not start (simulator not installed)
    "backend",  # the simulator raised an exception
)


class BridgeError(Exception):
    """An error that becomes an ``{"error": {kind, message}}`` reply."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        if kind not in ERROR_KINDS:
            raise ValueError(f"unknown error kind {kind!r}")
        self.kind = kind
        self.message = message

    def to_json(self) -> Dict[str, str]:
        return {"kind": self.kind, "message": self.message}


@dataclass
class ObservationOptions:
    """What each observation carries; negotiated in ``hello``."""

    # "raw" by default: PNG-encoding a 320x240 frame costs 5-10 ms in Python,
    # more than the whole per-step budget of a local pipe; use "png" over TCP.
    rgb: str = "raw"  # "raw", "png" or "none"
    depth: bool = False
    pose: bool = False  # ground-truth pose; off by default (seed 000 uses dead reckoning)
    detections: bool = True

    FIELDS = ("rgb", "depth", "pose", "detections")

    def update(self, raw: Any) -> None:
        """Applies a client's ``observation`` object, validating every field."""
        if raw is None:
            return
        if not isinstance(raw, dict):
            raise BridgeError("bad_request", "observation must be an object")
        for key, value in raw.items():
            if key == "rgb":
                if value not in ("png", "raw", "none"):
                    raise BridgeError("bad_request", f"observation.rgb must be png, raw or none, got {value!r}")
                self.rgb = value
            elif key in ("depth", "pose", "detections"):
                if not isinstance(value, bool):
                    raise BridgeError("bad_request", f"observation.{key} must be true or false, got {value!r}")
                setattr(self, key, value)
            else:
                raise BridgeError("bad_request", f"observation.{key}: unknown field (expected one of {', '.join(self.FIELDS)})")

    def to_json(self) -> Dict[str, Any]:
        return {"rgb": self.rgb, "depth": self.depth, "pose": self.pose, "detections": self.detections}


@dataclass
class EpisodeSpec:
    """Which episode a ``reset`` asks for. All fields optional: an empty spec
    means "the next episode"."""

    index: Optional[int] = None
    seed: Optional[int] = None
    id: Optional[str] = None
    scene: Optional[str] = None

    @staticmethod
    def parse(raw: Any) -> "EpisodeSpec":
        if raw is None:
            return EpisodeSpec()
        if not isinstance(raw, dict):
            raise BridgeError("bad_request", "episode must be an object")
        spec = EpisodeSpec()
        for key, value in raw.items():
            if key in ("index", "seed"):
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise BridgeError("bad_request", f"episode.{key} must be a non-negative integer, got {value!r}")
                setattr(spec, key, value)
            elif key in ("id", "scene"):
                if not isinstance(value, str) or not value:
                    raise BridgeError("bad_request", f"episode.{key} must be a non-empty string, got {value!r}")
                setattr(spec, key, value)
            else:
                raise BridgeError("bad_request", f"episode.{key}: unknown field (expected index, seed, id or scene)")
        return spec


@dataclass
class Detection:
    """A ground-truth detection of an object visible in the RGB image."""

    label: str
    bearing_rad: float  # CCW from the optical axis, positive = left
    distance_m: float  # camera to the object's surface, horizontal
    bbox: Optional[List[int]] = None  # [x_min, y_min, x_max, y_max], inclusive pixels

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {
            "label": self.label,
            "bearing_rad": finite(self.bearing_rad),
            "distance_m": finite(self.distance_m),
            "ground_truth": True,
        }
        if self.bbox is not None:
            out["bbox"] = [int(v) for v in self.bbox]
        return out


@dataclass
class Frame:
    """One rendered view: RGB bytes (row-major, 3 bytes a pixel), optional
    depth (row-major float metres, z-distance) and detections."""

    width: int
    height: int
    rgb: bytes
    hfov_deg: float
    depth: Optional[bytes] = None  # float32 little-endian, width * height values
    detections: List[Detection] = field(default_factory=list)


def finite(x: float) -> Optional[float]:
    """JSON has no NaN or infinity: those become null."""
    x = float(x)
    return x if math.isfinite(x) else None


def encode_png(width: int, height: int, rgb: bytes, level: int = 1) -> bytes:
    """Encodes 8-bit RGB as PNG (filter 0, zlib ``level``) with the standard
    library only."""
    stride = width * 3
    if len(rgb) != stride * height:
        raise ValueError(f"rgb buffer has {len(rgb)} bytes, expected {stride * height} for {width}x{height}")
    raw = b"".join(b"\x00" + rgb[y * stride : (y + 1) * stride] for y in range(height))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, level)) + chunk(b"IEND", b"")


class Blob:
    """Binary data sent as a base64 JSON string. ``encode_reply`` splices
    the base64 text into the line after ``json.dumps`` has encoded the rest:
    base64 needs no JSON escaping, and pushing a megabyte of it through
    ``json.dumps`` would cost several milliseconds a step."""

    __slots__ = ("data",)

    def __init__(self, data: bytes):
        self.data = data


_BLOB_MARK = "\x00blob:%d"
_BLOB_SPLIT = re.compile(rb'"\\u0000blob:(\d+)"')


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def encode_frame(frame: Frame, options: ObservationOptions) -> Dict[str, Any]:
    """The observation fields of one frame as the options ask for them."""
    out: Dict[str, Any] = {"hfov_deg": frame.hfov_deg}
    if options.rgb == "png":
        out["rgb"] = {
            "encoding": "png",
            "width": frame.width,
            "height": frame.height,
            "data": Blob(encode_png(frame.width, frame.height, frame.rgb)),
        }
    elif options.rgb == "raw":
        out["rgb"] = {"encoding": "raw", "shape": [frame.height, frame.width, 3], "data": Blob(frame.rgb)}
    if options.depth and frame.depth is not None:
        out["depth"] = {"encoding": "f32le", "shape": [frame.height, frame.width], "data": Blob(frame.depth)}
    if options.detections:
        out["detections"] = [d.to_json() for d in frame.detections]
    return out


def pose_json(x: float, y: float, yaw: float) -> Dict[str, Any]:
    """A ground-truth pose in the simulator's world frame with navkit axes
    (x forward at yaw 0, y left, yaw CCW)."""
    return {"x": finite(x), "y": finite(y), "yaw": finite(yaw), "ground_truth": True}


def decode_request(line: bytes) -> Dict[str, Any]:
    """Parses one request line into an object with an ``op`` string."""
    try:
        msg = json.loads(line)
    except (ValueError, UnicodeDecodeError) as e:
        raise BridgeError("parse", f"not valid JSON: {e}") from None
    if not isinstance(msg, dict):
        raise BridgeError("parse", f"a request must be a JSON object, got {type(msg).__name__}")
    op = msg.get("op")
    if not isinstance(op, str):
        raise BridgeError("bad_request", "missing string field 'op'")
    return msg


def request_id(msg: Any) -> Any:
    """The request's id if it is a usable JSON scalar, else None."""
    if isinstance(msg, dict):
        rid = msg.get("id")
        if isinstance(rid, (int, str)) and not isinstance(rid, bool):
            return rid
    return None


def swap_back(o: Any) -> Any:
    """``o`` with every Blob replaced by its base64 string."""
    if isinstance(o, Blob):
        return b64(o.data)
    if isinstance(o, dict):
        return {k: swap_back(v) for k, v in o.items()}
    if isinstance(o, list):
        return [swap_back(v) for v in o]
    return o


def encode_reply(rid: Any, result: Optional[Dict[str, Any]] = None, error: Optional[BridgeError] = None,
                 backend_ms: Optional[float] = None, encode_ms: Optional[float] = None) -> bytes:
    """One reply line. ``timing.backend_ms`` is the time spent in the
    simulator (stepping, rendering, detecting); ``timing.encode_ms`` the
    server's own work (validation, PNG/base64 encoding) before the JSON
    text is built."""
    msg: Dict[str, Any] = {"id": rid}
    if error is not None:
        msg["error"] = error.to_json()
    else:
        msg["result"] = result if result is not None else {}
    if backend_ms is not None:
        timing = {"backend_ms": round(backend_ms, 4)}
        if encode_ms is not None:
            timing["encode_ms"] = round(max(encode_ms, 0.0), 4)
        msg["timing"] = timing
    blobs: List[bytes] = []

    def swap(o: Any) -> Any:
        if isinstance(o, Blob):
            blobs.append(o.data)
            return _BLOB_MARK % (len(blobs) - 1)
        if isinstance(o, dict):
            return {k: swap(v) for k, v in o.items()}
        if isinstance(o, list):
            return [swap(v) for v in o]
        return o

    text = json.dumps(swap(msg), separators=(",", ":"), allow_nan=False).encode("utf-8")
    if not blobs:
        return text + b"\n"
    pieces = _BLOB_SPLIT.split(text)
    if [int(i) for i in pieces[1::2]] != list(range(len(blobs))):
        # A string of the request's own happened to look like a marker:
        # fall back to encoding the base64 through json.dumps.
        msg = swap_back(msg)
        return (json.dumps(msg, separators=(",", ":"), allow_nan=False) + "\n").encode("utf-8")
    out: List[bytes] = []
    for k, piece in enumerate(pieces):
        if k % 2 == 0:
            out.append(piece)
        else:
            out.extend((b'"', base64.b64encode(blobs[int(piece)]), b'"'))
    out.append(b"\n")
    return b"".join(out)
