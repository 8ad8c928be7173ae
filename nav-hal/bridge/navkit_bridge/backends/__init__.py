"""Simulator backends, imported lazily so that a missing simulator only
matters when its backend is chosen."""

from __future__ import annotations

import argparse
from typing import Callable, Dict

from .base import Backend, BackendInfo, BackendUnavailable, EpisodeInfo, Observation, StepResult, View


def _openroom(args: argparse.Namespace) -> Backend:
    from .openroom import OpenRoomBackend

    return OpenRoomBackend.from_args(args)


def _miniworld(args: argparse.Namespace) -> Backend:
    from .miniworld import MiniWorldBackend  # the package imports miniworld lazily too

    return MiniWorldBackend.from_args(args)


def _habitat(args: argparse.Namespace) -> Backend:
    from .habitat import HabitatBackend

    return HabitatBackend.from_args(args)


#: Backend name -> factory taking the parsed command line.
BACKENDS: Dict[str, Callable[[argparse.Namespace], Backend]] = {
    "openroom": _openroom,
    "miniworld": _miniworld,
    "habitat": _habitat,
}

__all__ = [
    "BACKENDS",
    "Backend",
    "BackendInfo",
    "BackendUnavailable",
    "EpisodeInfo",
    "Observation",
    "StepResult",
    "View",
]
