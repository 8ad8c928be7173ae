"""MiniWorld scenes with labelled objects for ObjectNav episodes.

- ``fourrooms``: MiniWorld's own FourRooms floor plan (its red box kept),
  plus one labelled object in each of the four rooms.
- ``house``: a hallway with five rooms off it (kitchen, living room,
  bedroom, bathroom, office), each with its own wall and floor textures,
  a kitchen-living-room door making a loop, and nine labelled objects:
  coloured boxes, balls and keys shuffled across the rooms, and furniture
  meshes in the rooms where they belong.

Import this module only after ``pyglet.options['headless'] = True``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Dict, List, Tuple

from miniworld.entity import COLOR_NAMES, Ball, Box, Entity, Key, MeshEnt
from miniworld.envs.fourrooms import FourRooms
from miniworld.miniworld import MiniWorldEnv

#: Primitive object kinds: label suffix -> constructor taking a colour name.
PRIMITIVES: Dict[str, Callable[[str], Entity]] = {
    "box": lambda colour: Box(color=colour, size=0.7),
    "ball": lambda colour: Ball(color=colour, size=0.6),
    "key": lambda colour: Key(color=colour),
}

#: Furniture meshes shipped with MiniWorld: label -> (mesh name, height m).
FURNITURE: Dict[str, Tuple[str, float]] = {
    "office chair": ("office_chair", 1.0),
    "office desk": ("office_desk", 0.8),
    "barrel": ("barrel", 0.9),
    "cone": ("cone", 0.6),
    "duckie": ("duckie", 0.35),
}


@dataclass
class PlacedObject:
    """A labelled entity and the name of the room it was placed in."""

    label: str
    entity: Entity
    room: str


class ObjectNavScene:
    """Mixin for MiniWorld environments whose world holds labelled
    objects. ``_gen_world`` must fill ``self.placed`` and ``self.room_names``."""

    scene_id = ""
    placed: List[PlacedObject]
    room_names: List[Tuple[object, str]]

    def primitive_labels(self, count: int, exclude: Tuple[str, ...] = ()) -> List[str]:
        """``count`` distinct random primitive labels ("green ball"), drawn
        from the episode's generator."""
        labels = [f"{c} {k}" for c in COLOR_NAMES for k in PRIMITIVES if f"{c} {k}" not in exclude]
        order = self.np_random.permutation(len(labels))  # type: ignore[attr-defined]
        return [labels[int(i)] for i in order[:count]]

    def place_labelled(self, label: str, room, room_name: str) -> None:
        if label in FURNITURE:
            mesh, height = FURNITURE[label]
            ent: Entity = MeshEnt(mesh_name=mesh, height=height, static=True)
        else:
            colour, kind = label.split(" ", 1)
            ent = PRIMITIVES[kind](colour)
        self.place_entity(ent, room=room)  # type: ignore[attr-defined]
        self.placed.append(PlacedObject(label, ent, room_name))

    def room_of(self, x: float, z: float) -> str:
        import numpy as np

        for room, name in self.room_names:
            if room.point_inside(np.array([x, 0.0, z])):  # type: ignore[attr-defined]
                return name
        return "passage"


class ObjectNavFourRooms(ObjectNavScene, FourRooms):
    """FourRooms with five labelled objects."""

    scene_id = "fourrooms"

    def _gen_world(self):
        self.placed = []
        super()._gen_world()  # rooms, portals, the red box, the agent
        rooms = self.rooms[:4]
        self.room_names = [(r, f"room {k + 1}") for k, r in enumerate(rooms)]
        self.entities.remove(self.agent)  # re-placed after the objects
        self.placed.append(PlacedObject("red box", self.box, self.room_of(self.box.pos[0], self.box.pos[2])))
        for (room, name), label in zip(self.room_names, self.primitive_labels(4, exclude=("red box",))):
            self.place_labelled(label, room, name)
        self.place_agent()

    def step(self, action):
        # FourRooms ends the episode near its box; ObjectNav episodes end on STOP.
        return MiniWorldEnv.step(self, action)


class ObjectNavHouse(ObjectNavScene, MiniWorldEnv):
    """A hallway with five rooms and nine labelled objects."""

    scene_id = "house"

    def __init__(self, **kwargs):
        MiniWorldEnv.__init__(self, max_episode_steps=1_000_000, **kwargs)

    def _gen_world(self):
        self.placed = []
        hall = self.add_rect_room(min_x=-6, max_x=6, min_z=-1.25, max_z=1.25, wall_tex="drywall", floor_tex="wood_planks")
        kitchen = self.add_rect_room(min_x=-6, max_x=-0.25, min_z=-7, max_z=-1.75, wall_tex="marble", floor_tex="floor_tiles_bw")
        living = self.add_rect_room(min_x=0.25, max_x=6, min_z=-7, max_z=-1.75, wall_tex="stucco", floor_tex="wood")
        bedroom = self.add_rect_room(min_x=-6, max_x=-2.25, min_z=1.75, max_z=7, wall_tex="brick_wall", floor_tex="cardboard")
        bathroom = self.add_rect_room(min_x=-1.75, max_x=1.75, min_z=1.75, max_z=7, wall_tex="white", floor_tex="concrete_tiles")
        office = self.add_rect_room(min_x=2.25, max_x=6, min_z=1.75, max_z=7, wall_tex="wood_planks", floor_tex="concrete")
        door = 1.4
        self.connect_rooms(hall, kitchen, min_x=-4.0, max_x=-4.0 + door, max_y=2.2)
        self.connect_rooms(hall, living, min_x=2.6, max_x=2.6 + door, max_y=2.2)
        self.connect_rooms(hall, bedroom, min_x=-4.8, max_x=-4.8 + door, max_y=2.2)
        self.connect_rooms(hall, bathroom, min_x=-0.7, max_x=-0.7 + door, max_y=2.2)
        self.connect_rooms(hall, office, min_x=3.4, max_x=3.4 + door, max_y=2.2)
        self.connect_rooms(kitchen, living, min_z=-5.2, max_z=-5.2 + door, max_y=2.2)
        self.room_names = [
            (hall, "hallway"),
            (kitchen, "kitchen"),
            (living, "living room"),
            (bedroom, "bedroom"),
            (bathroom, "bathroom"),
            (office, "office"),
        ]
        furniture = [("office desk", office), ("office chair", office), ("barrel", kitchen), ("duckie", bathroom), ("cone", hall)]
        for label, room in furniture:
            self.place_labelled(label, room, dict((id(r), n) for r, n in self.room_names)[id(room)])
        for (room, name), label in zip(
            [(kitchen, "kitchen"), (living, "living room"), (living, "living room"), (bedroom, "bedroom")],
            self.primitive_labels(4),
        ):
            self.place_labelled(label, room, name)
        self.place_agent()


#: Scene name -> environment class.
SCENES = {"house": ObjectNavHouse, "fourrooms": ObjectNavFourRooms}


def yaw_to_navkit(direction: float) -> float:
    """MiniWorld heading (forward = (cos, 0, -sin)) to a navkit yaw in
    [-pi, pi): they coincide once z is mapped to -y."""
    return (direction + math.pi) % (2.0 * math.pi) - math.pi
