"""The data holder's quality report: a release against the sensitive data it came from.

NOT FOR PUBLICATION: the report holds exact statistics of the data. :func:`evaluate` returns a
:class:`QualityReport` with the scores (mean one- and two-way total-variation error, per column and
per pair, and the regression agreement), a notebook display and a self-contained HTML page; the CLI
``ddssp evaluate`` prints and writes the same object.
"""

from __future__ import annotations

import html as _html
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ddssp._warnings import tidy_warnings
from ddssp.marginals.workload import total_variation as tv

BANNER = "NOT FOR PUBLICATION: this report holds exact statistics of the sensitive data (no privacy)"

__all__ = ["BANNER", "QualityReport", "compare", "evaluate", "render_html", "tv"]


@tidy_warnings
def evaluate(
    release: Any,
    data: Any,
    target: str | None = None,
    *,
    model: str | None = None,
    features: list[str] | None = None,
    encoded: bool = False,
    na_values: list[str] | None = None,
    delimiter: str | None = None,
    encoding: str | None = None,
) -> QualityReport:
    """Compare ``release`` with the data it was made from (for the data holder; NOT private).

    Parameters
    ----------
    release : ddssp.Release or str or Path
        The release, or the path of a release file.
    data : pandas.DataFrame or str or Path
        The sensitive table in its own values (as given to :func:`ddssp.release`), or its path
        (read with the reading options stored in the release unless given here). Columns the
        release left out are ignored.
    target : str, optional
        Also compare the DD-SSP regression of this column (release vs the data's exact marginals).
    model : {"linear", "logistic"}, optional
        Regression for ``target`` (default: logistic for a two-level target, else linear).
    features : list of str, optional
        Features of the regression (default: all other columns).
    encoded : bool
        ``data`` already holds the release schema's integer codes.
    na_values, delimiter, encoding : optional
        Reading options for a ``data`` path, overriding those the release records.

    Returns
    -------
    QualityReport
        Scores, per-column and per-pair tables, ``to_html(path)``; shown as a table in notebooks.

    Raises
    ------
    ddssp.errors.SchemaError
        When the data does not fit the release's schema (unknown column, for instance).
    """
    from ddssp.data.tables import read_table
    from ddssp.releasefile import Release

    rel = release if isinstance(release, Release) else Release.load(release)
    if isinstance(data, (str, Path)):
        reading = rel.reading
        delim = reading["delimiter"] if delimiter is None else delimiter
        data = read_table(
            data,
            delimiter="\t" if delim == "\\t" else delim,
            na_values=reading["na_values"] if na_values is None else na_values,
            encoding=reading["encoding"] if encoding is None else encoding,
        )
    if not isinstance(data, pd.DataFrame):
        from ddssp.errors import DataError

        raise DataError(f"evaluate needs a DataFrame or the path of a table, got {type(data).__name__}")
    if set(rel.schema.names) <= set(map(str, data.columns)):  # columns the release left out
        data = data[[c for c in data.columns if str(c) in rel.schema]]
    codes = data if encoded else rel.schema.encode(data)
    return QualityReport(compare(rel, codes, target=target, model=model, features=features), list(rel.schema.names))


class QualityReport:
    """How far a release is from the data (NOT FOR PUBLICATION: exact statistics of the data).

    Parameters
    ----------
    result : dict
        The comparison from :func:`compare`.
    names : list of str
        The columns compared.
    title : str
        The title of the HTML page.

    Attributes
    ----------
    one_way_tv, two_way_tv, max_two_way_tv : float
        Mean total-variation error of the one-way and two-way marginals, and the largest two-way one.
    columns : pandas.DataFrame
        Per column: its one-way TV error.
    pairs : pandas.DataFrame
        Per pair of columns: its two-way TV error, worst first.
    regression : pandas.DataFrame or None
        With a target: each coefficient from the release and from the data's exact marginals.
    """

    banner = BANNER

    def __init__(self, result: dict, names: list[str], title: str = "ddssp quality report"):
        self._res = result
        self.names = list(names)
        self.title = title
        self.one_way_tv = float(np.mean([result["one_way"][c]["tv"] for c in names])) if names else 0.0
        self.two_way_tv = float(result["two_way_mean_tv"])
        self.max_two_way_tv = float(result["two_way_max_tv"])
        self.columns = pd.DataFrame({"column": names, "tv": [result["one_way"][c]["tv"] for c in names]})
        self.pairs = pd.DataFrame(
            {
                "column_a": [p["columns"][0] for p in result["two_way"]],
                "column_b": [p["columns"][1] for p in result["two_way"]],
                "tv": [p["tv"] for p in result["two_way"]],
            }
        )
        reg = result.get("regression")
        self.regression = (
            None
            if reg is None
            else pd.DataFrame(reg["coefficients"]).assign(difference=lambda t: t["release"] - t["data"])
        )

    def get_score(self) -> float:
        """One number in [0, 1], higher is better: 1 - the mean two-way TV error.

        Returns
        -------
        float
        """
        return 1.0 - self.two_way_tv

    def to_dict(self) -> dict:
        """Everything in the report as plain JSON-able values, marked ``not_for_publication``.

        Returns
        -------
        dict
        """
        out = dict(self._res)
        out["one_way_mean_tv"] = self.one_way_tv
        out["not_for_publication"] = True
        return out

    def to_html(self, path: str | Path | None = None, *, force: bool = False) -> str:
        """The report as one self-contained HTML page (figures need matplotlib, the ``plot`` extra).

        Parameters
        ----------
        path : str or Path, optional
            Write the page there (atomically; an existing file only with ``force``).
        force : bool
            Replace an existing file.

        Returns
        -------
        str
            The page.
        """
        page = render_html(self._res, self.names, self.title)
        if path is not None:
            from ddssp.data.fileio import atomic_write, check_output_path

            out = check_output_path(str(path), force=force, inputs=[])
            with atomic_write(out, "w", encoding="utf-8") as fh:
                fh.write(page)
        return page

    def _repr_html_(self) -> str:
        esc = _html.escape
        rows = "".join(
            f"<tr><td>{esc(a)} x {esc(b)}</td><td>{t:.4f}</td></tr>"
            for a, b, t in self.pairs.head(10).itertuples(index=False)
        )
        reg = ""
        if self.regression is not None:
            r = self._res["regression"]
            reg = (
                f"<p>DD-SSP {esc(r['model'])} regression of {esc(r['target'])}: relative L2 error "
                f"{r['rel_l2_error']:.4g} (release vs the data's exact marginals)</p>"
            )
        return (
            f"<div><p style='background:#b00;color:#fff;padding:4px;font-weight:bold'>{esc(BANNER)}</p>"
            f"<p>Mean TV error: one-way {self.one_way_tv:.4f}, two-way {self.two_way_tv:.4f} "
            f"(max {self.max_two_way_tv:.4f}) over {len(self.pairs)} pairs.</p>{reg}"
            f"<table><tr><th>worst pairs</th><th>TV</th></tr>{rows}</table></div>"
        )

    def __repr__(self) -> str:
        return (
            f"<QualityReport (NOT FOR PUBLICATION): mean TV one-way {self.one_way_tv:.4f}, "
            f"two-way {self.two_way_tv:.4f} (max {self.max_two_way_tv:.4f}), {len(self.pairs)} pairs>"
        )


def compare(rel: Any, codes: pd.DataFrame, target=None, model=None, features=None) -> dict:
    """Errors of a release against the integer codes of the data, as a plain dict (not private).

    The one-way and two-way total-variation errors of the release's model against the data, and with
    ``target`` the DD-SSP regression from the release against the same regression on the data's
    exact marginals. :func:`evaluate` wraps this in a :class:`QualityReport`.

    Parameters
    ----------
    rel : Release
        The release.
    codes : pandas.DataFrame
        The data, encoded with the release's schema.
    target : str, optional
        Also compare the DD-SSP regression of this column.
    model : str, optional
        ``"linear"`` or ``"logistic"`` (default: logistic for a two-level target, else linear).
    features : list of str, optional
        The regression's features (default: all other columns).

    Returns
    -------
    dict
        ``rows_data``, ``rows_release``, ``one_way``, ``two_way``, ``two_way_mean_tv``,
        ``two_way_max_tv`` and, with a target, ``regression``.

    Raises
    ------
    SchemaError
        For a target not in the schema.
    DDSSPError
        When the regression cannot be fitted (e.g. a logistic target without two levels).
    """
    import itertools

    import numpy as np

    from ddssp.errors import DDSSPError
    from ddssp.estimators.suffstats import ExactMarginals

    schema = rel.schema
    names = list(schema.names)
    exact = ExactMarginals(codes, schema)
    one = {}
    for c in names:
        d, r = exact.marginal([c]), rel.marginal([c])
        one[c] = {
            "tv": tv(d, r),
            "data": (d / d.sum()).tolist(),
            "release": (np.clip(r, 0, None) / max(r.sum(), 1e-300)).tolist(),
            "labels": [str(x) for x in (getattr(schema.column(c), "labels", None) or range(schema.domain[c]))],
        }
    pairs = {}
    for a, b in itertools.combinations(names, 2):
        pairs[(a, b)] = tv(exact.marginal([a, b]), rel.marginal([a, b]))
    out = {
        "rows_data": int(len(codes)),
        "rows_release": float(rel.total),
        "one_way": one,
        "two_way": [{"columns": list(k), "tv": v} for k, v in sorted(pairs.items(), key=lambda kv: -kv[1])],
        "two_way_mean_tv": float(np.mean(list(pairs.values()))) if pairs else 0.0,
        "two_way_max_tv": float(max(pairs.values())) if pairs else 0.0,
    }
    if target is not None:
        from ddssp.estimators.ddssp import DDSSPLinearRegression, DDSSPLogisticRegression

        schema.column(target)
        if model is None:
            model = "logistic" if schema.domain[target] == 2 else "linear"
        cls = DDSSPLogisticRegression if model == "logistic" else DDSSPLinearRegression
        try:
            r = cls(features=features).fit(rel, target)
            d = cls(features=features).fit(exact, target)
        except DDSSPError:
            raise
        coef_r = np.concatenate([[r.intercept_], r.coef_])
        coef_d = np.concatenate([[d.intercept_], d.coef_])
        out["regression"] = {
            "target": target,
            "model": model,
            "coefficients": [
                {"name": n, "release": float(x), "data": float(y)}
                for n, x, y in zip(["intercept"] + list(r.feature_names_in_), coef_r, coef_d)
            ],
            "max_abs_diff": float(np.max(np.abs(coef_r - coef_d))),
            "rel_l2_error": float(np.linalg.norm(coef_r - coef_d) / max(np.linalg.norm(coef_d), 1e-300)),
        }
    return out


def _png(fig) -> str:
    import base64
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def render_html(res: dict, names: list[str], title: str) -> str:
    """The report as one self-contained HTML page (figures inlined as PNG), with the not-for-publication banner.

    Parameters
    ----------
    res : dict
        The comparison from :func:`compare`.
    names : list of str
        The columns compared.
    title : str
        The page's title.

    Returns
    -------
    str
    """
    import html

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    k = len(names)
    M = np.full((k, k), np.nan)
    idx = {c: i for i, c in enumerate(names)}
    for c in names:
        M[idx[c], idx[c]] = res["one_way"][c]["tv"]
    for p in res["two_way"]:
        a, b = p["columns"]
        M[idx[a], idx[b]] = M[idx[b], idx[a]] = p["tv"]
    fig, ax = plt.subplots(figsize=(1.0 + 0.55 * k, 0.8 + 0.5 * k))
    im = ax.imshow(M, cmap="viridis", vmin=0)
    ax.set_xticks(range(k), names, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(k), names, fontsize=8)
    for i in range(k):
        for j in range(k):
            if np.isfinite(M[i, j]):
                ax.text(
                    j,
                    i,
                    f"{M[i, j]:.2f}",
                    ha="center",
                    va="center",
                    fontsize=6,
                    color="white" if M[i, j] < 0.6 * np.nanmax(M) else "black",
                )
    fig.colorbar(im, ax=ax, label="total-variation error")
    ax.set_title("TV error of every two-way marginal (diagonal: one-way)")
    heat = _png(fig)
    bars = []
    for c in names:
        o = res["one_way"][c]
        m = len(o["data"])
        fig, ax = plt.subplots(figsize=(min(2 + 0.25 * m, 12), 2.6))
        x = np.arange(m)
        ax.bar(x - 0.2, o["data"], width=0.4, label="data")
        ax.bar(x + 0.2, o["release"], width=0.4, label="release")
        labels = o["labels"]
        # bin labels such as "[7.62336, 10.7002)" or date ranges overlap side by side: slant them
        slant = m > 6 or sum(len(str(v)) for v in labels) > 6 * m
        ax.set_xticks(
            x,
            labels if m <= 40 else [""] * m,
            rotation=60 if slant else 0,
            ha="right" if slant else "center",
            rotation_mode="anchor" if slant else "default",
            fontsize=7,
        )
        ax.set_title(f"{c}  (TV {o['tv']:.3f})", fontsize=9)
        ax.legend(fontsize=7)
        bars.append(_png(fig))
    esc = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{esc(title)}</title>",
        "<style>body{font-family:sans-serif;max-width:1100px;margin:auto}"
        ".warn{background:#b00;color:#fff;padding:8px;font-weight:bold}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;font-size:12px}"
        "img{max-width:100%}.bars img{display:inline-block;margin:4px}</style></head><body>",
        f"<p class='warn'>{esc(BANNER)}</p>",
        f"<h1>{esc(title)}</h1>",
        f"<p>Data rows: {res['rows_data']}; release model total: {res['rows_release']:.1f}. "
        f"Two-way marginals: {len(res['two_way'])}, mean TV error {res['two_way_mean_tv']:.4f}, "
        f"max {res['two_way_max_tv']:.4f}.</p>",
        f"<img src='data:image/png;base64,{heat}'>",
        "<h2>Worst two-way marginals</h2><table><tr><th>columns</th><th>TV</th></tr>",
    ]
    parts += [f"<tr><td>{esc(' x '.join(p['columns']))}</td><td>{p['tv']:.4f}</td></tr>" for p in res["two_way"][:15]]
    parts.append("</table>")
    if "regression" in res:
        reg = res["regression"]
        parts.append(f"<h2>DD-SSP {esc(reg['model'])} regression of {esc(reg['target'])}: release vs data</h2>")
        parts.append(f"<p>max |difference| {reg['max_abs_diff']:.4g}; relative L2 error {reg['rel_l2_error']:.4g}</p>")
        parts.append(
            "<table><tr><th>coefficient</th><th>release</th><th>data (exact marginals)</th><th>difference</th></tr>"
        )
        parts += [
            f"<tr><td>{esc(r['name'])}</td><td>{r['release']:.5f}</td><td>{r['data']:.5f}</td>"
            f"<td>{r['release'] - r['data']:+.5f}</td></tr>"
            for r in reg["coefficients"]
        ]
        parts.append("</table>")
    parts.append("<h2>One-way distributions</h2><div class='bars'>")
    parts += [f"<img src='data:image/png;base64,{b}'>" for b in bars]
    parts.append(f"</div><p class='warn'>{esc(BANNER)}</p></body></html>")
    return "\n".join(parts)
