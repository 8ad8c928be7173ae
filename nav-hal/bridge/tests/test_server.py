"""The request loop over the openroom backend, in process and as a child."""

import io
import json
import math
import os
import subprocess
import sys
import unittest

from navkit_bridge.backends.base import Backend
from navkit_bridge.backends.openroom import OpenRoomBackend
from navkit_bridge.protocol import EpisodeSpec, ObservationOptions
from navkit_bridge.server import Session, serve_stream

PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def request(session, **msg):
    return json.loads(session.handle_line(json.dumps(msg).encode()))


def hello(session, **extra):
    return request(session, id=0, op="hello", protocol="navkit-bridge", version=1, **extra)


class SessionTest(unittest.TestCase):
    def setUp(self):
        self.s = Session(OpenRoomBackend(), ObservationOptions())

    def test_hello_reports_backend_and_steps(self):
        r = hello(self.s, observation={"depth": True, "pose": True})["result"]
        self.assertEqual((r["protocol"], r["version"]), ("navkit-bridge", 1))
        self.assertEqual(r["backend"]["name"], "openroom")
        self.assertEqual(r["step"], {"forward_m": 0.25, "turn_deg": 30.0})
        self.assertEqual(r["actions"], ["forward", "turn_left", "turn_right", "stop"])
        self.assertEqual(r["observation"], {"rgb": "raw", "depth": True, "pose": True, "detections": True})
        # optional geometry: openroom's agent has a radius; its column camera has no height (no floor)
        self.assertEqual(r["agent"], {"radius_m": 0.2})
        self.assertNotIn("height_m", r["camera"])

    def test_version_mismatch_is_an_error_reply(self):
        r = request(self.s, id=1, op="hello", protocol="navkit-bridge", version=2)
        self.assertEqual(r["error"]["kind"], "version")
        self.assertIn("version 1", r["error"]["message"])
        r = request(self.s, id=2, op="hello", protocol="other", version=1)
        self.assertEqual(r["error"]["kind"], "version")

    def test_episode_state_machine(self):
        self.assertEqual(request(self.s, id=1, op="step", action="forward")["error"]["kind"], "no_episode")
        self.assertEqual(request(self.s, id=2, op="panorama", views=12)["error"]["kind"], "no_episode")
        r = request(self.s, id=3, op="reset", episode={"index": 4})["result"]
        self.assertEqual(r["episode"]["episode_id"], "openroom-4")
        self.assertFalse(r["done"])
        self.assertNotIn("pose", r["observation"])  # ground truth is opt-in
        r = request(self.s, id=4, op="step", action="turn_left")
        self.assertEqual(r["id"], 4)
        self.assertEqual(r["result"]["info"]["steps"], 1)
        self.assertGreaterEqual(r["timing"]["backend_ms"], 0.0)
        r = request(self.s, id=5, op="step", action="stop")["result"]
        self.assertTrue(r["done"])
        self.assertEqual(set(r["metrics"]) >= {"success", "spl", "distance_to_goal"}, True)
        self.assertEqual(request(self.s, id=6, op="step", action="forward")["error"]["kind"], "episode_over")
        self.assertIn("result", request(self.s, id=7, op="reset"))

    def test_bad_requests_never_end_the_session(self):
        request(self.s, id=1, op="reset")
        cases = [
            (b"not json", "parse"),
            (b'{"id": 2, "op": "fly"}', "unknown_op"),
            (b'{"id": 3, "op": "step", "action": "jump"}', "bad_request"),
            (b'{"id": 4, "op": "panorama", "views": 0}', "bad_request"),
            (b'{"id": 5, "op": "panorama", "views": "12"}', "bad_request"),
            (b'{"id": 6, "op": "reset", "episode": {"index": "x"}}', "bad_request"),
            (b'{"id": 7, "op": "reset", "episode": {"scene": "mars"}}', "bad_request"),
        ]
        for line, kind in cases:
            reply = json.loads(self.s.handle_line(line))
            self.assertEqual(reply["error"]["kind"], kind, line)
        self.assertIn("result", request(self.s, id=8, op="step", action="forward"))

    def test_backend_exceptions_become_backend_errors(self):
        class Broken(OpenRoomBackend):
            def step(self, action):
                raise ZeroDivisionError("simulated simulator bug")

        s = Session(Broken(), ObservationOptions())
        request(s, id=1, op="reset")
        with self.assertLogs("navkit_bridge", level="ERROR") as logs:
            r = request(s, id=2, op="step", action="forward")
        self.assertIn("simulated simulator bug", "".join(logs.output))
        self.assertEqual(r["error"]["kind"], "backend")
        self.assertIn("ZeroDivisionError", r["error"]["message"])
        self.assertIn("result", request(s, id=3, op="ping"))

    def test_unavailable_backend_answers_every_request(self):
        s = Session(None, ObservationOptions(), unavailable="install the simulator")
        for op in ("hello", "reset", "step"):
            r = request(s, id=1, op=op, protocol="navkit-bridge", version=1, action="stop")
            self.assertEqual(r["error"], {"kind": "unavailable", "message": "install the simulator"})
        self.assertEqual(request(s, id=2, op="close")["result"], {})

    def test_panorama_headings_turn_left_and_restore(self):
        request(self.s, id=1, op="reset", episode={"seed": 11})
        before = self.s.backend.pose
        r = request(self.s, id=2, op="panorama", views=12)["result"]
        headings = [v["heading_deg"] for v in r["views"]]
        self.assertEqual(headings, [0, 30, 60, 90, 120, 150, 180, -150, -120, -90, -60, -30])
        self.assertEqual(self.s.backend.pose, before)
        self.assertEqual(self.s.steps, 0)

    def test_stream_loop_stops_at_close_and_skips_blank_lines(self):
        lines = b'{"id":1,"op":"ping"}\n\n{"id":2,"op":"close"}\n{"id":3,"op":"ping"}\n'
        out = []
        serve_stream(self.s, io.BytesIO(lines), out.append)
        self.assertEqual([json.loads(o)["id"] for o in out], [1, 2])


class OpenRoomTest(unittest.TestCase):
    def test_walking_to_the_target_and_stopping_succeeds_with_spl_one(self):
        b = OpenRoomBackend()
        info, _ = b.reset(EpisodeSpec(seed=5))
        tx, ty = b.target
        x, y, _ = b.pose
        b.pose = (x, y, math.atan2(ty - y, tx - x))  # face the target
        while b.surface_distance(b.pose[:2]) > 0.9:
            res = b.step("forward")
            self.assertFalse(res.collided)
        res = b.step("stop")
        self.assertTrue(res.done and res.metrics["success"])
        self.assertAlmostEqual(res.metrics["distance_to_goal"], 0.0)
        # the straight walk overshoots the region by less than one step
        self.assertGreater(res.metrics["spl"], b.geodesic_m / (b.geodesic_m + 0.25) - 1e-9)

    def test_detection_when_facing_the_target(self):
        b = OpenRoomBackend()
        b.reset(EpisodeSpec(seed=2))
        tx, ty = b.target
        x, y, _ = b.pose
        b.pose = (x, y, math.atan2(ty - y, tx - x) + 0.2)
        dets = b.render(b.pose[2]).detections
        self.assertEqual(len(dets), 1)
        self.assertEqual(dets[0].label, b.label)
        self.assertAlmostEqual(dets[0].bearing_rad, -0.2, places=6)
        b.pose = (x, y, math.atan2(ty - y, tx - x) + math.pi)
        self.assertEqual(b.render(b.pose[2]).detections, [])

    def test_stop_far_away_fails(self):
        b = OpenRoomBackend()
        b.reset(EpisodeSpec(seed=1))
        res = b.step("stop")
        self.assertFalse(res.metrics["success"])
        self.assertEqual(res.metrics["spl"], 0.0)
        self.assertGreaterEqual(res.metrics["distance_to_goal"], 1.0)


class ChildProcessTest(unittest.TestCase):
    def test_stdout_carries_only_replies_even_when_libraries_print(self):
        code = (
            "import os, sys\n"
            "from navkit_bridge.server import protocol_stdout\n"
            "out = protocol_stdout()\n"
            "print('noise from python')\n"
            "os.write(1, b'noise from C\\n')\n"
            "out.write(b'{\"id\":1,\"result\":{}}\\n')\n"
        )
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=PKG_DIR, timeout=60)
        self.assertEqual(p.stdout, b'{"id":1,"result":{}}\n')
        self.assertIn(b"noise from python", p.stderr)
        self.assertIn(b"noise from C", p.stderr)

    def test_module_serves_stdio(self):
        lines = [
            {"id": 1, "op": "hello", "protocol": "navkit-bridge", "version": 1},
            {"id": 2, "op": "reset", "episode": {"index": 0}},
            {"id": 3, "op": "step", "action": "forward"},
            {"id": 4, "op": "close"},
        ]
        data = "".join(json.dumps(m) + "\n" for m in lines).encode()
        p = subprocess.run([sys.executable, "-m", "navkit_bridge", "--backend", "openroom"], input=data,
                           capture_output=True, cwd=PKG_DIR, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        replies = [json.loads(l) for l in p.stdout.splitlines()]
        self.assertEqual([r["id"] for r in replies], [1, 2, 3, 4])
        self.assertTrue(all("result" in r for r in replies))


if __name__ == "__main__":
    unittest.main()
