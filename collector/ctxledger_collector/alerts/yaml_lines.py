"""Alert rules written in YAML: the data, the line of every key, and duplicate keys.

Lines come from the composed node tree, which keeps the position of every key and
value; the data itself from ``yaml.safe_load``.
"""

from __future__ import annotations

from typing import Any

import yaml  # type: ignore[import-untyped]  # no types-PyYAML in the dev tools

from ctxledger_collector.alerts.problems import AlertsConfigError, Loc, Problem


def parse_yaml(text: str, filename: str) -> tuple[Any, Any]:
    """The data and the node tree (for line numbers) of a YAML document."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        what = ": ".join(str(part) for part in (error.context, error.problem) if part)
        kind = (
            "YAML error"
            if isinstance(error, yaml.constructor.ConstructorError)
            else "YAML syntax error"
        )
        raise AlertsConfigError([f"{filename}{line}: {kind}: {what}"]) from None
    except yaml.YAMLError as error:  # e.g. a ReaderError: a forbidden character
        position = getattr(error, "position", None)
        line = f":{text[:position].count(chr(10)) + 1}" if isinstance(position, int) else ""
        raise AlertsConfigError([f"{filename}{line}: YAML error: {error}"]) from None
    return data, root


def yaml_line(node: Any, loc: Loc) -> int | None:
    """The line of the node at ``loc``, or of its closest existing parent."""
    if node is None:
        return None
    line: int = node.start_mark.line + 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for key, value in reversed(node.value):  # the last of equal keys counts
                if isinstance(key, yaml.ScalarNode) and key.value == part:
                    line, node = key.start_mark.line + 1, value
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if not 0 <= part < len(node.value):
                return line
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def yaml_duplicate_keys(root: Any) -> list[Problem]:
    """YAML keeps the last of two equal keys silently; here that is a mistake."""
    found: list[Problem] = []
    seen: set[int] = set()

    def walk(node: Any, loc: Loc) -> None:
        if node is None or id(node) in seen:  # an alias can point back to its anchor
            return
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                walk(item, (*loc, index))
        elif isinstance(node, yaml.MappingNode):
            first: dict[str, int] = {}
            for key, value in node.value:
                if not isinstance(key, yaml.ScalarNode):
                    continue
                line = key.start_mark.line + 1
                if key.value in first:
                    message = f"duplicate key (first on line {first[key.value]})"
                    found.append((line, (*loc, key.value), message))
                else:
                    first[key.value] = line
                walk(value, (*loc, key.value))

    walk(root, ())
    return found
