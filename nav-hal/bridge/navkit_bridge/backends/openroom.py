"""``openroom``: an empty square room with one target object, in the
standard library only.

The agent is a disc moving in discrete steps; the camera is a column ray
caster producing a small flat image (every row of a column shows what the
column's ray hits first: the target or a wall, shaded by distance) and an
exact z-depth. Because the room is convex and empty, the shortest path to
the success region is a straight line, so SPL is exact.

It exists for protocol tests and for measuring the bridge's own overhead
(a step costs microseconds), and it runs where neither numpy nor a GPU is
installed.
"""

from __future__ import annotations

import argparse
import math
import random
import struct
from typing import List, Optional, Tuple

from .. import __version__
from ..protocol import BridgeError, Detection, EpisodeSpec, Frame
from .base import Backend, BackendInfo, EpisodeInfo, Observation, StepResult, View

#: Objects the target is drawn from: label and RGB colour.
TARGETS = (
    ("red box", (220, 40, 40)),
    ("green ball", (40, 190, 60)),
    ("blue key", (50, 80, 220)),
    ("yellow box", (230, 210, 40)),
)


class OpenRoomBackend(Backend):
    """See the module documentation."""

    def __init__(self, half_size_m: float = 4.0, width: int = 16, height: int = 12, hfov_deg: float = 90.0,
                 forward_m: float = 0.25, turn_deg: float = 30.0, max_steps: int = 500, base_seed: int = 0,
                 success_distance_m: float = 1.0):
        if width < 1 or height < 1:
            raise ValueError("image size must be positive")
        self.half = half_size_m
        self.width, self.height, self.hfov_deg = width, height, hfov_deg
        self.forward_m, self.turn_deg = forward_m, turn_deg
        self.max_steps, self.base_seed = max_steps, base_seed
        self.success_distance_m = success_distance_m
        self.agent_radius = 0.2
        self.target_radius = 0.3
        self.next_index = 0
        self.pose = (0.0, 0.0, 0.0)
        self.target = (0.0, 0.0)
        self.label, self.colour = TARGETS[0]
        self.steps = 0
        self.path_m = 0.0
        self.geodesic_m = 0.0

    @staticmethod
    def from_args(args: argparse.Namespace) -> "OpenRoomBackend":
        return OpenRoomBackend(
            forward_m=args.forward_m,
            turn_deg=args.turn_deg,
            max_steps=args.max_steps,
            base_seed=args.seed,
            width=args.width or 16,
            height=args.height or 12,
        )

    def info(self) -> BackendInfo:
        return BackendInfo(
            name="openroom",
            version=__version__,
            simulator="navkit openroom",
            simulator_version=__version__,
            forward_m=self.forward_m,
            turn_deg=self.turn_deg,
            width=self.width,
            height=self.height,
            hfov_deg=self.hfov_deg,
            depth=True,
            pose=True,
            detections=True,
            max_steps=self.max_steps,
            scenes=["openroom"],
            agent_radius_m=self.agent_radius,
        )

    # -- episodes -------------------------------------------------------------

    def reset(self, spec: EpisodeSpec) -> Tuple[EpisodeInfo, Observation]:
        if spec.scene is not None and spec.scene != "openroom":
            raise BridgeError("bad_request", f"unknown scene {spec.scene!r}: this backend has only 'openroom'")
        index = spec.index if spec.index is not None else self.next_index
        self.next_index = index + 1
        seed = spec.seed if spec.seed is not None else self.base_seed + index
        rng = random.Random(seed)
        self.label, self.colour = TARGETS[rng.randrange(len(TARGETS))]
        lim = self.half - 0.6
        self.target = (rng.uniform(-lim, lim), rng.uniform(-lim, lim))
        while True:
            x, y = rng.uniform(-lim, lim), rng.uniform(-lim, lim)
            if self.surface_distance((x, y)) > 2.0:
                break
        self.pose = (x, y, rng.uniform(-math.pi, math.pi))
        self.steps, self.path_m = 0, 0.0
        self.geodesic_m = self.distance_to_goal()
        info = EpisodeInfo(
            episode_id=f"openroom-{seed}",
            scene_id="openroom",
            target_object=self.label,
            index=index,
            seed=seed,
            max_steps=self.max_steps,
            success_distance_m=self.success_distance_m,
        )
        return info, Observation(self.render(self.pose[2]), self.pose)

    def step(self, action: str) -> StepResult:
        x, y, yaw = self.pose
        collided, moved = False, 0.0
        if action == "forward":
            nx, ny = x + self.forward_m * math.cos(yaw), y + self.forward_m * math.sin(yaw)
            if self.free((nx, ny)):
                self.pose, moved = (nx, ny, yaw), self.forward_m
            else:
                collided = True
        elif action == "turn_left":
            self.pose = (x, y, wrap(yaw + math.radians(self.turn_deg)))
        elif action == "turn_right":
            self.pose = (x, y, wrap(yaw - math.radians(self.turn_deg)))
        self.steps += 1
        self.path_m += moved
        done = action == "stop" or self.steps >= self.max_steps
        metrics = None
        if done:
            d = self.distance_to_goal()
            success = action == "stop" and self.surface_distance(self.pose[:2]) <= self.success_distance_m
            spl = (self.geodesic_m / max(self.path_m, self.geodesic_m, 1e-12) if self.geodesic_m > 0 else 1.0) if success else 0.0
            metrics = {
                "success": success,
                "spl": spl,
                "distance_to_goal": d,
                "path_length_m": self.path_m,
                "geodesic_m": self.geodesic_m,
                "steps": self.steps,
            }
        return StepResult(Observation(self.render(self.pose[2]), self.pose), collided, moved, done, metrics)

    def panorama(self, views: int) -> List[View]:
        yaw = self.pose[2]
        out = []
        for k in range(views):
            heading = 360.0 * k / views
            out.append(View(heading_deg=heading if heading <= 180.0 else heading - 360.0,
                            frame=self.render(wrap(yaw + math.radians(heading)))))
        return out

    # -- geometry -----------------------------------------------------------

    def surface_distance(self, p: Tuple[float, float]) -> float:
        return math.hypot(p[0] - self.target[0], p[1] - self.target[1]) - self.target_radius

    def distance_to_goal(self) -> float:
        """Straight-line distance to the success region (exact: the room is
        convex and empty)."""
        return max(0.0, self.surface_distance(self.pose[:2]) - self.success_distance_m)

    def free(self, p: Tuple[float, float]) -> bool:
        lim = self.half - self.agent_radius
        return abs(p[0]) <= lim and abs(p[1]) <= lim and self.surface_distance(p) >= self.agent_radius

    def render(self, yaw: float) -> Frame:
        """Casts one ray per column from the agent at heading ``yaw``."""
        x, y = self.pose[0], self.pose[1]
        w, h = self.width, self.height
        focal = (w / 2.0) / math.tan(math.radians(self.hfov_deg) / 2.0)
        column_rgb: List[bytes] = []
        depths: List[float] = []
        hit_columns: List[int] = []
        hit_dist: Optional[float] = None
        for col in range(w):
            bearing = math.atan((w / 2.0 - (col + 0.5)) / focal)
            a = yaw + bearing
            dx, dy = math.cos(a), math.sin(a)
            wall = wall_distance(x, y, dx, dy, self.half)
            t = ray_circle(x, y, dx, dy, self.target, self.target_radius)
            if t is not None and t < wall:
                shade = max(0.35, 1.0 - t / 12.0)
                colour = tuple(int(c * shade) for c in self.colour)
                dist = t
                hit_columns.append(col)
                hit_dist = t if hit_dist is None else min(hit_dist, t)
            else:
                g = int(200 * max(0.35, 1.0 - wall / 12.0))
                colour = (g, g, g - 10)
                dist = wall
            column_rgb.append(bytes(colour))
            depths.append(dist * math.cos(bearing))
        row = b"".join(column_rgb)
        rgb = row * h
        depth = struct.pack(f"<{w}f", *depths) * h
        detections = []
        if hit_columns and hit_dist is not None:
            bearing = math.atan2(self.target[1] - y, self.target[0] - x) - yaw
            detections.append(Detection(
                label=self.label,
                bearing_rad=wrap(bearing),
                distance_m=max(0.0, hit_dist),
                bbox=[min(hit_columns), 0, max(hit_columns), h - 1],
            ))
        return Frame(width=w, height=h, rgb=rgb, hfov_deg=self.hfov_deg, depth=depth, detections=detections)


def wrap(a: float) -> float:
    """Angle into [-pi, pi)."""
    return (a + math.pi) % (2.0 * math.pi) - math.pi


def wall_distance(x: float, y: float, dx: float, dy: float, half: float) -> float:
    """Distance along (dx, dy) from inside the square [-half, half]^2 to its
    boundary."""
    best = math.inf
    for p, d in ((x, dx), (y, dy)):
        if d > 1e-12:
            best = min(best, (half - p) / d)
        elif d < -1e-12:
            best = min(best, (-half - p) / d)
    return best


def ray_circle(x: float, y: float, dx: float, dy: float, c: Tuple[float, float], r: float) -> Optional[float]:
    """First positive hit of a ray on a circle, if any."""
    ox, oy = x - c[0], y - c[1]
    b = ox * dx + oy * dy
    disc = b * b - (ox * ox + oy * oy - r * r)
    if disc < 0.0:
        return None
    s = math.sqrt(disc)
    for t in (-b - s, -b + s):
        if t > 1e-9:
            return t
    return None
