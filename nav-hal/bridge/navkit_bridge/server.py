"""The request loop: reads JSON lines, calls the backend, writes replies.

A bad request never ends the loop: every failure becomes an
``{"id": .., "error": {kind, message}}`` reply, and a simulator exception is
logged to stderr with its traceback. The loop ends on ``close`` or end of
input.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import time
import traceback
from typing import Any, BinaryIO, Callable, Dict, Optional, Tuple

from .backends.base import Backend, BackendUnavailable, Observation
from .protocol import (
    ACTIONS,
    PROTOCOL,
    VERSION,
    BridgeError,
    EpisodeSpec,
    ObservationOptions,
    decode_request,
    encode_frame,
    encode_reply,
    pose_json,
    request_id,
)

log = logging.getLogger("navkit_bridge")

#: Longest request line accepted (requests are small; replies are not limited).
MAX_REQUEST_BYTES = 1 << 20


class Session:
    """Protocol state for one client: observation options and the episode
    state machine (no episode -> running -> done -> reset -> running)."""

    def __init__(self, backend: Optional[Backend], options: ObservationOptions, unavailable: Optional[str] = None):
        self.backend = backend
        self.options = options
        self.unavailable = unavailable
        self.episode_running = False
        self.episode_done = False
        self.steps = 0
        self.closed = False

    # -- dispatch -----------------------------------------------------------

    def handle_line(self, line: bytes) -> bytes:
        """Handles one request line and returns the reply line."""
        rid: Any = None
        start = time.perf_counter()
        try:
            msg = decode_request(line)
            rid = request_id(msg)
            result, backend_s = self.dispatch(msg)
            encode_s = time.perf_counter() - start - backend_s
            return encode_reply(rid, result=result, backend_ms=backend_s * 1e3, encode_ms=encode_s * 1e3)
        except BridgeError as e:
            return encode_reply(rid, error=e)
        except Exception as e:  # a simulator bug must not end the session
            log.error("request %r failed:\n%s", rid, traceback.format_exc())
            return encode_reply(rid, error=BridgeError("backend", f"{type(e).__name__}: {e}"))

    def dispatch(self, msg: Dict[str, Any]) -> Tuple[Dict[str, Any], float]:
        op = msg["op"]
        if op == "close":
            self.closed = True
            return {}, 0.0
        if op == "ping":
            return {}, 0.0
        handler: Optional[Callable[[Dict[str, Any]], Tuple[Dict[str, Any], float]]] = {
            "hello": self.op_hello,
            "reset": self.op_reset,
            "step": self.op_step,
            "panorama": self.op_panorama,
        }.get(op)
        if handler is None:
            raise BridgeError("unknown_op", f"unknown op {op!r}: expected hello, reset, step, panorama, ping or close")
        if self.backend is None:
            raise BridgeError("unavailable", self.unavailable or "the backend did not start")
        return handler(msg)

    # -- operations ---------------------------------------------------------

    def op_hello(self, msg: Dict[str, Any]) -> Tuple[Dict[str, Any], float]:
        protocol, version = msg.get("protocol"), msg.get("version")
        if protocol != PROTOCOL:
            raise BridgeError("version", f"this server speaks {PROTOCOL!r}, the client asked for {protocol!r}")
        if version != VERSION or isinstance(version, bool):
            raise BridgeError("version", f"this server speaks {PROTOCOL} version {VERSION}, the client asked for version {version!r}")
        assert self.backend is not None
        info = self.backend.info()
        options = ObservationOptions(**self.options.to_json())
        options.update(msg.get("observation"))
        if options.depth and not info.depth:
            raise BridgeError("unsupported", f"backend {info.name} has no depth sensor")
        if options.pose and not info.pose:
            raise BridgeError("unsupported", f"backend {info.name} cannot report a ground-truth pose")
        if options.detections and not info.detections:
            options.detections = False  # detections are optional extras: silently off
        self.options = options
        from . import __version__

        result = {
            "protocol": PROTOCOL,
            "version": VERSION,
            "server_version": __version__,
            "backend": {
                "name": info.name,
                "version": info.version,
                "simulator": info.simulator,
                "simulator_version": info.simulator_version,
            },
            "capabilities": {
                "rgb": True,
                "depth": info.depth,
                "pose": info.pose,
                "detections": info.detections,
                "panorama": info.panorama,
                "metrics": True,
            },
            "actions": list(ACTIONS),
            "step": {"forward_m": info.forward_m, "turn_deg": info.turn_deg},
            "camera": {"width": info.width, "height": info.height, "hfov_deg": info.hfov_deg},
            "observation": options.to_json(),
            "max_steps": info.max_steps,
            "scenes": list(info.scenes),
        }
        # optional geometry: the client derives planar scans from depth with the camera height and sizes its
        # obstacle margins with the agent's radius
        if info.camera_height_m is not None:
            result["camera"]["height_m"] = info.camera_height_m
        if info.agent_radius_m is not None:
            result["agent"] = {"radius_m": info.agent_radius_m}
        return result, 0.0

    def op_reset(self, msg: Dict[str, Any]) -> Tuple[Dict[str, Any], float]:
        spec = EpisodeSpec.parse(msg.get("episode"))
        assert self.backend is not None
        t0 = time.perf_counter()
        episode, obs = self.backend.reset(spec)
        backend_s = time.perf_counter() - t0
        self.episode_running, self.episode_done, self.steps = True, False, 0
        return {"episode": episode.to_json(), "observation": self.observation(obs), "done": False}, backend_s

    def op_step(self, msg: Dict[str, Any]) -> Tuple[Dict[str, Any], float]:
        action = msg.get("action")
        if action not in ACTIONS:
            raise BridgeError("bad_request", f"action must be one of {', '.join(ACTIONS)}, got {action!r}")
        self.require_running("step")
        assert self.backend is not None
        t0 = time.perf_counter()
        res = self.backend.step(action)
        backend_s = time.perf_counter() - t0
        self.steps += 1
        if res.done:
            self.episode_done = True
        result: Dict[str, Any] = {
            "observation": self.observation(res.observation),
            "info": {"collided": bool(res.collided), "moved_m": float(res.moved_m), "steps": self.steps},
            "done": bool(res.done),
        }
        if res.metrics is not None:
            result["metrics"] = res.metrics
        return result, backend_s

    def op_panorama(self, msg: Dict[str, Any]) -> Tuple[Dict[str, Any], float]:
        views = msg.get("views", 12)
        if isinstance(views, bool) or not isinstance(views, int) or not 1 <= views <= 360:
            raise BridgeError("bad_request", f"views must be an integer within 1..=360, got {views!r}")
        if not self.episode_running:
            raise BridgeError("no_episode", "panorama before the first reset")
        assert self.backend is not None
        t0 = time.perf_counter()
        shots = self.backend.panorama(views)
        backend_s = time.perf_counter() - t0
        out = []
        for view in shots:
            entry = encode_frame(view.frame, self.options)
            entry["heading_deg"] = view.heading_deg
            out.append(entry)
        return {"views": out}, backend_s

    # -- helpers ------------------------------------------------------------

    def require_running(self, op: str) -> None:
        if not self.episode_running:
            raise BridgeError("no_episode", f"{op} before the first reset")
        if self.episode_done:
            raise BridgeError("episode_over", f"{op} after the episode ended: send reset first")

    def observation(self, obs: Observation) -> Dict[str, Any]:
        out = encode_frame(obs.frame, self.options)
        out["step"] = self.steps
        if self.options.pose and obs.pose is not None:
            out["pose"] = pose_json(*obs.pose)
        return out


def serve_stream(session: Any, reader: BinaryIO, write: Callable[[bytes], None],
                 max_bytes: int = MAX_REQUEST_BYTES) -> None:
    """Serves requests from ``reader`` until ``close`` or end of input.
    ``session`` has ``handle_line(bytes) -> bytes`` and ``closed`` (a
    :class:`Session`, or a worker's)."""
    while not session.closed:
        line = reader.readline(max_bytes + 1)
        if not line:
            return
        if len(line) > max_bytes and not line.endswith(b"\n"):
            while True:  # skip the rest of the oversized line
                rest = reader.readline(max_bytes)
                if not rest or rest.endswith(b"\n"):
                    break
            write(encode_reply(None, error=BridgeError("parse", f"request line longer than {max_bytes} bytes")))
            continue
        if not line.strip():
            continue
        write(session.handle_line(line))


def protocol_stdout() -> BinaryIO:
    """Takes over the process's stdout for the protocol and points file
    descriptor 1 (and ``sys.stdout``) at stderr, so that whatever a simulator
    prints, from Python or C, cannot corrupt the reply stream."""
    sys.stdout.flush()
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def serve_stdio(session: Session, out: BinaryIO) -> None:
    def write(data: bytes) -> None:
        out.write(data)

    serve_stream(session, sys.stdin.buffer, write)


def parse_listen(addr: str) -> Tuple[str, int]:
    host, sep, port = addr.rpartition(":")
    if not sep or not host:
        raise ValueError(f"--listen wants HOST:PORT, got {addr!r}")
    try:
        port_n = int(port)
    except ValueError:
        raise ValueError(f"--listen port must be a number, got {port!r}") from None
    if not 0 <= port_n <= 65535:
        raise ValueError(f"--listen port must be within 0..=65535, got {port_n}")
    return host.strip("[]"), port_n


def serve_tcp(make_session: Callable[[], Session], addr: str, once: bool, announce: BinaryIO) -> None:
    """Listens on ``addr`` (HOST:PORT; port 0 picks a free one) and serves
    one client at a time. Writes ``{"listening": "HOST:PORT"}`` to
    ``announce`` once the socket is bound."""
    host, port = parse_listen(addr)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as srv:
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind((host, port))
        srv.listen(1)
        bound = srv.getsockname()
        shown = f"[{bound[0]}]:{bound[1]}" if family == socket.AF_INET6 else f"{bound[0]}:{bound[1]}"
        announce.write(('{"listening":"%s"}\n' % shown).encode("ascii"))
        announce.flush()
        log.info("listening on %s", shown)
        while True:
            conn, peer = srv.accept()
            log.info("client %s connected", peer)
            with conn:
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                session = make_session()
                try:
                    with conn.makefile("rb") as reader:
                        serve_stream(session, reader, conn.sendall)
                except OSError as e:
                    log.warning("client %s: %s", peer, e)
            log.info("client %s gone", peer)
            if once:
                return


def make_backend(factory: Callable[[], Backend]) -> Tuple[Optional[Backend], Optional[str]]:
    """Builds the backend; a missing simulator becomes a message served as
    ``unavailable`` errors instead of a crash."""
    try:
        return factory(), None
    except BackendUnavailable as e:
        log.error("%s", e)
        return None, str(e)
