from ddssp.commands import comma_list, input_group, model_group, output_group, warn_stamp
from ddssp.marginals.workload import total_variation as tv

HELP = "data holder only: compare a release with the sensitive data it came from (NOT for publication)"

DESCRIPTION = """For the data holder, before publishing: reads the SENSITIVE table and the release, and reports
how far the released model is from the data. Total-variation error of every one- and two-way marginal,
the one-way distributions side by side, and (with --target) the DD-SSP regression from the release
against the same regression on the data's exact marginals. The report contains exact statistics of the
data: it is NOT private and NOT for publication. Written as one self-contained HTML file (figures
embedded; needs matplotlib, the `plot` extra)."""

BANNER = "NOT FOR PUBLICATION: this report holds exact statistics of the sensitive data (no privacy)"


EXAMPLES = """
    ddssp evaluate adult.release adult.csv --target income -o report.html   # data holder only
"""


def add_arguments(p) -> None:
    p.add_argument("release", help="release file written by `ddssp release`")
    p.add_argument("data", metavar="DATA", help="the sensitive table the release was made from (.csv or .parquet)")
    output_group(p).add_argument("-o", "--output", required=True, metavar="REPORT.html", help="HTML report to write")
    model_group(p).add_argument("--target", help="also compare the DD-SSP regression of this column (release vs data)")
    model_group(p).add_argument(
        "--model",
        choices=["linear", "logistic"],
        default=None,
        help="regression model for --target (default: logistic for a two-level target, else linear)",
    )
    model_group(p).add_argument(
        "--features", type=comma_list, help="feature columns for --target (default: all others)"
    )
    input_group(p).add_argument(
        "--na-values",
        type=comma_list,
        metavar="X,Y",
        default=None,
        help="cell values that mean missing, besides empty cells (default: those the release "
        "records, i.e. the --na-values it was made with)",
    )
    input_group(p).add_argument(
        "--delimiter", default=None, help="CSV field delimiter (default: the release's, else ,)"
    )
    input_group(p).add_argument(
        "--encoding", default=None, help="CSV text encoding (default: the release's, else utf-8)"
    )
    output_group(p).add_argument("--json", action="store_true", help="print the summary as JSON")
    output_group(p).add_argument("--force", action="store_true", help="replace an existing report")


def evaluate(rel, codes, target=None, model=None, features=None) -> dict:
    """Errors of release ``rel`` against the integer ``codes`` of the data (not private)."""
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
        ax.set_xticks(
            x,
            labels if m <= 40 else [""] * m,
            rotation=60 if m > 6 else 0,
            ha="right" if m > 6 else "center",
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


def run(args) -> int:
    import json
    import sys

    from ddssp.data.fileio import atomic_write, check_output_path
    from ddssp.data.tables import read_table
    from ddssp.errors import DDSSPError
    from ddssp.releasefile import Release

    out = check_output_path(args.output, force=args.force, inputs=[args.release, args.data])
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise DDSSPError("evaluate draws its report with matplotlib: pip install 'ddssp[plot]'") from None
    print(f"ddssp: {BANNER}", file=sys.stderr)
    rel = Release.load(args.release)
    warn_stamp(rel, args.release)
    reading = rel.reading  # how the release's table was read (public settings stored in the file)
    na_values = reading["na_values"] if args.na_values is None else args.na_values
    delimiter = reading["delimiter"] if args.delimiter is None else args.delimiter
    delimiter = "\t" if delimiter == "\\t" else delimiter
    encoding = reading["encoding"] if args.encoding is None else args.encoding
    df = read_table(args.data, delimiter=delimiter, na_values=na_values, encoding=encoding)
    # columns the release left out (--columns/--drop, or not discoverable) are not compared
    df = df[
        [c for c in df.columns if str(c) in rel.schema]
        if set(rel.schema.names) <= set(map(str, df.columns))
        else list(df.columns)
    ]
    codes = rel.schema.encode(df)
    res = evaluate(rel, codes, target=args.target, model=args.model, features=args.features)
    page = render_html(res, list(rel.schema.names), f"ddssp evaluate: {args.release} vs {args.data}")
    with atomic_write(out, "w", encoding="utf-8") as fh:
        fh.write(page)
    res["not_for_publication"] = True
    res["stamp"] = rel.stamp
    if args.json:
        print(json.dumps(res, indent=1))
        return 0
    print(
        f"Release {args.release} vs data {args.data} ({res['rows_data']} rows; release total {res['rows_release']:.1f})"
    )
    print(
        f"  two-way marginals: {len(res['two_way'])}, TV error mean {res['two_way_mean_tv']:.4f}, "
        f"max {res['two_way_max_tv']:.4f}"
    )
    for p in res["two_way"][:5]:
        print(f"    {' x '.join(p['columns']):<40} TV {p['tv']:.4f}")
    width = max(len(c) for c in rel.schema.names)
    print("  one-way TV error:")
    for c in rel.schema.names:
        print(f"    {c:<{width}}  {res['one_way'][c]['tv']:.4f}")
    if "regression" in res:
        reg = res["regression"]
        print(
            f"  DD-SSP {reg['model']} regression of {reg['target']!r}: release vs data, max |diff| "
            f"{reg['max_abs_diff']:.4g}, relative L2 error {reg['rel_l2_error']:.4g}"
        )
    print(f"  report written to {out} ({BANNER})")
    return 0
