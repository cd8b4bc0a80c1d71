"""The tables of the agency bench (:mod:`.agency`): the sub-sample calibration and each release
configuration beside it, as markdown (``results.md``)."""

from __future__ import annotations

import pandas as pd


def _mean(g: pd.DataFrame, metric: str) -> float:
    v = g.loc[g["metric"] == metric, "value"].dropna()
    return float(v.mean()) if len(v) else float("nan")


def _fmt(x: float, spec: str = "{:.1f}") -> str:
    return "" if x != x else spec.format(x)


def markdown_tables(results: pd.DataFrame) -> str:
    """The sub-sample calibration and each configuration beside it, as markdown.

    Parameters
    ----------
    results : pandas.DataFrame
        The results.

    Returns
    -------
    str
    """
    if results.empty:
        return "(no results)\n"
    lines = ["Sub-samples of the data (mean over draws; SDNist's code / ddssp's):", ""]
    subs = results[results["method"] == "subsample"]
    fracs = sorted(subs["fraction"].unique())
    head = ["state", "features"] + [f"{f:.0%}" for f in fracs]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (state, feats), g in subs.groupby(["state", "features"], sort=False):
        cells = [state, feats]
        for f in fracs:
            gf = g[g["fraction"] == f]
            cells.append(f"{_fmt(_mean(gf, 'sdnist_kmarginal'))} / {_fmt(_mean(gf, 'kmarginal'))}")
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Releases (mean over releases, min-max of SDNist's grouped score in brackets):", ""]
    head = ["state", "features", "eps", "config", "releases", "SDNist grouped", "ddssp grouped", "worst PUMA"]
    head += ["plain", "rule violations", "SDNist age / work / housing", "release CPU s", "like a sub-sample of"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    rel = results[results["method"] != "subsample"]
    for (state, feats, eps, method), g in rel.groupby(["state", "features", "epsilon", "method"], sort=False):
        sd = g.loc[g["metric"] == "sdnist_kmarginal", "value"]
        km = _mean(g, "sdnist_kmarginal") if len(sd) else _mean(g, "kmarginal")
        which = "sdnist_kmarginal" if len(sd) else "kmarginal"
        sub = subs[(subs["state"] == state) & (subs["features"] == feats)]
        curve = [(f, _mean(sub[sub["fraction"] == f], which)) for f in fracs]
        like = _like(curve, km)
        sd_txt = f"{_fmt(km)} ({_fmt(sd.min())}-{_fmt(sd.max())})" if len(sd) else ""
        ic = " / ".join(_fmt(_mean(g, f"sdnist_{x}"), "{:.0f}") for x in ("age", "work", "housing"))
        cells = [state, feats, f"{eps:g}", method, str(int((g["metric"] == "ok").sum()))]
        cells += [sd_txt, _fmt(_mean(g, "kmarginal")), _fmt(_mean(g, "worst_puma")), _fmt(_mean(g, "kmarginal_plain"))]
        cells += [_fmt(_mean(g, "rule_violations"), "{:.0f}"), ic, _fmt(_mean(g, "release_cpu_s"), "{:.0f}"), like]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _like(curve: list[tuple[float, float]], score: float) -> str:
    """The sub-sample fraction whose score equals ``score`` (linear between the fractions around it)."""
    pts = [(f, s) for f, s in curve if s == s] + [(1.0, 1000.0)]
    if score != score or not pts:
        return ""
    if score < pts[0][1]:
        return f"< {pts[0][0]:.0%}"
    for (f0, s0), (f1, s1) in zip(pts[:-1], pts[1:]):
        if s0 <= score <= s1:
            return f"{f0 + (score - s0) / (s1 - s0) * (f1 - f0) if s1 > s0 else f0:.0%}"
    return "100%"


__all__ = ["markdown_tables"]
