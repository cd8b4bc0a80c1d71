"""The coverage plot of the ci-coverage benchmark (:mod:`ddssp.bench.ci_coverage`): coverage vs eps,
one row of panels per model, one line per interval variant."""

from __future__ import annotations

import numpy as np
import pandas as pd

#: how the coverage plot shows each interval variant: (legend label, colour, line style, marker).
#: Families share a line style (solid: the measurement bootstrap of ``fit --ci``; dashed / dash-dot:
#: the mechanism bootstrap; dotted grey: without the DP part); the variant that ``fit --ci`` uses by
#: default comes first.
VARIANT_STYLES: dict[str, tuple[str, str, str, str]] = {
    "dp+sampling": ("projected delta method + model-based (fit --ci default)", "#1f77b4", "-", "o"),
    "dp+sampling+unmeasured-inf": ("projected delta method, unmeasured pairs unbounded", "#9ecae1", "-", "s"),
    "boot-dp+sampling": ("measurement bootstrap for every coefficient", "#2ca02c", "-", "^"),
    "mech-normal+unmeasured-inf": ("mechanism bootstrap, normal", "#d62728", "--", "o"),
    "mech-normal": ("mechanism bootstrap, normal, unmeasured kept", "#f4a6a6", "--", "s"),
    "mech-bc-normal+unmeasured-inf": ("mechanism bootstrap, bias-corrected normal", "#6a3d9a", "--", "D"),
    "mech-bc-normal": ("mechanism bootstrap, bias-corrected, unmeasured kept", "#cab2d6", "--", "d"),
    "mech-basic": ("mechanism bootstrap, basic", "#ff7f0e", "-.", "^"),
    "mech-percentile": ("mechanism bootstrap, percentile", "#8c564b", "-.", "v"),
    "sampling-only": ("sampling variance only (no DP noise)", "0.25", ":", "x"),
    "mech-sampling-only-normal": ("mechanism, sampling variance only", "0.6", ":", "+"),
}


def plot_coverage(res: pd.DataFrame, path, trials: int) -> bool:
    """Coverage vs eps, one row of panels per model (90% and 95% intervals).

    One line per interval variant with a readable name (:data:`VARIANT_STYLES`), the nominal levels and
    the [0.93, 0.97] goal band, and one legend for the figure.

    Parameters
    ----------
    res : pandas.DataFrame
        The results.
    path : str or path-like
        The PNG to write.
    trials : int
        The trial count, for the title.

    Returns
    -------
    bool
        False when matplotlib is missing or there is nothing to plot.
    """
    from ddssp.bench.plotting import pyplot

    plt = pyplot()
    if plt is None:
        return False
    import matplotlib.ticker as mticker

    from ddssp.data.fileio import atomic_write

    cov = res[res["metric"].isin(["cover90", "cover95"])]
    variants = cov["method"].str.split("/", n=1).str[1]
    cov = cov[variants.isin(VARIANT_STYLES)]
    models = sorted({m.split("/")[0] for m in cov["method"]})
    if not models:
        return False
    eps_values = sorted({float(e) for e in cov["epsilon"]})
    order = list(VARIANT_STYLES)
    fig, axes = plt.subplots(len(models), 2, figsize=(12, 3.9 * len(models) + 1.6), squeeze=False)
    for row, model in zip(axes, models):
        for ax, (metric, level) in zip(row, (("cover90", 0.90), ("cover95", 0.95))):
            sub = cov[(cov["metric"] == metric) & cov["method"].str.startswith(model + "/")]
            present = {m.split("/", 1)[1]: g for m, g in sub.groupby("method")}
            for variant in (v for v in order if v in present):
                g = present[variant].groupby("epsilon")["value"]
                m, n = g.mean(), g.count()
                se = (g.std() / np.sqrt(n)).where(n > 1)
                label, color, ls, marker = VARIANT_STYLES[variant]
                ax.errorbar(
                    m.index,
                    m.values,
                    yerr=None if se.isna().all() else se.fillna(0).values,
                    marker=marker,
                    ms=5,
                    capsize=3,
                    ls=ls,
                    color=color,
                    label=label,
                )
            ax.axhline(level, color="k", lw=1)
            if level == 0.95:
                ax.axhspan(0.93, 0.97, color="0.88", zorder=0)
            ax.set_xscale("log")
            ax.xaxis.set_major_locator(mticker.FixedLocator(eps_values))
            ax.xaxis.set_major_formatter(mticker.FixedFormatter([f"{e:g}" for e in eps_values]))
            ax.xaxis.set_minor_formatter(mticker.NullFormatter())
            ax.set_ylim(0, 1.02)
            ax.set_xlabel("epsilon (privacy budget)")
            ax.set_ylabel("share of intervals covering the truth")
            band = ", grey band: goal 0.93 to 0.97" if level == 0.95 else ""
            ax.set_title(f"{model} regression, {level:.0%} intervals (black line: {level:.0%}{band})", fontsize=9)
            ax.grid(True, alpha=0.3)
    fig.suptitle(
        f"Coverage of the confidence intervals of `ddssp fit --ci` on a known population\n"
        f"({trials} release{'s' if trials != 1 else ''} per eps, 6 coefficients each; "
        "bars: 1 standard error)",
        fontsize=11,
    )
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 1.25 / fig.get_figheight(), 1, 1))
    with atomic_write(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=110)
    plt.close(fig)
    return True
