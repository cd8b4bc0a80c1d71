"""The quality report as one self-contained HTML page, its figures drawn with matplotlib."""

from __future__ import annotations

from ddssp.evaluation.scores import BANNER

__all__ = ["agency_lines", "agency_summary", "render_html"]


def _png(fig) -> str:
    import base64
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _pct(x: float | None) -> str:
    return "below the smallest sub-sample" if x is None else f"{100 * x:.1f}%"


def agency_summary(ag: dict) -> str:
    """One sentence: the k-marginal score and the sub-sample it resembles.

    Parameters
    ----------
    ag : dict
        The agency scores (:func:`ddssp.evaluation.agency.agency_scores`).

    Returns
    -------
    str
    """
    km = ag["kmarginal"]
    cal = km["calibration"]
    return (
        f"k-marginal score {km['score']:.1f} / 1000 over {km['pairs']} pairs of {len(km['features'])} features "
        f"({ag['rows_synthetic']} synthetic rows vs {ag['rows_data']} data rows): like a "
        f"{_pct(cal['equivalent'])} sub-sample of the data (nearest scored: {100 * cal['nearest']:g}%)"
    )


def agency_lines(ag: dict) -> list[str]:
    """The agency scores as lines of text, for the CLI's summary.

    Parameters
    ----------
    ag : dict
        The agency scores (:func:`ddssp.evaluation.agency.agency_scores`).

    Returns
    -------
    list of str
    """
    km = ag["kmarginal"]
    out = [agency_summary(ag)]
    out.append(
        "  sub-samples: "
        + ", ".join(f"{100 * f['fraction']:g}% {f['score']:.0f}" for f in km["calibration"]["fractions"])
    )
    if "groups" in km:
        worst = ", ".join(f"{g['group']} {g['score']:.0f}" for g in km["groups"][:5])
        out.append(f"  within {km['group']} ({len(km['groups'])} groups), worst first: {worst}")
    u = ag["unique_exact_matches"]
    out.append(
        f"unique exact matches: {u['matched']} of {u['unique_records']} unique data records "
        f"({u['matched_percent']:.2f}%) appear among the synthetic rows"
    )
    if "apparent_matches" in ag:
        a = ag["apparent_matches"]
        med = "" if a["median"] is None else f", median agreement on the other columns {a['median']:.0f}%"
        out.append(
            f"apparent matches on {', '.join(map(str, a['quasi_identifiers']))}: {a['matched']} "
            f"({a['matched_percent']:.2f}% of data rows){med}"
        )
    p = ag.get("pmse")
    if p is not None:
        out.append(
            f"pMSE: {p['error']}"
            if "error" in p
            else f"pMSE {p['pmse']:.4g} (0 = indistinguishable, {p['max']:.4g} = separable; {p['classifier']})"
        )
    for r in ag.get("rules", []):
        out.append(
            f"rule {r['rule']!r}: broken by {r['synthetic']} synthetic rows ({r['synthetic_percent']:.2f}%), "
            f"{r['data']} data rows"
        )
    return out


def _agency_html(ag: dict, png) -> list[str]:
    """The agency section of the page: scores, the calibration chart and tables."""
    import html

    import matplotlib.pyplot as plt

    esc = html.escape
    km = ag["kmarginal"]
    cal = km["calibration"]
    fig, ax = plt.subplots(figsize=(6, 3))
    fr = [100 * f["fraction"] for f in cal["fractions"]]
    ax.plot(fr, [f["score"] for f in cal["fractions"]], "o-", label="sub-sample of the data")
    ax.axhline(km["score"], color="C3", ls="--", label=f"synthetic rows ({km['score']:.0f})")
    if cal["equivalent"] is not None:
        ax.axvline(100 * cal["equivalent"], color="C3", ls=":")
    ax.set_xlabel("sub-sample size (% of the data)")
    ax.set_ylabel("k-marginal score")
    ax.legend(fontsize=7)
    chart = png(fig)
    parts = [
        "<h2>Agency measures of synthetic rows (SDNist's definitions)</h2>",
        f"<p>{esc(agency_summary(ag))}.</p>",
        f"<img src='data:image/png;base64,{chart}'>",
        "<table><tr><th>sub-sample</th><th>k-marginal</th></tr>",
    ]
    parts += [f"<tr><td>{100 * f['fraction']:g}%</td><td>{f['score']:.1f}</td></tr>" for f in cal["fractions"]]
    parts.append("</table>")
    if "groups" in km:
        base = cal.get("groups_40", {})
        parts.append(
            f"<h3>k-marginal within each {esc(str(km['group']))}, worst first</h3><table><tr><th>{esc(str(km['group']))}"
            "</th><th>data rows</th><th>score</th><th>40% sub-sample</th></tr>"
        )
        for g in km["groups"]:
            b = base.get(str(g["group"]))
            parts.append(
                f"<tr><td>{esc(str(g['group']))}</td><td>{g['rows_data']}</td><td>{g['score']:.1f}</td>"
                f"<td>{'' if b is None else f'{b:.1f}'}</td></tr>"
            )
        parts.append("</table>")
    parts.append("<h3>Privacy and consistency checks</h3><ul>")
    parts += [f"<li>{esc(line.strip())}</li>" for line in agency_lines(ag)[1:] if not line.startswith("  ")]
    parts.append("</ul>")
    return parts


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
    # the title is the HTML heading above the image: on a narrow figure (few columns) a matplotlib
    # title runs into the colour bar's labels
    fig.colorbar(im, ax=ax, label="total-variation error")
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
        "<h2>Total-variation error of every two-way marginal (diagonal: one-way)</h2>",
        f"<img src='data:image/png;base64,{heat}'>",
        "<h2>Worst two-way marginals</h2><table><tr><th>columns</th><th>TV</th></tr>",
    ]
    parts += [f"<tr><td>{esc(' x '.join(p['columns']))}</td><td>{p['tv']:.4f}</td></tr>" for p in res["two_way"][:15]]
    parts.append("</table>")
    if "grade" in res:
        parts += _grade_html(res["grade"])
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
    if "agency" in res:
        parts += _agency_html(res["agency"], _png)
    parts.append("<h2>One-way distributions</h2><div class='bars'>")
    parts += [f"<img src='data:image/png;base64,{b}'>" for b in bars]
    parts.append(f"</div><p class='warn'>{esc(BANNER)}</p></body></html>")
    return "\n".join(parts)


def _grade_html(gr: dict) -> list[str]:
    """The release's own grade beside the data's exact clipped and folded shares, and the dropped
    columns (:func:`ddssp.evaluation.grade.grade_vs_data`)."""
    import html

    esc = html.escape

    def pct(v):
        return "" if v is None else f"{v:.1%}"

    def pair(v):
        return "" if v is None else f"{v[0]:.1%} / {v[1]:.1%}"

    parts = [
        "<h2>The release's own grade vs the data</h2>",
        "<p>The grade is computed from the release's noisy outputs alone; the data columns are exact.</p>",
        "<table><tr><th>column</th><th>one-way error: expected / measured</th>"
        "<th>clipped below / above: data</th><th>release's estimate</th>"
        "<th>folded into the catch-all: data</th><th>release's estimate</th><th>weak</th></tr>",
    ]
    for c, r in gr["columns"].items():
        est = pair(r["clipped_estimate"]) or esc(r["clip_source"])
        parts.append(
            f"<tr><td>{esc(c)}</td><td>{pct(r['expected_error']) or 'inferred'} / {pct(r['measured_error'])}</td>"
            f"<td>{pair(r.get('clipped'))}</td><td>{est}</td><td>{pct(r.get('folded'))}</td>"
            f"<td>{pct(r['folded_estimate'])}</td><td>{esc('; '.join(r['weak']))}</td></tr>"
        )
    parts.append("</table>")
    if gr["dropped"]:
        parts.append(
            "<p>Dropped columns: " + esc("; ".join(f"{c} ({w})" if w else c for c, w in gr["dropped"].items())) + "</p>"
        )
    return parts
