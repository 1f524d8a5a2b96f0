"""The test suite's own rules, read from its source: a test is run again only for a tagged
timing failure (tests/timing.py), the marker that allows it sits on tests and nowhere else, and
every such test has a tagged check to fail by."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

TESTS = Path(__file__).resolve().parent
TAGGED = {"on_time", "as_sent", "placed_as_sent", "off_time_is_the_machines",
          "held_unless_xruns", "delivered", "late_run", "_late_is_timing"}


@cache
def _modules() -> dict[Path, ast.Module]:
    return {path: ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for path in sorted(TESTS.glob("*.py"))}


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def test_only_tests_timing_py_declares_a_rerun() -> None:
    """No ``pytest.mark.flaky`` but the one tagged marker: nothing else is ever run again."""
    found = [f"{path.name}:{node.lineno}" for path, tree in _modules().items()
             for node in ast.walk(tree)
             if isinstance(node, ast.Attribute) and node.attr == "flaky"
             and path.name != "timing.py"]
    assert not found, f"re-runs declared outside tests/timing.py: {found}"


def test_the_timing_marker_sits_on_tests_with_a_tagged_check() -> None:
    wrong = []
    for path, tree in _modules().items():
        helpers = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
        functions = [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)]
        decorators = {id(n) for f in functions for d in f.decorator_list for n in ast.walk(d)}
        for f in functions:
            if not any("timing_flaky" in _names(d) for d in f.decorator_list):
                continue
            where = f"{path.name}:{f.lineno} {f.name}"
            called = _names(f)
            reached = called | {n for h in called & helpers.keys() for n in _names(helpers[h])}
            uses_a_fixture_of_its_own = {a.arg for a in f.args.args} & helpers.keys()
            if not f.name.startswith("test_"):
                wrong.append(f"{where}: the marker is on a helper, not on a test")
            elif not reached & TAGGED and not uses_a_fixture_of_its_own:
                wrong.append(f"{where}: marked, but no tagged timing check in it")
        # the marker anywhere but on a test (assigned, passed on) is a re-run in hiding
        wrong += [f"{path.name}:{n.lineno}: timing_flaky used, not as a decorator"
                  for n in ast.walk(tree)
                  if isinstance(n, ast.Name) and n.id == "timing_flaky"
                  and isinstance(n.ctx, ast.Load) and id(n) not in decorators]
    assert not wrong, "\n".join(wrong)


def test_the_tiers_are_the_ones_pyproject_declares() -> None:
    import tomllib

    pyproject = tomllib.loads((TESTS.parent / "pyproject.toml").read_text(encoding="utf-8"))
    declared = {m.split(":")[0] for m in pyproject["tool"]["pytest"]["ini_options"]["markers"]}
    from tests.conftest import TIERS

    assert set(TIERS) | {"unit"} <= declared
    assert "--strict-markers" in pyproject["tool"]["pytest"]["ini_options"]["addopts"]
