"""The house is one-way: cues ← instruments ← sequencer ← cli, and no module imports in a circle.

Inside each layer the rooms are one-way too (``ROOMS``): a module imports only modules of its own
room or of the rooms listed before it, and every module belongs to a room.  Every import counts,
including the ones inside functions (a lazy import is still a dependency).
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("cues", "instruments", "sequencer", "cli")  # each may import only those before it

# Each layer's rooms, in order: a room may import only itself and the rooms before it.  A room is
# named by module or package prefixes; a module is in the room of its longest prefix.
ROOMS: dict[str, tuple[tuple[str, ...], ...]] = {
    "cues": (
        ("cues", "cues.errors", "cues.limits", "cues.text", "cues.pinyin", "cues.model",
         "cues.sources", "cues.editions", "cues.passages", "cues.builtin",
         "cues.melody_octaves"),   # the ground everything stands on
        ("cues.catalog", "cues.layouts", "cues.repertoire"),      # instruments, hangs, pieces
        ("cues.sheet",),                                           # the sheet format and its checks
        ("cues.rites",),                                           # the built-in sheets (data)
    ),
    "instruments": (
        ("instruments", "instruments.tuning", "instruments.midi", "instruments.processes",
         "instruments.files"),
        ("instruments.voices",),
        ("instruments.mix",),
        ("instruments.notation",),
        ("instruments.ports",),
    ),
    "sequencer": (
        ("sequencer", "sequencer.timeline"),
        ("sequencer.outputs",),
        ("sequencer.check",),
        ("sequencer.judge",),
        ("sequencer.pictures",),
        ("sequencer.live", "sequencer.live.protocol", "sequencer.live.go_safety",
         "sequencer.live.cuelist"),
        ("sequencer.live.sending",),
        ("sequencer.live.player",),
        ("sequencer.live.control",),
        ("sequencer.live.standby",),
        ("sequencer.live.link",),
        ("sequencer.live.hearing",),
        ("sequencer.live.screens",),
        ("sequencer.live.show",),
        ("sequencer.command_line", "sequencer.command_parser"),  # the commands declared (they
        # import every room's owners) and the parser built from them
    ),
    "cli": (("cli",),),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _project_modules() -> dict[str, Path]:
    modules = {"cli": ROOT / "cli.py"}
    for package in LAYERS[:-1]:
        for path in sorted((ROOT / package).rglob("*.py")):
            modules[_module_name(path)] = path
    return modules


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules ``name`` imports (``from pkg import mod`` counts as ``pkg.mod``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            # the deepest project module the import names
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


@cache
def _graph() -> dict[str, set[str]]:
    modules = _project_modules()
    known = set(modules)
    return {name: _imports(name, path, known) for name, path in modules.items()}


def _layer(module: str) -> int:
    return LAYERS.index(module.split(".")[0])


def test_every_import_points_down_the_stack() -> None:
    upward = [
        f"{module} ({LAYERS[_layer(module)]}) imports {target} ({LAYERS[_layer(target)]})"
        for module, targets in _graph().items()
        for target in sorted(targets)
        if _layer(target) > _layer(module)
    ]
    assert not upward, "upward imports:\n" + "\n".join(upward)


def _room(module: str) -> tuple[str, int]:
    """(the module's layer, the index of its room there); -1 where no room holds it."""
    layer = module.split(".")[0]
    best, index = "", -1
    for i, room in enumerate(ROOMS[layer]):
        for prefix in room:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
                best, index = prefix, i
    return layer, index


def test_every_module_has_a_room() -> None:
    homeless = sorted(m for m in _graph() if _room(m)[1] < 0)
    assert not homeless, "modules in no room of tests/test_layers.py ROOMS: " + ", ".join(homeless)


def test_every_import_points_down_the_rooms() -> None:
    upward = []
    for module, targets in _graph().items():
        layer, room = _room(module)
        for target in sorted(targets):
            target_layer, target_room = _room(target)
            if target_layer == layer and target_room > room:
                upward.append(f"{module} (room {room}) imports {target} (room {target_room})")
    assert not upward, "imports up the rooms of a layer:\n" + "\n".join(upward)


def test_no_module_imports_in_a_circle() -> None:
    graph = _graph()
    # Tarjan's strongly connected components: any with more than one module is a cycle
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    assert not cycles, "modules importing each other in a circle: " + "; ".join(
        " ↔ ".join(c) for c in cycles)


def test_the_graph_sees_the_project() -> None:
    graph = _graph()
    assert "sequencer.timeline.compiler" in graph
    assert "cues.model" in graph["sequencer.timeline.compiler"]
    assert all(t.split(".")[0] in LAYERS for targets in graph.values() for t in targets)
