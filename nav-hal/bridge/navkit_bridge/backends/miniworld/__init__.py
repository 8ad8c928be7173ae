"""The ``miniworld`` backend (see ``backend``). Importing this package does
not import MiniWorld: that happens, headless, when the backend starts."""

from .backend import MiniWorldBackend

__all__ = ["MiniWorldBackend"]
