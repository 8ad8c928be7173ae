"""Workers: helper processes that serve navkit one op on views it sends —
``detect`` (an object detector as the ObjectNav perception stage) or ``act``
(a low-level policy such as PixelNav). docs/BRIDGE.md, "Workers", is the
reference.

A worker speaks the bridge protocol's framing (one JSON object per line,
ids, ``{"error": {kind, message}}`` replies) and its ``hello`` handshake
(protocol ``navkit-bridge``, version 1), and names the ops it serves in the
``hello`` reply. It never touches a simulator: everything it may look at
comes in the request's ``view``. Write one by subclassing :class:`Worker`
and calling :func:`run_worker`.
"""

from __future__ import annotations

import base64
import logging
import struct
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import __version__
from .protocol import PROTOCOL, VERSION, BridgeError, decode_request, encode_reply, request_id

log = logging.getLogger("navkit_bridge.worker")

#: Longest request line a worker accepts: a 640x480 RGB-D view is ~3 MB of base64.
MAX_WORKER_REQUEST_BYTES = 64 << 20


@dataclass
class View:
    """The image a request carries: raw RGB rows (top first), optional
    depth in metres (row-major; inf = nothing in range, NaN = invalid) and
    the horizontal field of view."""

    width: int
    height: int
    rgb: bytes
    depth: Optional[List[float]]
    hfov_deg: float

    def pixel(self, x: int, y: int) -> Tuple[int, int, int]:
        i = 3 * (y * self.width + x)
        return self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]

    def depth_at(self, x: int, y: int) -> Optional[float]:
        if self.depth is None:
            return None
        return self.depth[y * self.width + x]


def _b64(raw: Any, what: str) -> bytes:
    if not isinstance(raw, str):
        raise BridgeError("bad_request", f"{what}.data must be a base64 string")
    try:
        return base64.b64decode(raw, validate=True)
    except ValueError as e:
        raise BridgeError("bad_request", f"{what}.data: bad base64: {e}") from None


def _shape(raw: Any, what: str, dims: int) -> List[int]:
    if not (isinstance(raw, list) and len(raw) == dims and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in raw)):
        raise BridgeError("bad_request", f"{what}.shape must be {dims} positive integers, got {raw!r}")
    return raw


def decode_view(raw: Any) -> View:
    """Parses a request's ``view`` (RGB required, depth optional)."""
    if not isinstance(raw, dict):
        raise BridgeError("bad_request", "view must be an object")
    rgb = raw.get("rgb")
    if not isinstance(rgb, dict) or rgb.get("encoding") != "raw":
        raise BridgeError("bad_request", "view.rgb must be {\"encoding\": \"raw\", \"shape\": [H, W, 3], \"data\": ...}")
    h, w, c = _shape(rgb.get("shape"), "view.rgb", 3)
    if c != 3:
        raise BridgeError("bad_request", f"view.rgb.shape[2] must be 3, got {c}")
    data = _b64(rgb.get("data"), "view.rgb")
    if len(data) != w * h * 3:
        raise BridgeError("bad_request", f"view.rgb.data has {len(data)} bytes, shape [{h}, {w}, 3] needs {w * h * 3}")
    hfov = raw.get("hfov_deg")
    if isinstance(hfov, bool) or not isinstance(hfov, (int, float)) or not 0 < hfov < 180:
        raise BridgeError("bad_request", f"view.hfov_deg must be a number in (0, 180), got {hfov!r}")
    depth: Optional[List[float]] = None
    d = raw.get("depth")
    if d is not None:
        if not isinstance(d, dict) or d.get("encoding") != "f32le":
            raise BridgeError("bad_request", "view.depth must be {\"encoding\": \"f32le\", \"shape\": [H, W], \"data\": ...}")
        dh, dw = _shape(d.get("shape"), "view.depth", 2)
        if (dh, dw) != (h, w):
            raise BridgeError("bad_request", f"view.depth.shape [{dh}, {dw}] differs from the RGB image's [{h}, {w}]")
        dd = _b64(d.get("data"), "view.depth")
        if len(dd) != 4 * w * h:
            raise BridgeError("bad_request", f"view.depth.data has {len(dd)} bytes, shape [{h}, {w}] needs {4 * w * h}")
        depth = list(struct.unpack(f"<{w * h}f", dd))
    return View(width=w, height=h, rgb=data, depth=depth, hfov_deg=float(hfov))


def need_str(msg: Dict[str, Any], key: str) -> str:
    v = msg.get(key)
    if not isinstance(v, str) or not v:
        raise BridgeError("bad_request", f"{key} must be a non-empty string, got {v!r}")
    return v


class Worker:
    """Base class: the handshake, ``ping``/``close`` and dispatch. A
    subclass sets ``name`` and ``ops`` (op name -> method taking the
    request and returning the result object)."""

    name = "worker"
    version = __version__

    def __init__(self) -> None:
        self.closed = False

    def ops(self) -> Dict[str, Callable[[Dict[str, Any]], Dict[str, Any]]]:
        return {}

    def handle_line(self, line: bytes) -> bytes:
        rid: Any = None
        start = time.perf_counter()
        try:
            msg = decode_request(line)
            rid = request_id(msg)
            result = self.dispatch(msg)
            return encode_reply(rid, result=result, backend_ms=(time.perf_counter() - start) * 1e3, encode_ms=0.0)
        except BridgeError as e:
            return encode_reply(rid, error=e)
        except Exception as e:  # a model bug must not end the session
            log.error("request %r failed:\n%s", rid, traceback.format_exc())
            return encode_reply(rid, error=BridgeError("backend", f"{type(e).__name__}: {e}"))

    def dispatch(self, msg: Dict[str, Any]) -> Dict[str, Any]:
        op = msg["op"]
        if op == "hello":
            if msg.get("protocol") != PROTOCOL or msg.get("version") != VERSION:
                raise BridgeError("version", f"this worker speaks {PROTOCOL!r} version {VERSION}, "
                                  f"got {msg.get('protocol')!r} version {msg.get('version')!r}")
            return {"protocol": PROTOCOL, "version": VERSION, "server_version": __version__,
                    "worker": {"name": self.name, "version": self.version}, "ops": sorted(self.ops())}
        if op == "ping":
            return {}
        if op == "close":
            self.closed = True
            return {}
        handler = self.ops().get(op)
        if handler is None:
            raise BridgeError("unknown_op", f"unknown op {op!r} (this worker serves hello, ping, close, {', '.join(sorted(self.ops()))})")
        return handler(msg)


def run_worker(worker: Worker) -> int:
    """Serves ``worker`` on stdin/stdout until ``close`` or end of input
    (logs go to stderr; stdout is protected as the bridge server's is)."""
    from .server import protocol_stdout, serve_stream

    out = protocol_stdout()
    serve_stream(worker, sys.stdin.buffer, out.write, max_bytes=MAX_WORKER_REQUEST_BYTES)
    return 0
