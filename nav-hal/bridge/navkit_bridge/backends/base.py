"""The interface every simulator backend implements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ..protocol import EpisodeSpec, Frame


class BackendUnavailable(Exception):
    """The backend's simulator is not installed or cannot start. The message
    tells the user what to install."""


@dataclass
class EpisodeInfo:
    """What a reset tells the agent about its task."""

    episode_id: str
    scene_id: str
    target_object: str
    index: Optional[int] = None
    seed: Optional[int] = None
    max_steps: Optional[int] = None
    success_distance_m: Optional[float] = None

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {
            "episode_id": self.episode_id,
            "scene_id": self.scene_id,
            "target_object": self.target_object,
        }
        for key in ("index", "seed", "max_steps", "success_distance_m"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


@dataclass
class Observation:
    """A frame plus the ground-truth pose (x, y, yaw in navkit axes) the
    backend may report when asked."""

    frame: Frame
    pose: Optional[Tuple[float, float, float]] = None


@dataclass
class StepResult:
    """Outcome of one action."""

    observation: Observation
    collided: bool
    moved_m: float
    done: bool
    #: The simulator's own metrics, present when ``done``: at least
    #: ``success`` (bool), ``spl`` and ``distance_to_goal`` (metres).
    metrics: Optional[Dict[str, Any]] = None


@dataclass
class View:
    """One panorama view: heading relative to the robot's front (degrees,
    CCW) and the frame seen there."""

    heading_deg: float
    frame: Frame


@dataclass
class BackendInfo:
    """What the backend offers; sent in the hello reply."""

    name: str
    version: str
    simulator: str
    simulator_version: str
    forward_m: float
    turn_deg: float
    width: int
    height: int
    hfov_deg: float
    depth: bool
    pose: bool
    detections: bool
    panorama: bool = True
    max_steps: Optional[int] = None
    scenes: List[str] = field(default_factory=list)
    #: Height of the camera above the floor (metres, optical axis level), when known.
    camera_height_m: Optional[float] = None
    #: Radius of the agent's collision body (metres), when known.
    agent_radius_m: Optional[float] = None


class Backend:
    """A simulator behind the bridge. Subclasses implement every method; the
    server validates requests before calling them (actions are wire names,
    ``views`` is within 1..=360, ``step`` is only called during an episode)."""

    def info(self) -> BackendInfo:
        raise NotImplementedError

    def reset(self, spec: EpisodeSpec) -> Tuple[EpisodeInfo, Observation]:
        raise NotImplementedError

    def step(self, action: str) -> StepResult:
        raise NotImplementedError

    def panorama(self, views: int) -> List[View]:
        raise NotImplementedError

    def close(self) -> None:
        """Releases the simulator. Called once when the server stops."""
