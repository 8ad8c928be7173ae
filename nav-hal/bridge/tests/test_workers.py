"""The worker ops: the handshake, view decoding, the colour detector and
the rule policy."""

import base64
import json
import struct
import unittest

from navkit_bridge.colour_detector import ColourDetector, colour_of, hsv
from navkit_bridge.protocol import BridgeError
from navkit_bridge.rule_policy import RulePolicy
from navkit_bridge.worker import decode_view


def view(width=16, height=12, red_cols=(), depth=None, hfov=90.0):
    rgb = bytearray(b"\x80\x80\x78" * width * height)
    for y in range(height):
        for x in red_cols:
            i = 3 * (y * width + x)
            rgb[i:i + 3] = bytes((210, 35, 30))
    v = {"hfov_deg": hfov, "rgb": {"encoding": "raw", "shape": [height, width, 3], "data": base64.b64encode(bytes(rgb)).decode()}}
    if depth is not None:
        v["depth"] = {"encoding": "f32le", "shape": [height, width],
                      "data": base64.b64encode(struct.pack(f"<{width * height}f", *([depth] * width * height))).decode()}
    return v


def call(worker, msg):
    reply = json.loads(worker.handle_line(json.dumps(msg).encode()))
    return reply.get("result"), reply.get("error")


class HandshakeTest(unittest.TestCase):
    def test_hello_names_the_ops_and_checks_the_version(self):
        res, err = call(ColourDetector(), {"id": 1, "op": "hello", "protocol": "navkit-bridge", "version": 1})
        self.assertIsNone(err)
        self.assertEqual(res["ops"], ["detect"])
        self.assertEqual(res["worker"]["name"], "colour-detector")
        _, err = call(RulePolicy(), {"id": 2, "op": "hello", "protocol": "navkit-bridge", "version": 2})
        self.assertEqual(err["kind"], "version")
        _, err = call(RulePolicy(), {"id": 3, "op": "detect"})
        self.assertEqual(err["kind"], "unknown_op")

    def test_close_ends_the_session(self):
        w = ColourDetector()
        call(w, {"id": 1, "op": "close"})
        self.assertTrue(w.closed)


class ViewTest(unittest.TestCase):
    def test_depth_must_match_the_image(self):
        v = view(depth=1.5)
        self.assertEqual(decode_view(v).depth_at(3, 4), 1.5)
        v["depth"]["shape"] = [6, 8]
        with self.assertRaises(BridgeError):
            decode_view(v)

    def test_field_of_view_is_checked(self):
        with self.assertRaises(BridgeError):
            decode_view(view(hfov=0))


class ColourDetectorTest(unittest.TestCase):
    def test_hue_and_colour_words(self):
        self.assertAlmostEqual(hsv(255, 0, 0)[0], 0.0)
        self.assertAlmostEqual(hsv(0, 255, 0)[0], 120.0)
        self.assertEqual(colour_of("Red Box"), "red")
        self.assertIsNone(colour_of("office chair"))

    def test_largest_red_region_is_the_box(self):
        res, err = call(ColourDetector(), {"id": 1, "op": "detect", "target": "red box", "view": view(red_cols=(2, 9, 10, 11))})
        self.assertIsNone(err)
        self.assertEqual(res["bbox"], [9, 0, 11, 11])
        self.assertTrue(res["seen"])
        res, _ = call(ColourDetector(), {"id": 2, "op": "detect", "target": "blue key", "view": view(red_cols=(9,))})
        self.assertFalse(res["seen"])

    def test_missing_target_is_a_bad_request(self):
        _, err = call(ColourDetector(), {"id": 1, "op": "detect", "view": view()})
        self.assertEqual(err["kind"], "bad_request")


class RulePolicyTest(unittest.TestCase):
    def act(self, policy, goal, steps=0, **kw):
        res, err = call(policy, {"id": 1, "op": "act", "target": "red box", "goal": goal,
                                 "steps_since_goal": steps, "view": view(**kw)})
        self.assertIsNone(err, err)
        return res["action"]

    def test_turns_toward_the_goal_pixel_then_goes_forward(self):
        p = RulePolicy()
        self.assertEqual(self.act(p, {"pixel": [1, 5], "bbox": None, "angle_deg": 0}), "turn_left")
        self.assertEqual(self.act(p, {"pixel": [14, 5], "bbox": None, "angle_deg": 0}), "turn_right")
        self.assertEqual(self.act(p, {"pixel": [8, 5], "bbox": [7, 0, 8, 11], "angle_deg": 0}), "forward")

    def test_without_a_pixel_follows_the_planner_angle(self):
        p = RulePolicy()
        self.assertEqual(self.act(p, {"pixel": None, "angle_deg": 60}), "turn_left")
        self.assertEqual(self.act(p, {"pixel": None, "angle_deg": -60}), "turn_right")
        self.assertEqual(self.act(p, {"pixel": None, "angle_deg": 5}), "forward")

    def test_stops_when_told_or_after_its_budget(self):
        p = RulePolicy(max_steps=3)
        self.assertEqual(self.act(p, {"pixel": None, "angle_deg": 0, "stop_suggested": True}), "stop")
        self.assertEqual(self.act(p, {"pixel": None, "angle_deg": 0}, steps=3), "stop")

    def test_bad_goal_is_a_bad_request(self):
        _, err = call(RulePolicy(), {"id": 1, "op": "act", "target": "x", "goal": {"pixel": [99, 1]},
                                     "steps_since_goal": 0, "view": view()})
        self.assertEqual(err["kind"], "bad_request")


if __name__ == "__main__":
    unittest.main()
