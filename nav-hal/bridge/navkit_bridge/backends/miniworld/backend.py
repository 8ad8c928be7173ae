"""The ``miniworld`` backend: ObjectNav episodes in Farama MiniWorld.

Episode ``i`` is generated from seed ``--seed + i`` in scene ``i mod n`` of
``--scene`` (``house,fourrooms`` by default), so an episode is addressed by
its index (or directly by seed and scene). A reset places the objects and
the agent with MiniWorld's own generator and picks as target an object at
least ``MIN_GEODESIC_M`` away along the free space.

Motion uses MiniWorld's ``move_agent`` / ``turn_agent`` with the forward and
turn steps of the Habitat setting (0.25 m, 30 deg; MiniWorld's own
``forward_step``/``turn_step`` params are set to the same values). A
forward step into a wall or object does not move (MiniWorld has no
sliding) and is reported as a collision. STOP ends the episode; it
succeeds within ``success_distance_m`` (1.0 m) of the target's surface
with a clear line of sight. SPL uses the geodesic distance from the start
to that success region (see ``geodesic``).
"""

from __future__ import annotations

import argparse
import logging
import math
from typing import Dict, List, Tuple

from ... import __version__
from ...protocol import BridgeError, EpisodeSpec, Frame
from ..base import Backend, BackendInfo, BackendUnavailable, EpisodeInfo, Observation, StepResult, View

log = logging.getLogger("navkit_bridge.miniworld")

#: A target must be at least this far (geodesic) from the start.
MIN_GEODESIC_M = 2.0
#: Vertical field of view of MiniWorld's camera without domain randomisation.
FOV_Y_DEG = 60.0
#: Depth beyond this is "nothing within range" (the far plane is at 100 m).
MAX_DEPTH_M = 99.0


def import_miniworld():
    """Imports MiniWorld headless, or explains what is missing."""
    try:
        import pyglet

        pyglet.options["headless"] = True
        import miniworld  # noqa: F401
        import numpy  # noqa: F401
        from . import scenes
    except Exception as e:  # ImportError, or pyglet failing to find EGL
        raise BackendUnavailable(
            "the miniworld backend needs the PyPI packages miniworld, numpy and pillow "
            "(pip install miniworld pillow numpy) and a headless OpenGL driver "
            "(Debian: apt-get install libegl1 libgl1-mesa-dri); "
            f"import failed: {type(e).__name__}: {e}"
        ) from None
    return scenes


class MiniWorldBackend(Backend):
    """See the module documentation."""

    def __init__(self, scenes: List[str], width: int = 320, height: int = 240, forward_m: float = 0.25,
                 turn_deg: float = 30.0, max_steps: int = 500, base_seed: int = 0, success_distance_m: float = 1.0):
        self.scene_module = import_miniworld()
        unknown = [s for s in scenes if s not in self.scene_module.SCENES]
        if not scenes or unknown:
            raise BackendUnavailable(
                f"unknown miniworld scene(s) {unknown or scenes}: choose from {', '.join(self.scene_module.SCENES)}"
            )
        import miniworld
        from miniworld.entity import Agent

        self.miniworld_version = getattr(miniworld, "__version__", "unknown")
        # MiniWorld's agent body and camera without domain randomisation (1.5 m camera, level; 0.4 m radius)
        agent = Agent()
        self.camera_height_m, self.agent_radius_m = float(agent.cam_height), float(agent.radius)
        self.scenes = scenes
        self.width, self.height = width, height
        self.forward_m, self.turn_deg = forward_m, turn_deg
        self.max_steps, self.base_seed = max_steps, base_seed
        self.success_distance_m = success_distance_m
        self.envs: Dict[str, object] = {}
        self.env = None
        self.next_index = 0
        self.target = None
        self.region = None
        self.steps = 0
        self.path_m = 0.0
        self.collisions = 0
        self.geodesic_m = 0.0

    @staticmethod
    def from_args(args: argparse.Namespace) -> "MiniWorldBackend":
        scenes = [s.strip() for s in args.scene.split(",") if s.strip()]
        return MiniWorldBackend(
            scenes,
            width=args.width or 320,
            height=args.height or 240,
            forward_m=args.forward_m,
            turn_deg=args.turn_deg,
            max_steps=args.max_steps,
            base_seed=args.seed,
        )

    def info(self) -> BackendInfo:
        hfov = math.degrees(2.0 * math.atan(math.tan(math.radians(FOV_Y_DEG) / 2.0) * self.width / self.height))
        return BackendInfo(
            name="miniworld",
            version=__version__,
            simulator="miniworld",
            simulator_version=self.miniworld_version,
            forward_m=self.forward_m,
            turn_deg=self.turn_deg,
            width=self.width,
            height=self.height,
            hfov_deg=hfov,
            depth=True,
            pose=True,
            detections=True,
            max_steps=self.max_steps,
            scenes=list(self.scenes),
            camera_height_m=self.camera_height_m,
            agent_radius_m=self.agent_radius_m,
        )

    # -- episodes -----------------------------------------------------------

    def make_env(self, scene: str):
        if scene not in self.envs:
            from miniworld.params import DEFAULT_PARAMS

            params = DEFAULT_PARAMS.no_random()
            params.set("forward_step", self.forward_m)
            params.set("forward_drift", 0.0)
            params.set("turn_step", self.turn_deg)
            cls = self.scene_module.SCENES[scene]
            self.envs[scene] = cls(obs_width=self.width, obs_height=self.height, params=params, domain_rand=False)
        return self.envs[scene]

    def reset(self, spec: EpisodeSpec) -> Tuple[EpisodeInfo, Observation]:
        from .geodesic import FreeSpace, GoalRegion

        index = spec.index if spec.index is not None else self.next_index
        self.next_index = index + 1
        seed = spec.seed if spec.seed is not None else self.base_seed + index
        scene = spec.scene if spec.scene is not None else self.scenes[index % len(self.scenes)]
        if scene not in self.scene_module.SCENES:
            raise BridgeError("bad_request", f"unknown scene {scene!r}: choose from {', '.join(self.scene_module.SCENES)}")
        env = self.make_env(scene)
        self.env = env
        # Regenerate until some object is far enough from the start (MiniWorld
        # places the agent anywhere, occasionally right next to every object).
        for attempt in range(20):
            env.reset(seed=seed * 1000 + attempt)
            space = FreeSpace(
                [r.outline[:, [0, 2]] for r in env.rooms],
                env.wall_segs[:, :, [0, 2]],
                [(float(p.entity.pos[0]), float(p.entity.pos[2]), float(p.entity.radius)) for p in env.placed],
                float(env.agent.radius),
            )
            start = space.cell(float(env.agent.pos[0]), float(env.agent.pos[2]))
            if start is None:
                continue
            from_start = space.distance_field(space.single(*start))
            for k in env.np_random.permutation(len(env.placed)):
                cand = env.placed[int(k)]
                region = GoalRegion(space, float(cand.entity.pos[0]), float(cand.entity.pos[2]),
                                    float(cand.entity.radius), self.success_distance_m, field=False)
                if MIN_GEODESIC_M <= region.nearest_in(from_start) < math.inf:
                    region.compute_field()
                    self.target, self.region = cand, region
                    self.geodesic_m = region.distance(float(env.agent.pos[0]), float(env.agent.pos[2]))
                    break
            else:
                continue
            break
        else:
            raise BridgeError("backend", f"could not generate an episode for seed {seed} in scene {scene}")
        self.steps, self.path_m, self.collisions = 0, 0.0, 0
        info = EpisodeInfo(
            episode_id=f"{scene}-{seed}",
            scene_id=scene,
            target_object=self.target.label,
            index=index,
            seed=seed,
            max_steps=self.max_steps,
            success_distance_m=self.success_distance_m,
        )
        log.info("episode %s: find the %s (in the %s), geodesic %.2f m", info.episode_id, self.target.label,
                 self.target.room, self.geodesic_m)
        return info, self.observe()

    def step(self, action: str) -> StepResult:
        env = self.require_env()
        collided, moved = False, 0.0
        if action == "forward":
            before = env.agent.pos.copy()
            if env.move_agent(self.forward_m, 0.0):
                moved = float(math.hypot(env.agent.pos[0] - before[0], env.agent.pos[2] - before[2]))
            else:
                collided = True
                self.collisions += 1
        elif action == "turn_left":
            env.turn_agent(self.turn_deg)
        elif action == "turn_right":
            env.turn_agent(-self.turn_deg)
        self.steps += 1
        self.path_m += moved
        done = action == "stop" or self.steps >= self.max_steps
        metrics = self.metrics(stopped=action == "stop") if done else None
        return StepResult(self.observe(), collided, moved, done, metrics)

    def panorama(self, views: int) -> List[View]:
        env = self.require_env()
        start = env.agent.dir
        out = []
        try:
            for k in range(views):
                heading = 360.0 * k / views
                env.agent.dir = start + math.radians(heading)
                out.append(View(heading if heading <= 180.0 else heading - 360.0, self.observe().frame))
        finally:
            env.agent.dir = start
        return out

    def close(self) -> None:
        for env in self.envs.values():
            env.close()
        self.envs.clear()

    # -- helpers ------------------------------------------------------------

    def require_env(self):
        if self.env is None:
            raise BridgeError("no_episode", "no episode: send reset first")
        return self.env

    def metrics(self, stopped: bool) -> Dict[str, object]:
        env = self.require_env()
        x, z = float(env.agent.pos[0]), float(env.agent.pos[2])
        success = bool(stopped and self.region.contains(x, z))
        spl = 0.0
        if success:
            spl = 1.0 if self.geodesic_m <= 0.0 else self.geodesic_m / max(self.path_m, self.geodesic_m)
        d = self.region.distance(x, z)
        return {
            "success": success,
            "spl": spl,
            "distance_to_goal": d if math.isfinite(d) else None,
            "path_length_m": self.path_m,
            "geodesic_m": self.geodesic_m,
            "steps": self.steps,
            "collisions": self.collisions,
        }

    def observe(self) -> Observation:
        """Renders the agent's view once and derives depth and detections
        from the same frame."""
        from .detect import Camera, Target, detect

        env = self.require_env()
        rgb = env.render_obs()
        depth = env.obs_fb.get_depth_map(0.04, 100.0)[:, :, 0]
        depth = depth.copy()
        depth[depth > MAX_DEPTH_M] = math.inf
        agent = env.agent
        cam_pos = agent.cam_pos
        camera = Camera(float(cam_pos[0]), float(cam_pos[1]), float(cam_pos[2]), float(agent.dir),
                        float(agent.cam_fov_y), self.width, self.height)
        targets = [
            Target(p.label, float(p.entity.pos[0]), float(p.entity.pos[2]), float(p.entity.radius),
                   float(p.entity.pos[1]), float(p.entity.height))
            for p in env.placed
        ]
        frame = Frame(
            width=self.width,
            height=self.height,
            rgb=rgb.tobytes(),
            hfov_deg=camera.hfov_deg,
            depth=depth.astype("<f4").tobytes(),
            detections=detect(camera, depth, targets),
        )
        pose = (float(agent.pos[0]), -float(agent.pos[2]), self.scene_module.yaw_to_navkit(float(agent.dir)))
        return Observation(frame, pose)
