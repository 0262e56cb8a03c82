"""The growth curves as a PNG: spans/s against trace length, one line per database,
the floors as dashed lines. Needs matplotlib (the ``dev`` extra); renders offline."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path


def plot_growth(
    curves: Mapping[str, Sequence[tuple[int, float]]],
    floors: Mapping[str, float],
    path: Path,
    subtitle: str,
) -> bool:
    """Write the plot; False (and a note) when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"matplotlib is not installed: no plot written to {path}")
        return False
    colours = {"sqlite": "tab:blue", "postgresql": "tab:orange"}
    figure, axes = plt.subplots(figsize=(8, 5), dpi=110)
    for n, (database, points) in enumerate(curves.items()):
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        colour = colours.get(database)
        axes.plot(xs, ys, marker="o", color=colour, label=f"{database}: collector, end to end")
        for x, y in points:
            axes.annotate(
                f"{y:,.0f}",
                (x, y),
                textcoords="offset points",
                xytext=(0, 6 if n == 0 else -13),
                ha="center",
                fontsize=8,
                color=colour,
            )
    for database, floor in floors.items():
        axes.axhline(
            floor,
            linestyle="--",
            color=colours.get(database),
            alpha=0.7,
            label=f"{database}: floor (decode + raw insert), {floor:,.0f}/s",
        )
    axes.set_xscale("log")
    axes.set_yscale("log")
    values = [*floors.values(), *(y for points in curves.values() for _, y in points)]
    if values:  # room above the floors and below the lowest point, for the labels
        axes.set_ylim(min(values) / 1.8, max(values) * 1.8)
    axes.set_xlabel("spans per trace (same total, traces of this length)")
    axes.set_ylabel("spans/s stored and judged")
    axes.set_title(f"ctxledger ingest: throughput vs trace length\n{subtitle}", fontsize=10)
    axes.grid(True, which="both", alpha=0.3)
    # Below the axes: inside, it covers the labels of whichever curve runs low.
    axes.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, frameon=False)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)
    return True
