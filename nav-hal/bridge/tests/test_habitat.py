"""The habitat backend: a clear message without Habitat, and its use of
habitat-lab's API checked against a stand-in module with the same API."""

import math
import sys
import types
import unittest
from unittest import mock

from navkit_bridge.backends.base import BackendUnavailable
from navkit_bridge.backends import habitat as hb
from navkit_bridge.protocol import BridgeError, EpisodeSpec


class MissingHabitatTest(unittest.TestCase):
    def test_construction_explains_how_to_install(self):
        with mock.patch.dict(sys.modules, {"habitat": None}):  # None makes `import habitat` fail
            with self.assertRaises(BackendUnavailable) as e:
                hb.HabitatBackend("objectnav.yaml")
        msg = str(e.exception)
        self.assertIn("habitat-sim", msg)
        self.assertIn("pip install habitat-lab", msg)
        self.assertIn("import failed", msg)


class Quat:
    def __init__(self, x, y, z, w):
        self.x, self.y, self.z, self.w = x, y, z, w


class FakeSim:
    """Records what the backend asks of habitat's simulator."""

    def __init__(self):
        self.position = [1.0, 0.0, 2.0]
        self.rotation = Quat(0.0, 0.0, 0.0, 1.0)
        self.previous_step_collided = False
        self.rendered_at = []

    def get_agent_state(self):
        return types.SimpleNamespace(position=list(self.position), rotation=self.rotation)

    def get_observations_at(self, position, rotation, keep_agent_at_new_pose=False):
        self.rendered_at.append((list(position), list(rotation), keep_agent_at_new_pose))
        return {"rgb": FakeImage(), "depth": FakeDepth()}


class FakeImage(list):
    """A 2x2 RGBA image as nested lists (numpy converts it)."""

    def __init__(self):
        super().__init__([[[1, 2, 3, 255], [4, 5, 6, 255]], [[7, 8, 9, 255], [10, 11, 12, 255]]])


class FakeDepth(list):
    def __init__(self):
        super().__init__([[[0.0], [0.5]], [[1.0], [0.25]]])


class FakeEnv:
    def __init__(self, config):
        self.config = config
        self.sim = FakeSim()
        self.task = types.SimpleNamespace(actions={"stop": 0, "move_forward": 1, "turn_left": 2, "turn_right": 3})
        self.episodes = [
            types.SimpleNamespace(episode_id=str(k), scene_id=f"scene{k}.glb", object_category=c)
            for k, c in enumerate(["chair", "bed", "toilet"])
        ]
        self.current_episode = self.episodes[0]
        self.episode_over = False
        self.steps = []

    def reset(self):
        self.episode_over = False
        return {"rgb": FakeImage(), "depth": FakeDepth()}

    def step(self, action):
        self.steps.append(action)
        if action == "move_forward":
            self.sim.position[2] -= 0.25  # habitat agents face -z
        if action == "stop":
            self.episode_over = True
        return {"rgb": FakeImage(), "depth": FakeDepth()}

    def get_metrics(self):
        return {"distance_to_goal": 0.05, "success": 1.0, "spl": 0.8, "soft_spl": 0.9, "top_down_map": {"map": []}}

    def seed(self, seed):
        self.seeded = seed

    def close(self):
        pass


def fake_habitat():
    m = types.ModuleType("habitat")
    m.__version__ = "0.3.test"
    m.Env = FakeEnv

    def get_config(path, overrides=None):
        m.last_config = (path, list(overrides or []))
        sensors = types.SimpleNamespace(
            rgb_sensor=types.SimpleNamespace(width=2, height=2, hfov=90),
            depth_sensor=types.SimpleNamespace(normalize_depth=True, min_depth=0.5, max_depth=5.0,
                                               position=[0.0, 0.88, 0.0]),
        )
        agent = types.SimpleNamespace(sim_sensors=sensors, radius=0.18)
        sim = types.SimpleNamespace(agents=types.SimpleNamespace(main_agent=agent))
        return types.SimpleNamespace(habitat=types.SimpleNamespace(simulator=sim))

    m.get_config = get_config
    return m


try:
    import numpy  # noqa: F401  (the backend converts images with numpy, as Habitat returns them)

    HAVE_NUMPY = True
except ImportError:  # pragma: no cover
    HAVE_NUMPY = False


@unittest.skipUnless(HAVE_NUMPY, "numpy is not installed")
class HabitatApiTest(unittest.TestCase):
    def setUp(self):
        self.module = fake_habitat()
        patcher = mock.patch.dict(sys.modules, {"habitat": self.module})
        patcher.start()
        self.addCleanup(patcher.stop)
        self.b = hb.HabitatBackend("benchmark/nav/objectnav/objectnav_hm3d.yaml", split="val",
                                   overrides=["habitat.seed=3"])

    def test_config_sets_habitat_step_sizes(self):
        path, overrides = self.module.last_config
        self.assertEqual(path, "benchmark/nav/objectnav/objectnav_hm3d.yaml")
        self.assertIn("habitat.simulator.forward_step_size=0.25", overrides)
        self.assertIn("habitat.simulator.turn_angle=30", overrides)
        self.assertIn("habitat.environment.max_episode_steps=500", overrides)
        self.assertIn("habitat.dataset.split=val", overrides)
        self.assertEqual(overrides[-1], "habitat.seed=3")
        info = self.b.info()
        self.assertEqual((info.width, info.height, info.hfov_deg, info.depth), (2, 2, 90.0, True))
        self.assertEqual((info.camera_height_m, info.agent_radius_m), (0.88, 0.18))

    def test_sensor_height_is_optional(self):
        self.assertEqual(hb.sensor_height([0, 1.25, 0]), 1.25)
        for bad in (None, [0], [0, "x", 0], [0, -1.0, 0], [0, float("nan"), 0]):
            self.assertIsNone(hb.sensor_height(bad), bad)

    def test_episode_by_index_and_metrics(self):
        info, obs = self.b.reset(EpisodeSpec(index=1))
        self.assertEqual((info.episode_id, info.scene_id, info.target_object), ("1", "scene1.glb", "bed"))
        self.assertEqual(obs.frame.rgb, bytes([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]))
        self.assertEqual(obs.pose, (-2.0, -1.0, 0.0))
        res = self.b.step("forward")
        self.assertEqual(self.b.env.steps, ["move_forward"])
        self.assertAlmostEqual(res.moved_m, 0.25)
        self.assertEqual(res.observation.pose[:2], (-1.75, -1.0))  # forward is +x in navkit axes
        res = self.b.step("stop")
        self.assertTrue(res.done)
        self.assertEqual(res.metrics["success"], True)
        self.assertEqual((res.metrics["spl"], res.metrics["distance_to_goal"], res.metrics["soft_spl"]), (0.8, 0.05, 0.9))
        self.assertNotIn("top_down_map", res.metrics)
        with self.assertRaises(BridgeError):
            self.b.reset(EpisodeSpec(index=9))

    def test_depth_is_denormalised_to_metres(self):
        import struct

        _, obs = self.b.reset(EpisodeSpec())
        depth = struct.unpack("<4f", obs.frame.depth)
        self.assertTrue(math.isnan(depth[0]))  # 0 = no reading
        self.assertEqual(depth[1:], (2.75, 5.0, 1.625))

    def test_panorama_renders_turned_views_without_stepping(self):
        self.b.reset(EpisodeSpec())
        views = self.b.panorama(12)
        self.assertEqual([v.heading_deg for v in views][:4], [0.0, 30.0, 60.0, 90.0])
        self.assertEqual(self.b.env.steps, [])  # no env.step: no step budget used
        rendered = self.b.env.sim.rendered_at
        self.assertEqual(len(rendered), 12)
        for k, (pos, rot, keep) in enumerate(rendered):
            self.assertFalse(keep)
            self.assertEqual(pos, [1.0, 0.0, 2.0])
            yaw = hb.heading(Quat(*rot))
            self.assertAlmostEqual(math.cos(yaw), math.cos(math.radians(30 * k)))
            self.assertAlmostEqual(math.sin(yaw), math.sin(math.radians(30 * k)))


if __name__ == "__main__":
    unittest.main()
