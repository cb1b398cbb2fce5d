"""Axes that say what they show, shared by every plot: a Pass@k axis ticked at its k values, a step axis ticked at
whole steps, a legend beside the data (never over it), text readable at the size a figure is shown."""

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


SHOWN_WIDTH_PX = 900  # about the width a README, a report or TensorBoard shows a figure at
MIN_SHOWN_TEXT_PX = 9  # the smallest text height (pixels, at that width) a plot's text may have


def shown_text_px(fontsize_pt: float, fig) -> float:
    """A text's height in pixels when the figure (saved at its dpi) is shown SHOWN_WIDTH_PX wide (or smaller)."""
    width_px = fig.get_figwidth() * fig.dpi
    return fontsize_pt * fig.dpi / 72 * min(1.0, SHOWN_WIDTH_PX / width_px)


def step_axis(ax) -> None:
    """Tick a training-step axis at whole steps only."""
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def legend_beside(ax, **kwargs) -> None:
    """The legend to the right of the axes, clear of the data (none when no line has a label: matplotlib would warn)."""
    if ax.get_legend_handles_labels()[1]:
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, **kwargs)
