"""Command line: ``python -m navkit_bridge --backend NAME [options]``.

Serves the bridge protocol on stdin/stdout (the default; logs go to stderr)
or, with ``--listen 127.0.0.1:PORT``, on TCP. ``--check`` only tells whether
the backend can start.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import List, Optional

from .backends import BACKENDS, BackendUnavailable
from .protocol import ObservationOptions
from .server import Session, make_backend, protocol_stdout, serve_stdio, serve_tcp


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m navkit_bridge",
        description="Serve a simulator to navkit over the navkit bridge protocol (docs/BRIDGE.md).",
    )
    p.add_argument("--backend", required=True, choices=sorted(BACKENDS), help="simulator to serve")
    p.add_argument("--listen", metavar="HOST:PORT", help="serve TCP on this address (e.g. 127.0.0.1:7450; port 0 picks one) instead of stdin/stdout")
    p.add_argument("--once", action="store_true", help="with --listen: exit after the first client disconnects")
    p.add_argument("--check", action="store_true", help="only check that the backend can start; exit 0 if so, 3 if not")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    obs = p.add_argument_group("observations (defaults; a client may change them in hello)")
    obs.add_argument("--rgb", default="raw", choices=["raw", "png", "none"], help="RGB encoding (png is ~3x smaller but costs 5-10 ms a frame)")
    obs.add_argument("--depth", action="store_true", help="send depth images")
    obs.add_argument("--pose", action="store_true", help="send the ground-truth pose (off: seed 000 uses dead reckoning)")
    obs.add_argument("--no-detections", action="store_true", help="do not send ground-truth detections")
    ep = p.add_argument_group("episodes")
    ep.add_argument("--seed", type=int, default=0, help="episode index i uses seed SEED + i (openroom, miniworld)")
    ep.add_argument("--max-steps", type=int, default=500, help="steps before an episode ends unsuccessfully")
    ep.add_argument("--forward-m", type=float, default=0.25, help="forward step, metres")
    ep.add_argument("--turn-deg", type=float, default=30.0, help="turn step, degrees")
    ep.add_argument("--width", type=int, default=None, help="camera width in pixels (backend default if absent)")
    ep.add_argument("--height", type=int, default=None, help="camera height in pixels (backend default if absent)")
    mw = p.add_argument_group("miniworld")
    mw.add_argument("--scene", default="house,fourrooms", help="comma-separated scenes; episode i uses scene i mod n (house, fourrooms)")
    hb = p.add_argument_group("habitat")
    hb.add_argument("--config", help="habitat-lab ObjectNav config, e.g. benchmark/nav/objectnav/objectnav_hm3d.yaml")
    hb.add_argument("--split", help="dataset split (habitat.dataset.split), e.g. val")
    hb.add_argument("--data-path", help="episode dataset file (habitat.dataset.data_path)")
    hb.add_argument("--scenes-dir", help="scene directory (habitat.dataset.scenes_dir)")
    hb.add_argument("--override", action="append", default=[], metavar="KEY=VALUE", help="extra habitat config override (repeatable)")
    return p


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, args.log_level.upper()),
        format="navkit_bridge %(levelname)s %(message)s",
    )
    if args.max_steps < 1:
        print("--max-steps must be at least 1", file=sys.stderr)
        return 2
    options = ObservationOptions(rgb=args.rgb, depth=args.depth, pose=args.pose, detections=not args.no_detections)
    factory = BACKENDS[args.backend]
    if args.check:
        try:
            info = factory(args).info()
        except BackendUnavailable as e:
            print(f"backend {args.backend} unavailable: {e}", file=sys.stderr)
            return 3
        print(f"backend {info.name} ok: {info.simulator} {info.simulator_version}")
        return 0
    # Claim stdout before any simulator is imported: whatever it prints goes to stderr.
    out = protocol_stdout()
    backend, unavailable = make_backend(lambda: factory(args))
    try:
        if args.listen:
            try:
                serve_tcp(lambda: Session(backend, ObservationOptions(**options.to_json()), unavailable), args.listen, args.once, out)
            except ValueError as e:
                logging.getLogger("navkit_bridge").error("%s", e)
                return 2
        else:
            serve_stdio(Session(backend, options, unavailable), out)
    except KeyboardInterrupt:
        pass
    finally:
        if backend is not None:
            backend.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
