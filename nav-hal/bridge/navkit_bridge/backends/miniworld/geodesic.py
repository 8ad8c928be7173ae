"""Shortest paths over MiniWorld's free space, for SPL and distance_to_goal.

The floor plan is rasterised at ``resolution`` metres: a cell is free when
its centre lies inside a room, and a disc of the agent's radius there
touches no wall segment and no object (MiniWorld's own collision rule). A
Dijkstra search over the 32-neighbourhood (every move of up to three
cells each way, with no corner cutting) from the success region gives the
geodesic distance of every cell to the goal; the fine angular resolution keeps
the error against true any-angle shortest paths to about 1 % plus a
cell at each end.

Coordinates are MiniWorld's ground plane ``(x, z)``. Only numpy is used.
"""

from __future__ import annotations

import heapq
import math
from typing import List, Optional, Sequence, Tuple

import numpy as np

Obstacle = Tuple[float, float, float]  # x, z, radius

def _moves(reach: int) -> List[Tuple[int, int, float, Tuple[Tuple[int, int], ...]]]:
    """Every move (di, dj) with |di|, |dj| <= reach and gcd 1, with its
    length in cells and the cells its straight segment passes through
    (which must all be free: no corner cutting)."""
    out = []
    for di in range(-reach, reach + 1):
        for dj in range(-reach, reach + 1):
            if (di, dj) == (0, 0) or math.gcd(abs(di), abs(dj)) != 1:
                continue
            via = set()
            for k in range(1, 40):
                t = k / 40.0
                # cells touched by the segment between the two cell centres,
                # with a small margin so that diagonal moves need both sides
                for ei in (-0.01, 0.01):
                    for ej in (-0.01, 0.01):
                        via.add((math.floor(t * di + 0.5 + ei), math.floor(t * dj + 0.5 + ej)))
            via.discard((0, 0))
            via.discard((di, dj))
            out.append((di, dj, math.hypot(di, dj), tuple(sorted(via))))
    return out


#: The 32-neighbourhood: angular resolution under 10 deg, so path lengths
#: are within about 1 % of the any-angle optimum.
_MOVES = _moves(3)


def segment_distances(px: np.ndarray, pz: np.ndarray, segs: np.ndarray) -> np.ndarray:
    """Distance from each point to the nearest of the 2D segments
    ``segs`` (shape ``(S, 2, 2)``: endpoints as ``(x, z)``)."""
    best = np.full(px.shape, np.inf)
    for (ax, az), (bx, bz) in segs:
        abx, abz = bx - ax, bz - az
        denom = abx * abx + abz * abz
        if denom <= 0.0:
            d = np.hypot(px - ax, pz - az)
        else:
            t = np.clip(((px - ax) * abx + (pz - az) * abz) / denom, 0.0, 1.0)
            d = np.hypot(px - (ax + t * abx), pz - (az + t * abz))
        np.minimum(best, d, out=best)
    return best


def blocked_by_walls(x0: np.ndarray, z0: np.ndarray, x1: float, z1: float, segs: np.ndarray) -> np.ndarray:
    """True where the segment from ``(x0, z0)`` to ``(x1, z1)`` properly
    crosses a wall segment (line of sight is blocked)."""
    blocked = np.zeros(x0.shape, dtype=bool)

    def orient(ax, az, bx, bz, cx, cz):
        return (bx - ax) * (cz - az) - (bz - az) * (cx - ax)

    for (ax, az), (bx, bz) in segs:
        d1 = orient(ax, az, bx, bz, x0, z0)
        d2 = orient(ax, az, bx, bz, x1, z1)
        d3 = orient(x0, z0, x1, z1, ax, az)
        d4 = orient(x0, z0, x1, z1, bx, bz)
        blocked |= (d1 * d2 < 0.0) & (d3 * d4 < 0.0)
    return blocked


class FreeSpace:
    """The rasterised free space of one episode."""

    def __init__(self, rooms: Sequence[np.ndarray], walls: np.ndarray, obstacles: Sequence[Obstacle],
                 agent_radius: float, resolution: float = 0.1):
        """``rooms``: outlines ``(N, 2)`` in ``(x, z)``, counter-clockwise as
        MiniWorld stores them; ``walls``: collision segments ``(S, 2, 2)``."""
        self.res = resolution
        self.walls = np.asarray(walls, dtype=float).reshape(-1, 2, 2)
        self.agent_radius = agent_radius
        xs = np.concatenate([r[:, 0] for r in rooms])
        zs = np.concatenate([r[:, 1] for r in rooms])
        self.x0, self.z0 = float(xs.min()), float(zs.min())
        self.nx = int(math.ceil((float(xs.max()) - self.x0) / resolution))
        self.nz = int(math.ceil((float(zs.max()) - self.z0) / resolution))
        cx = self.x0 + (np.arange(self.nx) + 0.5) * resolution
        cz = self.z0 + (np.arange(self.nz) + 0.5) * resolution
        self.cx, self.cz = np.meshgrid(cx, cz)  # shape (nz, nx)
        inside = np.zeros(self.cx.shape, dtype=bool)
        for outline in rooms:
            inside |= point_in_convex(self.cx, self.cz, outline)
        free = inside & (segment_distances(self.cx, self.cz, self.walls) >= agent_radius)
        for ox, oz, r in obstacles:
            free &= np.hypot(self.cx - ox, self.cz - oz) >= agent_radius + r
        self.free = free

    def cell(self, x: float, z: float) -> Optional[Tuple[int, int]]:
        """The free cell nearest to ``(x, z)`` within two cells, if any."""
        j0, i0 = int((x - self.x0) / self.res), int((z - self.z0) / self.res)
        best: Optional[Tuple[int, int]] = None
        best_d = math.inf
        for i in range(i0 - 2, i0 + 3):
            for j in range(j0 - 2, j0 + 3):
                if 0 <= i < self.nz and 0 <= j < self.nx and self.free[i, j]:
                    d = math.hypot(self.cx[i, j] - x, self.cz[i, j] - z)
                    if d < best_d:
                        best, best_d = (i, j), d
        return best

    def single(self, i: int, j: int) -> np.ndarray:
        """A mask holding only cell ``(i, j)``."""
        mask = np.zeros(self.free.shape, dtype=bool)
        mask[i, j] = True
        return mask

    def distance_field(self, goal: np.ndarray) -> np.ndarray:
        """Geodesic distance (metres) from every free cell to the nearest
        cell of the boolean mask ``goal``; infinity where unreachable."""
        dist = np.full(self.free.shape, np.inf)
        free = self.free
        nz, nx = free.shape
        heap: List[Tuple[float, int, int]] = []
        for i, j in zip(*np.nonzero(goal & free)):
            dist[i, j] = 0.0
            heap.append((0.0, int(i), int(j)))
        heapq.heapify(heap)
        res = self.res
        while heap:
            d, i, j = heapq.heappop(heap)
            if d > dist[i, j]:
                continue
            for di, dj, step, via in _MOVES:
                ni, nj = i + di, j + dj
                if not (0 <= ni < nz and 0 <= nj < nx) or not free[ni, nj]:
                    continue
                if any(not free[i + vi, j + vj] for vi, vj in via):  # via cells lie between two in-grid cells
                    continue
                nd = d + step * res
                if nd < dist[ni, nj]:
                    dist[ni, nj] = nd
                    heapq.heappush(heap, (nd, ni, nj))
        return dist


def point_in_convex(px: np.ndarray, pz: np.ndarray, outline: np.ndarray) -> np.ndarray:
    """Points strictly inside a convex polygon, either winding."""
    n = len(outline)
    pos = np.ones(px.shape, dtype=bool)
    neg = np.ones(px.shape, dtype=bool)
    for k in range(n):
        ax, az = outline[k]
        bx, bz = outline[(k + 1) % n]
        cross = (bx - ax) * (pz - az) - (bz - az) * (px - ax)
        pos &= cross > 0.0
        neg &= cross < 0.0
    return pos | neg


class GoalRegion:
    """Where STOP succeeds: within ``success_m`` of the target's surface
    with a clear line of sight to it; plus the geodesic field to there."""

    def __init__(self, space: FreeSpace, target_x: float, target_z: float, target_radius: float, success_m: float,
                 field: bool = True):
        self.space = space
        self.tx, self.tz, self.tr, self.success_m = target_x, target_z, target_radius, success_m
        near = space.free & (np.hypot(space.cx - target_x, space.cz - target_z) - target_radius <= success_m)
        if near.any():
            ii, jj = np.nonzero(near)
            blocked = blocked_by_walls(space.cx[ii, jj], space.cz[ii, jj], target_x, target_z, space.walls)
            near[ii[blocked], jj[blocked]] = False
        self.mask = near
        self.field: Optional[np.ndarray] = None
        if field:
            self.compute_field()

    def compute_field(self) -> None:
        """Runs the search from the region over the whole free space."""
        self.field = self.space.distance_field(self.mask)

    def nearest_in(self, field: np.ndarray) -> float:
        """The smallest value of another distance field over the region
        (the geodesic from that field's source to the region)."""
        return float(field[self.mask].min()) if self.mask.any() else math.inf

    def contains(self, x: float, z: float) -> bool:
        """The exact success test at a continuous position."""
        if math.hypot(x - self.tx, z - self.tz) - self.tr > self.success_m:
            return False
        return not bool(blocked_by_walls(np.array([x]), np.array([z]), self.tx, self.tz, self.space.walls)[0])

    def distance(self, x: float, z: float) -> float:
        """Geodesic distance from ``(x, z)`` to the region (0 inside it,
        infinity when no free cell is near the position or none reaches)."""
        if self.contains(x, z):
            return 0.0
        cell = self.space.cell(x, z)
        if cell is None:
            return math.inf
        if self.field is None:
            self.compute_field()
        assert self.field is not None
        i, j = cell
        return float(self.field[i, j]) + math.hypot(self.space.cx[i, j] - x, self.space.cz[i, j] - z)
