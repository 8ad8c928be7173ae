"""Geodesics and detections of the miniworld backend on hand-made geometry
(numpy only; skipped without numpy)."""

import math
import unittest

try:
    import numpy as np
except ImportError:  # pragma: no cover
    np = None


@unittest.skipIf(np is None, "numpy is not installed")
class GeodesicTest(unittest.TestCase):
    def two_rooms(self):
        from navkit_bridge.backends.miniworld.geodesic import FreeSpace

        # Two 4x4 rooms side by side (x 0..4 and 4..8), wall at x=4 with a
        # door at z 3..4 (the door is a gap in the wall segments).
        rooms = [np.array([[0, 0], [4, 0], [4, 4], [0, 4]], float), np.array([[4, 0], [8, 0], [8, 4], [4, 4]], float)]
        walls = np.array([
            [[0, 0], [8, 0]], [[8, 0], [8, 4]], [[8, 4], [0, 4]], [[0, 4], [0, 0]], [[4, 0], [4, 3]],
        ], float)
        return FreeSpace(rooms, walls, [], agent_radius=0.2, resolution=0.1)

    def test_path_goes_through_the_door(self):
        from navkit_bridge.backends.miniworld.geodesic import GoalRegion

        space = self.two_rooms()
        region = GoalRegion(space, 6.0, 1.0, 0.1, success_m=0.5)  # target in the right room
        d = region.distance(2.0, 1.0)
        # Tangent to the 0.2 m clearance circle round the door post (4, 3),
        # a quarter arc round it, tangent on to the 0.6 m success disc.
        tangent = math.sqrt(8.0 - 0.04)
        via_door = tangent + 0.2 * math.pi / 2 + (tangent - 0.6)
        self.assertGreater(d, 3.5)  # much longer than the 3.4 m straight line through the wall
        self.assertGreaterEqual(d, via_door - 0.05)  # never shorter than possible
        self.assertLess(d, via_door * 1.08)  # grid paths hug inflated cell corners
        self.assertEqual(region.distance(6.3, 1.0), 0.0)

    def test_success_needs_line_of_sight(self):
        from navkit_bridge.backends.miniworld.geodesic import GoalRegion

        space = self.two_rooms()
        region = GoalRegion(space, 4.4, 1.0, 0.1, success_m=1.0)
        self.assertTrue(region.contains(4.8, 1.0))
        self.assertFalse(region.contains(3.6, 1.0))  # 0.7 m away but behind the wall


@unittest.skipIf(np is None, "numpy is not installed")
class DetectTest(unittest.TestCase):
    def test_visible_object_and_occlusion(self):
        from navkit_bridge.backends.miniworld.detect import Camera, Target, detect

        cam = Camera(0.0, 1.5, 0.0, 0.0, 60.0, 80, 60)  # looking along +x
        obj = Target("red box", 4.0, 0.0, 0.4, 0.0, 0.8)
        # Render the cylinder's depth by ray casting the pixel grid.
        f = cam.focal
        depth = np.full((60, 80), np.inf)
        for v in range(60):
            for u in range(80):
                dx, dy, dz = 1.0, (30 - v - 0.5) / f, (u + 0.5 - 40) / f  # right is +z
                if dy >= 0:
                    continue
                t_floor = 1.5 / -dy
                depth[v, u] = t_floor
                # cylinder hit along the ray (x, z) = t * (dx, dz)
                a, b, c = dx * dx + dz * dz, -2 * 4.0 * dx, 16.0 - 0.16
                disc = b * b - 4 * a * c
                if disc >= 0:
                    t = (-b - math.sqrt(disc)) / (2 * a)
                    if 1.5 + t * dy <= 0.8 and t < t_floor:
                        depth[v, u] = t
        dets = detect(cam, depth, [obj])
        self.assertEqual(len(dets), 1)
        self.assertEqual(dets[0].label, "red box")
        self.assertAlmostEqual(dets[0].bearing_rad, 0.0, places=6)
        self.assertAlmostEqual(dets[0].distance_m, 3.6, places=6)
        x0, y0, x1, y1 = dets[0].bbox
        self.assertTrue(x0 < 40 < x1 and y1 > 30)
        # A wall at 2 m hides it.
        self.assertEqual(detect(cam, np.full((60, 80), 2.0), [obj]), [])
        # Behind the camera: nothing.
        self.assertEqual(detect(Camera(0.0, 1.5, 0.0, math.pi, 60.0, 80, 60), depth, [obj]), [])


if __name__ == "__main__":
    unittest.main()
