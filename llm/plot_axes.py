"""Axes that say what they show: the one rule for a Pass@k axis, shared by every plot that has one."""
from __future__ import annotations


def label_k_axis(ax, ks) -> None:
    """Tick a log k axis at the k values themselves (1, 16, 32), not at powers of the log base."""
    from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter

    ks = sorted(ks)
    ax.xaxis.set_major_locator(FixedLocator(ks))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_locator(NullLocator())
    if len(ks) == 1:  # one k: a little room on both sides of it
        ax.set_xlim(ks[0] / 2, ks[0] * 2)
