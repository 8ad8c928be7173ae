"""Ground-truth detections of the objects visible in a rendered frame.

An object counts as visible when enough pixels of the rendered frame show
it: its bounding cylinder is projected into the camera to get a candidate
box (the frustum test), then every pixel in that box is lifted back to 3D
with the rendered depth and kept only if the point lies on the object's
cylinder above the floor (the occlusion test: a wall or another object in
front puts the point elsewhere). The detection's box is the tight box of
the kept pixels.

Camera model: MiniWorld's OpenGL pinhole (``gluPerspective`` with a
vertical field of view, square pixels), no pitch, image row 0 at the top.
Only numpy is used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Sequence

import numpy as np

from ...protocol import Detection


@dataclass
class Camera:
    """Camera pose and intrinsics in MiniWorld's frame (y up; the heading
    ``yaw`` is MiniWorld's ``agent.dir``: forward = (cos, 0, -sin))."""

    x: float
    y: float
    z: float
    yaw: float
    fov_y_deg: float
    width: int
    height: int

    @property
    def focal(self) -> float:
        return (self.height / 2.0) / math.tan(math.radians(self.fov_y_deg) / 2.0)

    @property
    def hfov_deg(self) -> float:
        return math.degrees(2.0 * math.atan(math.tan(math.radians(self.fov_y_deg) / 2.0) * self.width / self.height))

    def basis(self):
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        forward = np.array([c, 0.0, -s])
        right = np.array([s, 0.0, c])
        return forward, right


@dataclass
class Target:
    """An object as a vertical cylinder standing at ``base_y``."""

    label: str
    x: float
    z: float
    radius: float
    base_y: float
    height: float


def detect(camera: Camera, depth: np.ndarray, objects: Sequence[Target], min_pixels: int = 3) -> List[Detection]:
    """Detections of ``objects`` in a frame whose z-depth image (metres,
    shape ``(H, W)``) is ``depth``."""
    forward, right = camera.basis()
    f = camera.focal
    w, h = camera.width, camera.height
    cam = np.array([camera.x, camera.y, camera.z])
    out: List[Detection] = []
    ring = np.linspace(0.0, 2.0 * math.pi, 16, endpoint=False)
    for obj in objects:
        px = np.concatenate([obj.x + obj.radius * np.cos(ring)] * 2)
        pz = np.concatenate([obj.z + obj.radius * np.sin(ring)] * 2)
        py = np.concatenate([np.full(16, obj.base_y), np.full(16, obj.base_y + obj.height)])
        rel = np.stack([px, py, pz], axis=1) - cam
        zc = rel @ forward
        if np.all(zc <= 0.05):
            continue  # entirely behind the camera
        if np.any(zc <= 0.05):
            u0, u1, v0, v1 = 0, w - 1, 0, h - 1  # straddles the image plane: search everywhere
        else:
            u = w / 2.0 + f * (rel @ right) / zc
            v = h / 2.0 - f * rel[:, 1] / zc
            u0, u1 = max(0, int(math.floor(u.min()))), min(w - 1, int(math.ceil(u.max())))
            v0, v1 = max(0, int(math.floor(v.min()))), min(h - 1, int(math.ceil(v.max())))
            if u0 > u1 or v0 > v1:
                continue  # outside the frustum
        d = depth[v0 : v1 + 1, u0 : u1 + 1]
        uu, vv = np.meshgrid(np.arange(u0, u1 + 1) + 0.5, np.arange(v0, v1 + 1) + 0.5)
        xr = (uu - w / 2.0) * d / f
        yu = (h / 2.0 - vv) * d / f
        wx = cam[0] + forward[0] * d + right[0] * xr
        wz = cam[2] + forward[2] * d + right[2] * xr
        wy = cam[1] + yu
        tol = 0.05 + 0.01 * d  # depth-buffer quantisation grows with distance
        on = (
            np.isfinite(d)
            & (np.hypot(wx - obj.x, wz - obj.z) <= obj.radius + tol)
            & (wy >= obj.base_y + 0.02)
            & (wy <= obj.base_y + obj.height + tol)
        )
        count = int(on.sum())
        if count < min_pixels:
            continue
        rows, cols = np.nonzero(on)
        centre = np.array([obj.x, cam[1], obj.z]) - cam
        zc_c, xr_c = float(centre @ forward), float(centre @ right)
        out.append(
            Detection(
                label=obj.label,
                bearing_rad=math.atan2(-xr_c, zc_c),
                distance_m=max(0.0, math.hypot(centre[0], centre[2]) - obj.radius),
                bbox=[u0 + int(cols.min()), v0 + int(rows.min()), u0 + int(cols.max()), v0 + int(rows.max())],
            )
        )
    return out
