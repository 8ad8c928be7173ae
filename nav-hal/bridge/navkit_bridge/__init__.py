"""navkit_bridge: serves a simulator to navkit over the navkit bridge protocol.

Run ``python -m navkit_bridge --backend miniworld`` (or ``habitat``,
``openroom``); the Rust side (``nav_hal::bridge::BridgeHal``) spawns it and
talks JSON lines over stdin/stdout. See docs/BRIDGE.md.
"""

from .protocol import ACTIONS, PROTOCOL, VERSION

__version__ = "0.1.0"

__all__ = ["ACTIONS", "PROTOCOL", "VERSION", "__version__"]
