"""The release's own grade beside the truth only the data holder can compute (NOT FOR PUBLICATION).

:meth:`ddssp.Release.grade` reads the noisy outputs alone; :func:`grade_vs_data` puts beside it, per
column, the exact share of the numbers outside the column's range (clipped into its end bins), the
exact share of the labels folded into its catch-all level, the one-way error the comparison measured,
and the columns the release left out. ``ddssp evaluate`` prints and draws it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


def grade_vs_data(rel: Any, data: pd.DataFrame, codes: pd.DataFrame, one_way: dict[str, Any]) -> dict[str, Any]:
    """The grade of ``rel`` beside the exact facts of the data it came from.

    Parameters
    ----------
    rel : Release
        The release.
    data : pandas.DataFrame
        The sensitive table in its own values (the release's columns).
    codes : pandas.DataFrame
        ``data`` encoded with the release's schema.
    one_way : dict
        ``{column: {"tv": ...}}``: the one-way errors measured against the data.

    Returns
    -------
    dict
        ``columns``: per column the grade's expected one-way error and clipped / folded estimates, the
        measured one-way error, the exact clipped shares below / above (numeric columns with a range
        on the number axis) and the exact folded share (columns with a catch-all level), and whether
        the grade calls it weak; ``dropped``: ``{column: why}`` for the discovered columns left out
        (and columns of the data the schema does not hold).
    """
    from ddssp.data.discovery.slots import parse_numbers
    from ddssp.releasefile.conditions import is_catch_all

    gr = rel.grade()
    out: dict[str, Any] = {}
    for col in rel.schema.columns:
        g = gr.columns[col.name]
        row: dict[str, Any] = {
            "weak": list(g.weak),
            "expected_error": g.error,
            "measured_error": float(one_way[col.name]["tv"]) if col.name in one_way else None,
            "clipped_estimate": list(g.clipped) if g.clipped is not None else None,
            "clip_source": g.clip_source,
            "folded_estimate": g.folded,
        }
        if col.name in data.columns:
            raw = data[col.name]
            if col.kind == "numeric" and col.bounds is not None and getattr(col, "unit", None) is None:
                x, _ = parse_numbers(raw)
                x = x[~np.isnan(x)]
                lo, hi = col.bounds
                n = max(len(x), 1)
                row["clipped"] = [float(np.sum(x < lo) / n), float(np.sum(x > hi) / n)]
            if is_catch_all(col):  # discovery's <other>, not a declared missing level such as N
                present = raw.notna().to_numpy()
                folded = (codes[col.name].to_numpy() == col.missing_code) & present
                row["folded"] = float(folded.sum() / max(int(present.sum()), 1))
        out[col.name] = row
    dropped = dict(gr.dropped)
    for c in data.columns:
        if str(c) not in rel.schema and str(c) not in dropped:
            dropped[str(c)] = "not in the release's schema"
    return {"columns": out, "dropped": dropped}


def grade_lines(res: dict[str, Any]) -> list[str]:
    """The comparison as text lines: folded labels, clipped shares, dropped columns, weak columns.

    Parameters
    ----------
    res : dict
        From :func:`grade_vs_data`.

    Returns
    -------
    list of str
    """
    cols = res["columns"]
    out = []
    folded = [(c, r) for c, r in cols.items() if r.get("folded") is not None and r["folded"] > 0]
    if folded:
        out.append(
            "folded labels (rows in the catch-all level; data / release's estimate): "
            + ", ".join(f"{c} {r['folded']:.1%} / {_pct(r['folded_estimate'])}" for c, r in folded)
        )
    clipped = [(c, r) for c, r in cols.items() if r.get("clipped") is not None and sum(r["clipped"]) > 0]
    if clipped:
        out.append(
            "clipped numbers (below / above the range; data, then the release's estimate): "
            + ", ".join(
                f"{c} {_pair(r['clipped'])} ({_pair(r['clipped_estimate'], r['clip_source'])})" for c, r in clipped
            )
        )
    if res["dropped"]:
        out.append(
            "dropped columns: " + "; ".join(f"{c}" + (f" ({why})" if why else "") for c, why in res["dropped"].items())
        )
    weak = [c for c, r in cols.items() if r["weak"]]
    out.append(f"weak columns by the release's own grade: {', '.join(weak) if weak else 'none'}")
    return out


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1%}"


def _pair(v: list[float] | None, source: str = "") -> str:
    if v is None:
        return source or "n/a"
    return f"{v[0]:.1%} / {v[1]:.1%}"
