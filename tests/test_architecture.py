"""The import graph flows one way (docs/architecture.md).

Every ``import`` counts, at module level or inside a function: the packages are layered
``ctxledger`` < ``ctxledger_collector`` < ``ctxledger_dashboard`` < ``ctxledger_cli``,
none imports a package to its right, and no module imports itself back through others.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Lowest layer first; a package may import only packages at or left of its own place.
LAYERS: tuple[tuple[str, str], ...] = (
    ("ctxledger", "sdk/ctxledger"),
    ("ctxledger_collector", "collector/ctxledger_collector"),
    ("ctxledger_dashboard", "dashboard/ctxledger_dashboard"),
    ("ctxledger_cli", "cli/ctxledger_cli"),
)
RANK = {package: rank for rank, (package, _) in enumerate(LAYERS)}


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int


def _module_name(package: str, root: Path, path: Path) -> str:
    parts = [package, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules() -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for package, folder in LAYERS:
        root = ROOT / folder
        for path in sorted(root.rglob("*.py")):
            modules[_module_name(package, root, path)] = path
    return modules


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The project module ``name`` refers to: itself, or its closest existing parent."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> Iterator[Edge]:
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".") if is_package else module.split(".")[:-1]
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from pkg import sub` imports the module pkg.sub when there is one.
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                for alias in node.names
            ]
        for target in targets:
            resolved = _resolve(target, modules)
            if resolved is not None and resolved != module:
                yield Edge(module, resolved, node.lineno)


def import_graph() -> dict[str, list[Edge]]:
    modules = project_modules()
    return {name: list(imports_of(name, path, modules)) for name, path in modules.items()}


def _cycles(graph: dict[str, list[Edge]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for edge in graph.get(node, []):
            if edge.target not in index:
                visit(edge.target)
                low[node] = min(low[node], low[edge.target])
            elif edge.target in on_stack:
                low[node] = min(low[node], index[edge.target])
        if low[node] == index[node]:
            group: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def test_every_layer_exists() -> None:
    for package, folder in LAYERS:
        assert (ROOT / folder / "__init__.py").is_file(), f"{package} is missing at {folder}"


def test_no_package_imports_a_layer_above_it() -> None:
    upward = [
        f"{edge.source}:{edge.line} imports {edge.target}"
        for edges in import_graph().values()
        for edge in edges
        if RANK[edge.target.split(".")[0]] > RANK[edge.source.split(".")[0]]
    ]
    assert upward == []


def test_the_import_graph_has_no_circle() -> None:
    graph = import_graph()
    described = []
    for group in _cycles(graph):
        members = set(group)
        inside = [
            f"{e.source}:{e.line} -> {e.target}"
            for m in group
            for e in graph[m]
            if e.target in members
        ]
        described.append("; ".join(inside))
    assert described == []


def test_the_checker_sees_a_circle_and_an_upward_edge(tmp_path: Path) -> None:
    """The checks above can fail: a made-up graph with both faults is caught."""
    graph = {
        "ctxledger.a": [Edge("ctxledger.a", "ctxledger.b", 1)],
        "ctxledger.b": [
            Edge("ctxledger.b", "ctxledger.a", 2),
            Edge("ctxledger.b", "ctxledger_cli.main", 3),
        ],
        "ctxledger_cli.main": [],
    }
    assert _cycles(graph) == [["ctxledger.a", "ctxledger.b"]]
    upward = [e for es in graph.values() for e in es if RANK[e.target.split(".")[0]] > 0]
    assert [e.target for e in upward] == ["ctxledger_cli.main"]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from ctxledger import semconv\n", "ctxledger.semconv"),
        ("def f():\n    from ctxledger._client import get_client\n", "ctxledger._client"),
        ("from ctxledger._items import find_item_list\n", "ctxledger._items"),
        ("import ctxledger\n", "ctxledger"),
    ],
)
def test_imports_inside_functions_and_from_packages_are_seen(
    tmp_path: Path, source: str, expected: str
) -> None:
    path = tmp_path / "probe.py"
    path.write_text(source)
    modules = {**project_modules(), "ctxledger.probe": path}
    assert [e.target for e in imports_of("ctxledger.probe", path, modules)] == [expected]


def test_the_collector_uses_only_the_sdks_public_modules() -> None:
    """Derivation measures texts through ``ctxledger.text``, never the private analysis."""
    private = [
        f"{edge.source}:{edge.line} imports {edge.target}"
        for edges in import_graph().values()
        for edge in edges
        if edge.source.startswith("ctxledger_collector")
        and edge.target.startswith("ctxledger._")
        and edge.target != "ctxledger.__about__"
    ]
    assert private == []


#: The collector's steps from the bottom up, each with the steps it may import
#: (docs/architecture.md): only steps below it, so the order has no circle and no arrow
#: back up. The package root (``ctxledger_collector/__init__.py``) is imported by none.
_BELOW_OPS = frozenset(
    {"ingest", "judge", "query", "storage", "alerts", "forwarding", "derive", "decoded"}
)
COLLECTOR_STEPS: dict[str, frozenset[str]] = {
    "decoded": frozenset(),
    "derive": frozenset({"decoded"}),
    "ingest": frozenset({"derive", "decoded"}),
    "storage": frozenset({"decoded"}),
    "alerts": frozenset({"storage", "decoded"}),
    "forwarding": frozenset({"alerts", "decoded"}),
    "judge": frozenset({"alerts", "storage", "decoded"}),
    "query": frozenset({"storage", "decoded"}),
    "ops": _BELOW_OPS,
    "routes": _BELOW_OPS | {"ops"},
    "app": _BELOW_OPS | {"ops", "routes"},
    "serve": _BELOW_OPS | {"ops", "routes", "app"},
}
COLLECTOR = "ctxledger_collector"


def collector_step(module: str) -> str | None:
    """The step (package, or top-level module) of a collector module; None outside it."""
    parts = module.split(".")
    if parts[0] != COLLECTOR:
        return None
    return parts[1] if len(parts) > 1 else COLLECTOR


def step_violations(graph: dict[str, list[Edge]]) -> list[str]:
    found = []
    for edges in graph.values():
        for edge in edges:
            source, target = collector_step(edge.source), collector_step(edge.target)
            if source is None or target is None or source == target:
                continue
            if target not in COLLECTOR_STEPS.get(source, frozenset()):
                found.append(f"{edge.source}:{edge.line} imports {edge.target}")
    return found


def test_each_collector_step_may_import_only_steps_below_it() -> None:
    order = list(COLLECTOR_STEPS)
    upward = {
        f"{step} -> {target}"
        for step, allowed in COLLECTOR_STEPS.items()
        for target in allowed
        if target not in order[: order.index(step)]
    }
    assert upward == set()


def test_every_collector_module_is_in_a_step() -> None:
    steps = {collector_step(m) for m in project_modules() if m.startswith(COLLECTOR + ".")}
    assert steps - set(COLLECTOR_STEPS) == set()


def test_each_collector_step_imports_only_what_it_may() -> None:
    assert step_violations(import_graph()) == []


def test_the_step_checker_sees_a_step_importing_upwards() -> None:
    """The rule can fail: storage importing the judge, ingest importing a route or
    storage, a route importing the app, anything importing the package root."""
    edges = [
        ("ctxledger_collector.storage.rows", "ctxledger_collector.judge.store", 7),
        ("ctxledger_collector.ingest.admission", "ctxledger_collector.routes.state", 9),
        ("ctxledger_collector.ingest.admission", "ctxledger_collector.storage.rows", 10),
        ("ctxledger_collector.ingest.admission", "ctxledger_collector.derive.spans", 11),
        ("ctxledger_collector.routes.ingest", "ctxledger_collector.ops.keys", 3),
        ("ctxledger_collector.routes.ingest", "ctxledger_collector.app", 4),
        ("ctxledger_collector.serve", "ctxledger_collector.app", 5),
        ("ctxledger_collector.ops.metrics", "ctxledger_collector", 6),
    ]
    graph: dict[str, list[Edge]] = {}
    for source, target, line in edges:
        graph.setdefault(source, []).append(Edge(source, target, line))
    assert step_violations(graph) == [
        "ctxledger_collector.storage.rows:7 imports ctxledger_collector.judge.store",
        "ctxledger_collector.ingest.admission:9 imports ctxledger_collector.routes.state",
        "ctxledger_collector.ingest.admission:10 imports ctxledger_collector.storage.rows",
        "ctxledger_collector.routes.ingest:4 imports ctxledger_collector.app",
        "ctxledger_collector.ops.metrics:6 imports ctxledger_collector",
    ]


def test_no_collector_module_is_much_over_300_lines() -> None:
    root = ROOT / "collector" / "ctxledger_collector"
    long = {
        str(path.relative_to(root)): lines
        for path in root.rglob("*.py")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > 320
    }
    assert long == {}
