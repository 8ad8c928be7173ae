"""A fixed-rule pixel-goal policy served as a navkit worker (op ``act``):
``python -m navkit_bridge.rule_policy``.

The stand-in for a learned PixelNav in CI and the example of the ``act``
op (docs/BRIDGE.md, "Workers"). Its rule, from what the request carries:

1. ``stop`` when navkit says the target is within the stopping distance
   (``goal.stop_suggested``) or after ``--max-steps`` actions on this goal;
2. with a goal pixel: turn toward its column while its bearing (through
   the view's field of view) is more than half a turn (plus one pixel) off,
   else ``forward``;
3. without one: turn toward ``goal.angle_deg`` while it is more than half a
   turn off, else ``forward``.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
from typing import Any, Dict, List, Optional

from .protocol import BridgeError
from .worker import Worker, decode_view, need_str, run_worker

log = logging.getLogger("navkit_bridge.rule_policy")


def _number(raw: Any, what: str) -> float:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise BridgeError("bad_request", f"{what} must be a number, got {raw!r}")
    return float(raw)


class RulePolicy(Worker):
    """See the module documentation."""

    name = "rule-policy"

    def __init__(self, max_steps: int = 40, turn_deg: float = 30.0, trace: Optional[str] = None):
        super().__init__()
        self.max_steps = max_steps
        self.turn_deg = turn_deg
        self.trace = open(trace, "a", encoding="utf-8") if trace else None

    def ops(self):
        return {"act": self.act}

    def act(self, msg: Dict[str, Any]) -> Dict[str, Any]:
        reply = self.decide(msg)
        if self.trace is not None:
            self.trace.write(json.dumps({"action": reply["action"], "why": reply["why"],
                                         "steps_since_goal": msg.get("steps_since_goal")}) + "\n")
            self.trace.flush()
        return reply

    def decide(self, msg: Dict[str, Any]) -> Dict[str, Any]:
        need_str(msg, "target")
        view = decode_view(msg.get("view"))
        goal = msg.get("goal")
        if not isinstance(goal, dict):
            raise BridgeError("bad_request", "goal must be an object")
        steps = msg.get("steps_since_goal")
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
            raise BridgeError("bad_request", f"steps_since_goal must be a non-negative integer, got {steps!r}")
        if goal.get("stop_suggested") is True:
            return {"action": "stop", "why": "navkit says the target is within reach"}
        if steps >= self.max_steps:
            return {"action": "stop", "why": f"{self.max_steps} steps on this goal"}
        pixel = goal.get("pixel")
        if pixel is not None:
            if not (isinstance(pixel, list) and len(pixel) == 2):
                raise BridgeError("bad_request", f"goal.pixel must be [x, y] or null, got {pixel!r}")
            x = _number(pixel[0], "goal.pixel[0]")
            if not 0 <= x < view.width:
                raise BridgeError("bad_request", f"goal.pixel[0] must be a column of the {view.width}-pixel-wide view, got {x}")
            centre = x + 0.5
            bbox = goal.get("bbox")
            if isinstance(bbox, list) and len(bbox) == 4:
                # the box's exact centre (the goal pixel is rounded down to a whole pixel)
                centre = (_number(bbox[0], "goal.bbox[0]") + _number(bbox[2], "goal.bbox[2]") + 1.0) / 2.0
            # the column's bearing (positive = left) through the pinhole camera
            focal = (view.width / 2.0) / math.tan(math.radians(view.hfov_deg) / 2.0)
            bearing = math.degrees(math.atan((view.width / 2.0 - centre) / focal))
            # half a turn, plus one pixel's angle for the pixel grid's rounding
            tolerance = self.turn_deg / 2.0 + view.hfov_deg / view.width
            if bearing > tolerance:
                return {"action": "turn_left", "why": "goal pixel left of centre"}
            if bearing < -tolerance:
                return {"action": "turn_right", "why": "goal pixel right of centre"}
            return {"action": "forward", "why": "goal pixel centred"}
        angle = _number(goal.get("angle_deg"), "goal.angle_deg")
        if angle > self.turn_deg / 2.0:
            return {"action": "turn_left", "why": "planner angle to the left"}
        if angle < -self.turn_deg / 2.0:
            return {"action": "turn_right", "why": "planner angle to the right"}
        return {"action": "forward", "why": "planner angle ahead"}


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m navkit_bridge.rule_policy",
                                description="A fixed-rule pixel-goal policy served as a navkit worker (op act).")
    p.add_argument("--max-steps", type=int, default=40, help="stop after this many actions on one goal")
    p.add_argument("--turn-deg", type=float, default=30.0, help="the turn step, degrees")
    p.add_argument("--trace", metavar="FILE", help="append each chosen action as a JSON line to FILE")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    args = p.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=getattr(logging, args.log_level.upper()),
                        format="rule_policy %(levelname)s %(message)s")
    if args.max_steps < 1 or not 0 < args.turn_deg < 180:
        p.error("--max-steps must be >= 1 and --turn-deg within (0, 180)")
    return run_worker(RulePolicy(args.max_steps, args.turn_deg, args.trace))


if __name__ == "__main__":
    sys.exit(main())
