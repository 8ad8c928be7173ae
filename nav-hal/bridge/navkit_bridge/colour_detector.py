"""A colour-threshold object detector served as a navkit worker (op
``detect``): ``python -m navkit_bridge.colour_detector``.

It finds targets named by a colour (``"red box"``, ``"green ball"``) in the
RGB image navkit sends: pixels whose hue is within ``--hue-tolerance`` of the
colour's and that are saturated and bright enough form a mask; the largest
4-connected region of at least ``--min-pixels`` pixels is the target, its
tight box the answer. It reads nothing but the image, so it is a real
(if simple) detector — the CI stand-in for GroundingDINO + SAM, and an
example of the ``detect`` op (docs/BRIDGE.md, "Workers").

A label without a known colour word is "not seen" (logged), never a guess.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections import deque
from typing import Any, Dict, List, Optional, Tuple

from .worker import View, Worker, decode_view, need_str, run_worker

log = logging.getLogger("navkit_bridge.colour_detector")

#: Colour words and their hue, degrees.
HUES = {
    "red": 0.0,
    "orange": 30.0,
    "yellow": 55.0,
    "green": 120.0,
    "cyan": 180.0,
    "blue": 230.0,
    "purple": 280.0,
    "magenta": 300.0,
    "pink": 330.0,
}


def hsv(r: int, g: int, b: int) -> Tuple[float, float, float]:
    """Hue in degrees [0, 360), saturation and value in [0, 1]."""
    mx, mn = max(r, g, b), min(r, g, b)
    v = mx / 255.0
    if mx == 0 or mx == mn:
        return 0.0, 0.0, v
    d = float(mx - mn)
    s = d / mx
    if mx == r:
        h = ((g - b) / d) % 6.0
    elif mx == g:
        h = (b - r) / d + 2.0
    else:
        h = (r - g) / d + 4.0
    return 60.0 * h, s, v


def colour_of(label: str) -> Optional[str]:
    """The first colour word of a label, if any."""
    for word in label.lower().replace("-", " ").split():
        if word in HUES:
            return word
    return None


def mask_of(view: View, hue: float, tol: float, min_s: float, min_v: float) -> List[bool]:
    out = [False] * (view.width * view.height)
    rgb = view.rgb
    for i in range(view.width * view.height):
        h, s, v = hsv(rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2])
        if s >= min_s and v >= min_v:
            dh = abs(h - hue) % 360.0
            out[i] = min(dh, 360.0 - dh) <= tol
    return out


def largest_region(mask: List[bool], w: int, h: int) -> Tuple[int, Optional[List[int]]]:
    """Size and inclusive box ``[x0, y0, x1, y1]`` of the largest 4-connected region."""
    seen = [False] * (w * h)
    best_n, best_box = 0, None
    for start in range(w * h):
        if not mask[start] or seen[start]:
            continue
        seen[start] = True
        queue = deque([start])
        n, x0, y0, x1, y1 = 0, w, h, -1, -1
        while queue:
            i = queue.popleft()
            n += 1
            x, y = i % w, i // w
            x0, y0, x1, y1 = min(x0, x), min(y0, y), max(x1, x), max(y1, y)
            for j, ok in ((i - 1, x > 0), (i + 1, x < w - 1), (i - w, y > 0), (i + w, y < h - 1)):
                if ok and mask[j] and not seen[j]:
                    seen[j] = True
                    queue.append(j)
        if n > best_n:
            best_n, best_box = n, [x0, y0, x1, y1]
    return best_n, best_box


class ColourDetector(Worker):
    """See the module documentation."""

    name = "colour-detector"

    def __init__(self, min_pixels: int = 3, hue_tolerance: float = 20.0, min_saturation: float = 0.45,
                 min_value: float = 0.12):
        super().__init__()
        self.min_pixels = min_pixels
        self.hue_tolerance = hue_tolerance
        self.min_saturation = min_saturation
        self.min_value = min_value

    def ops(self):
        return {"detect": self.detect}

    def detect(self, msg: Dict[str, Any]) -> Dict[str, Any]:
        target = need_str(msg, "target")
        view = decode_view(msg.get("view"))
        colour = colour_of(target)
        if colour is None:
            log.warning("target %r names no colour this detector knows (%s): not seen", target, ", ".join(HUES))
            return {"seen": False, "bbox": None, "score": 0.0}
        mask = mask_of(view, HUES[colour], self.hue_tolerance, self.min_saturation, self.min_value)
        n, box = largest_region(mask, view.width, view.height)
        if box is None or n < self.min_pixels:
            return {"seen": False, "bbox": None, "score": 0.0}
        area = (box[2] - box[0] + 1) * (box[3] - box[1] + 1)
        return {"seen": True, "bbox": box, "score": round(n / area, 4), "pixels": n}


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m navkit_bridge.colour_detector",
                                description="A colour-threshold detector served as a navkit worker (op detect).")
    p.add_argument("--min-pixels", type=int, default=3, help="smallest region that counts as a detection")
    p.add_argument("--hue-tolerance", type=float, default=20.0, help="degrees of hue around the colour's")
    p.add_argument("--min-saturation", type=float, default=0.45)
    p.add_argument("--min-value", type=float, default=0.12)
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    args = p.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=getattr(logging, args.log_level.upper()),
                        format="colour_detector %(levelname)s %(message)s")
    if args.min_pixels < 1 or not 0 < args.hue_tolerance < 180:
        p.error("--min-pixels must be >= 1 and --hue-tolerance within (0, 180)")
    return run_worker(ColourDetector(args.min_pixels, args.hue_tolerance, args.min_saturation, args.min_value))


if __name__ == "__main__":
    sys.exit(main())
