"""The ``habitat`` backend: habitat-lab's ObjectNav task in Habitat-sim.

Written against habitat-lab's documented API (0.2.4 and later, Hydra
configs): ``habitat.get_config(config_path, overrides=[...])`` and
``habitat.Env(config=...)``. The forward step (0.25 m) and turn angle (30
deg) are set through the overrides ``habitat.simulator.forward_step_size``
and ``habitat.simulator.turn_angle``; the episode limit through
``habitat.environment.max_episode_steps``. Actions go to ``env.step`` by
name (MOVE_FORWARD / TURN_LEFT / TURN_RIGHT / STOP, matched
case-insensitively against the task's action space), and the episode's
metrics come from ``env.get_metrics()`` (``success``, ``spl``,
``distance_to_goal``): Habitat's own SR and SPL.

Panoramas are rendered with ``env.sim.get_observations_at(position,
rotation)`` at the agent's position rotated by 360/views degree steps
about the up axis, after which the simulator restores the agent's pose.
These turns are not ``env.step`` calls, so they do not count towards the
episode's step limit, and since they do not translate the agent they
leave Habitat's path length, and therefore SPL, unchanged.

Nothing here imports Habitat until the backend is constructed; without
habitat-lab installed construction raises ``BackendUnavailable`` with
installation instructions.
"""

from __future__ import annotations

import argparse
import logging
import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import __version__
from ..protocol import BridgeError, EpisodeSpec, Frame
from .base import Backend, BackendInfo, BackendUnavailable, EpisodeInfo, Observation, StepResult, View

log = logging.getLogger("navkit_bridge.habitat")

INSTALL_HINT = (
    "the habitat backend needs habitat-sim and habitat-lab: "
    "`conda install habitat-sim headless -c conda-forge -c aihabitat`, then `pip install habitat-lab` "
    "(docs/BRIDGE.md, 'Running with Habitat')"
)

#: navkit action -> habitat-lab action name (matched case-insensitively, so
#: both MOVE_FORWARD and move_forward spellings work).
ACTION_NAMES = {"forward": "move_forward", "turn_left": "turn_left", "turn_right": "turn_right", "stop": "stop"}


def import_habitat():
    """Imports habitat-lab, or explains how to install it."""
    try:
        import habitat
    except Exception as e:  # ImportError, or habitat-sim failing to load its libraries
        raise BackendUnavailable(f"{INSTALL_HINT}; import failed: {type(e).__name__}: {e}") from None
    return habitat


def config_overrides(forward_m: float, turn_deg: float, max_steps: int, split: Optional[str], data_path: Optional[str],
                     scenes_dir: Optional[str], extra: Sequence[str]) -> List[str]:
    """The Hydra overrides the backend applies to the user's config; user
    overrides come last and win."""
    out = [
        f"habitat.simulator.forward_step_size={forward_m}",
        f"habitat.simulator.turn_angle={int(turn_deg) if float(turn_deg).is_integer() else turn_deg}",
        f"habitat.environment.max_episode_steps={max_steps}",
    ]
    if split:
        out.append(f"habitat.dataset.split={split}")
    if data_path:
        out.append(f"habitat.dataset.data_path={data_path}")
    if scenes_dir:
        out.append(f"habitat.dataset.scenes_dir={scenes_dir}")
    for item in extra:
        if "=" not in item:
            raise ValueError(f"--override wants KEY=VALUE, got {item!r}")
        out.append(item)
    return out


def lookup(cfg: Any, path: str, default: Any) -> Any:
    """``cfg.a.b.c`` or ``default`` when any part is missing."""
    node = cfg
    for part in path.split("."):
        try:
            node = node[part] if isinstance(node, dict) else getattr(node, part)
        except (AttributeError, KeyError, TypeError):
            return default
        if node is None:
            return default
    return node


def quat_coeffs(q: Any) -> Tuple[float, float, float, float]:
    """(x, y, z, w) of a numpy-quaternion, a magnum quaternion or a
    sequence already in (x, y, z, w) order."""
    if all(hasattr(q, a) for a in ("w", "x", "y", "z")):
        return float(q.x), float(q.y), float(q.z), float(q.w)
    if hasattr(q, "scalar") and hasattr(q, "vector"):
        v = q.vector
        return float(v[0]), float(v[1]), float(v[2]), float(q.scalar)
    x, y, z, w = (float(c) for c in q)
    return x, y, z, w


def turned(q: Any, angle_rad: float) -> List[float]:
    """Coefficients (x, y, z, w) of ``q`` followed by a turn of ``angle_rad``
    about the agent's up axis (+y; positive = left)."""
    x1, y1, z1, w1 = quat_coeffs(q)
    s, c = math.sin(angle_rad / 2.0), math.cos(angle_rad / 2.0)
    # q * (c, 0, s, 0) written out.
    return [x1 * c - z1 * s, y1 * c + w1 * s, z1 * c + x1 * s, w1 * c - y1 * s]


def heading(q: Any) -> float:
    """Yaw of an upright agent: its rotation about +y (0 = facing -z)."""
    x, y, z, w = quat_coeffs(q)
    # forward (-z) rotated by q, projected on the ground plane
    fx = -2.0 * (x * z + w * y)
    fz = -(1.0 - 2.0 * (x * x + y * y))
    return math.atan2(-fx, -fz)


def sensor_height(position: Any) -> Optional[float]:
    """The height (metres) of a sensor mounted at ``position`` ([x, y, z]
    relative to the agent's base, y up), or None when not a usable list."""
    try:
        h = float(position[1])
    except (TypeError, ValueError, IndexError, KeyError):
        return None
    return h if math.isfinite(h) and h > 0.0 else None


def to_navkit(position: Sequence[float], yaw: float) -> Tuple[float, float, float]:
    """Habitat (x right, y up, z back) to navkit axes: x = -z, y = -x."""
    return -float(position[2]), -float(position[0]), (yaw + math.pi) % (2.0 * math.pi) - math.pi


class HabitatBackend(Backend):
    """See the module documentation."""

    def __init__(self, config_path: str, forward_m: float = 0.25, turn_deg: float = 30.0, max_steps: int = 500,
                 split: Optional[str] = None, data_path: Optional[str] = None, scenes_dir: Optional[str] = None,
                 overrides: Sequence[str] = ()):
        self.habitat = import_habitat()
        if not config_path:
            raise BackendUnavailable(
                "the habitat backend needs --config, e.g. benchmark/nav/objectnav/objectnav_hm3d.yaml"
            )
        self.forward_m, self.turn_deg, self.max_steps = forward_m, turn_deg, max_steps
        try:
            overrides_list = config_overrides(forward_m, turn_deg, max_steps, split, data_path, scenes_dir, overrides)
            self.config = self.habitat.get_config(config_path, overrides=overrides_list)
        except Exception as e:
            raise BackendUnavailable(f"habitat could not load config {config_path!r}: {type(e).__name__}: {e}") from None
        sensors = "habitat.simulator.agents.main_agent.sim_sensors"
        self.width = int(lookup(self.config, f"{sensors}.rgb_sensor.width", 640))
        self.height = int(lookup(self.config, f"{sensors}.rgb_sensor.height", 480))
        self.hfov_deg = float(lookup(self.config, f"{sensors}.rgb_sensor.hfov", 79.0))
        self.has_depth = lookup(self.config, f"{sensors}.depth_sensor", None) is not None
        self.depth_normalized = bool(lookup(self.config, f"{sensors}.depth_sensor.normalize_depth", True))
        self.min_depth = float(lookup(self.config, f"{sensors}.depth_sensor.min_depth", 0.5))
        self.max_depth = float(lookup(self.config, f"{sensors}.depth_sensor.max_depth", 5.0))
        self.camera_height_m = sensor_height(lookup(self.config, f"{sensors}.depth_sensor.position", None))
        radius = lookup(self.config, "habitat.simulator.agents.main_agent.radius", None)
        self.agent_radius_m = float(radius) if isinstance(radius, (int, float)) and radius > 0 else None
        self.env = None
        self.actions: Dict[str, Any] = {}
        self.episode_running = False

    @staticmethod
    def from_args(args: argparse.Namespace) -> "HabitatBackend":
        return HabitatBackend(
            args.config or "",
            forward_m=args.forward_m,
            turn_deg=args.turn_deg,
            max_steps=args.max_steps,
            split=args.split,
            data_path=args.data_path,
            scenes_dir=args.scenes_dir,
            overrides=args.override,
        )

    def info(self) -> BackendInfo:
        return BackendInfo(
            name="habitat",
            version=__version__,
            simulator="habitat-lab",
            simulator_version=str(getattr(self.habitat, "__version__", "unknown")),
            forward_m=self.forward_m,
            turn_deg=self.turn_deg,
            width=self.width,
            height=self.height,
            hfov_deg=self.hfov_deg,
            depth=self.has_depth,
            pose=True,
            detections=False,
            max_steps=self.max_steps,
            camera_height_m=self.camera_height_m,
            agent_radius_m=self.agent_radius_m,
        )

    # -- episodes -----------------------------------------------------------

    def make_env(self):
        if self.env is None:
            self.env = self.habitat.Env(config=self.config)
            names = list(getattr(self.env.task, "actions", {}) or {})
            by_lower = {str(n).lower(): n for n in names}
            missing = [hn for hn in ACTION_NAMES.values() if hn not in by_lower]
            if missing:
                raise BridgeError("unsupported", f"the task's action space {names} lacks {missing}: use an ObjectNav config")
            self.actions = {a: by_lower[hn] for a, hn in ACTION_NAMES.items()}
        return self.env

    def reset(self, spec: EpisodeSpec) -> Tuple[EpisodeInfo, Observation]:
        env = self.make_env()
        episodes = env.episodes
        index: Optional[int] = None
        if spec.index is not None:
            if spec.index >= len(episodes):
                raise BridgeError("bad_request", f"episode.index {spec.index} out of range: the dataset has {len(episodes)} episodes")
            index = spec.index
        elif spec.id is not None:
            matches = [k for k, e in enumerate(episodes)
                       if str(e.episode_id) == spec.id and (spec.scene is None or spec.scene in str(e.scene_id))]
            if not matches:
                raise BridgeError("bad_request", f"no episode with id {spec.id!r} in the dataset")
            index = matches[0]
        if spec.seed is not None:
            env.seed(spec.seed)
        if index is not None:
            env.current_episode = episodes[index]
        obs = env.reset()
        self.episode_running = True
        ep = env.current_episode
        if index is None:
            index = next((k for k, e in enumerate(episodes) if e is ep), None)
        info = EpisodeInfo(
            episode_id=str(ep.episode_id),
            scene_id=str(ep.scene_id),
            target_object=str(getattr(ep, "object_category", "") or ""),
            index=index,
            seed=spec.seed,
            max_steps=self.max_steps,
            success_distance_m=float(lookup(self.config, "habitat.task.measurements.success.success_distance", 0.1)),
        )
        return info, self.observation(obs)

    def step(self, action: str) -> StepResult:
        env = self.require_env()
        before = env.sim.get_agent_state().position
        obs = env.step(self.actions[action])
        after = env.sim.get_agent_state().position
        moved = math.hypot(float(after[0]) - float(before[0]), float(after[2]) - float(before[2]))
        collided = bool(getattr(env.sim, "previous_step_collided", False))
        done = bool(env.episode_over)
        metrics = self.metrics() if done else None
        if done:
            self.episode_running = False
        return StepResult(self.observation(obs), collided, moved, done, metrics)

    def panorama(self, views: int) -> List[View]:
        env = self.require_env()
        state = env.sim.get_agent_state()
        out = []
        for k in range(views):
            heading_deg = 360.0 * k / views
            rotation = turned(state.rotation, math.radians(heading_deg))
            obs = env.sim.get_observations_at(state.position, rotation, keep_agent_at_new_pose=False)
            if obs is None:
                raise BridgeError("backend", f"habitat could not render the view at {heading_deg:.0f} deg")
            out.append(View(heading_deg if heading_deg <= 180.0 else heading_deg - 360.0, self.frame(obs)))
        return out

    def close(self) -> None:
        if self.env is not None:
            self.env.close()
            self.env = None

    # -- helpers ------------------------------------------------------------

    def require_env(self):
        if self.env is None:
            raise BridgeError("no_episode", "no episode: send reset first")
        return self.env

    def metrics(self) -> Dict[str, Any]:
        """Habitat's own measures: the three the protocol names, plus every
        other scalar measure under its habitat name."""
        raw = self.require_env().get_metrics()
        out: Dict[str, Any] = {}
        for key, value in raw.items():
            if isinstance(value, bool):
                out[key] = value
            elif isinstance(value, (int, float)) or hasattr(value, "item"):
                try:
                    v = float(value)
                except (TypeError, ValueError):
                    continue
                out[key] = v if math.isfinite(v) else None
        out["success"] = bool(out.get("success", 0.0))
        out["spl"] = float(out.get("spl") or 0.0)
        out.setdefault("distance_to_goal", None)
        return out

    def frame(self, obs: Dict[str, Any]) -> Frame:
        import numpy as np

        rgb = np.ascontiguousarray(np.asarray(obs["rgb"])[:, :, :3], dtype=np.uint8)
        h, w = rgb.shape[0], rgb.shape[1]
        depth_bytes = None
        if "depth" in obs:
            d = np.asarray(obs["depth"], dtype=np.float32).reshape(h, w)
            if self.depth_normalized:
                d = np.where(d > 0.0, self.min_depth + d * (self.max_depth - self.min_depth), np.nan)
            depth_bytes = d.astype("<f4").tobytes()
        return Frame(width=w, height=h, rgb=rgb.tobytes(), hfov_deg=self.hfov_deg, depth=depth_bytes)

    def observation(self, obs: Dict[str, Any]) -> Observation:
        env = self.require_env()
        state = env.sim.get_agent_state()
        return Observation(self.frame(obs), to_navkit(state.position, heading(state.rotation)))
