#!/usr/bin/env python3
"""Checks that navkit's module graph reads top-down (docs/ARCHITECTURE.md).

1. Crates depend only downward: each crate's [dependencies] name only the
   nav-* crates below it (nav-core <- nav-memory, nav-safety, nav-hal <-
   nav-planner <- nav-cli).
2. No import cycles between sibling modules of a crate: for every `crate::`
   and `super::` path in a source file (comments stripped), the edge between
   the two modules is lifted to the children of their lowest common ancestor
   (a child using its parent's items, or a parent re-exporting a child's,
   is structure, not a cycle), and the graph of siblings must be acyclic.
3. nav-planner's layers: `vlm` imports nothing else from the crate;
   `protocol` only `vlm`; `offline` only `protocol` and `vlm`; `navigator`
   sits on top.

Prints each violation and exits 1, or prints a one-line summary and exits 0.
"""

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRATES = ["nav-core", "nav-memory", "nav-safety", "nav-hal", "nav-planner", "nav-cli"]
ALLOWED_DEPS = {
    "nav-core": set(),
    "nav-memory": {"nav-core"},
    "nav-safety": {"nav-core"},
    "nav-hal": {"nav-core"},
    "nav-planner": {"nav-core", "nav-memory", "nav-safety", "nav-hal"},
    "nav-cli": {"nav-core", "nav-memory", "nav-safety", "nav-hal", "nav-planner"},
}
PLANNER_LAYERS = {"vlm": set(), "protocol": {"vlm"}, "offline": {"protocol", "vlm"}}

PATH_RE = re.compile(r"\b(crate|super)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
GROUP_RE = re.compile(r"\buse\s+(crate|super)((?:::[A-Za-z_][A-Za-z0-9_]*)*)::\{([^;]*)\};", re.S)


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(line.split("//", 1)[0] for line in text.splitlines())


def module_of(src: Path, file: Path) -> tuple:
    rel = file.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return tuple(parts)


def is_dir_module(file: Path) -> bool:
    return file.name in ("mod.rs", "lib.rs", "main.rs")


def crate_modules(src: Path) -> dict:
    return {module_of(src, f): f for f in sorted(src.rglob("*.rs"))}


def resolve(path: tuple, modules: dict) -> tuple:
    """The longest prefix of `path` that is a module."""
    for n in range(len(path), -1, -1):
        if path[:n] in modules:
            return path[:n]
    return ()


def references(text: str, here: tuple, dir_module: bool) -> list:
    """Module paths (absolute, as tuples of names) this file refers to."""
    refs = []

    def absolute(kind: str, segs: list) -> tuple:
        if kind == "crate":
            return tuple(segs)
        base = list(here) if dir_module else list(here[:-1])
        while segs and segs[0] == "super":
            segs = segs[1:]
            base = base[:-1]
        return tuple(base[:-1] + segs) if base else tuple(segs)

    for m in GROUP_RE.finditer(text):
        prefix = [s for s in m.group(2).split("::") if s]
        for item in re.split(r",(?![^{]*\})", m.group(3)):
            head = item.strip().split("::")[0].strip("{} \n")
            if head and head not in ("self", "*"):
                refs.append(absolute(m.group(1), prefix + [head]))
    for m in PATH_RE.finditer(text):
        segs = [s for s in m.group(2).split("::") if s]
        refs.append(absolute(m.group(1), segs))
    return refs


def sibling_cycles(edges: dict) -> list:
    cycles, state = [], {}

    def visit(node, stack):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [])
    return cycles


def main() -> int:
    problems = []
    edge_count = 0
    for crate in CRATES:
        manifest = tomllib.loads((ROOT / crate / "Cargo.toml").read_text())
        deps = {d for d in manifest.get("dependencies", {}) if d.startswith("nav-")}
        for bad in sorted(deps - ALLOWED_DEPS[crate]):
            problems.append(f"{crate}: depends on {bad}, which is not below it")
        src = ROOT / crate / "src"
        modules = crate_modules(src)
        # parent module -> {child -> set(children it depends on)}
        graph: dict = {}
        for here, file in modules.items():
            text = strip_comments(file.read_text(encoding="utf-8"))
            # `mod tests` blocks are the module's own tests: they may use anything in it
            text = re.split(r"#\[cfg\(test\)\]\s*mod\s+tests", text)[0]
            for ref in references(text, here, is_dir_module(file)):
                target = resolve(ref, modules)
                common = 0
                while common < min(len(here), len(target)) and here[common] == target[common]:
                    common += 1
                if common == len(here) or common == len(target):
                    continue  # ancestor/descendant: structure, not a sibling import
                parent, a, b = here[:common], here[common], target[common]
                graph.setdefault(parent, {}).setdefault(a, set()).add(b)
                edge_count += 1
        for parent, edges in graph.items():
            for cycle in sibling_cycles(edges):
                where = "::".join(parent) or "crate root"
                problems.append(f"{crate}: import cycle under {where}: {' -> '.join(cycle)}")
        if crate == "nav-planner":
            top = graph.get((), {})
            for layer, allowed in PLANNER_LAYERS.items():
                for used in sorted(top.get(layer, set()) - allowed):
                    problems.append(f"nav-planner: layer `{layer}` imports `{used}` (allowed: {sorted(allowed)})")
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"module graph ok: {len(CRATES)} crates, {edge_count} sibling imports, no cycles, layers respected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
