"""How well a release's own grade (from its noisy outputs only) agrees with the truth the data
holder can compute: real clipped shares, real folded shares, real one-way errors.

Releases raw public tables with no flags at eps 1 (seeded, insecure noise: a measurement, not a
publication) and prints one row per column, then a summary. Run from the repository:

    python examples/grade_agreement.py --seeds 3 > grade.tsv
"""

from __future__ import annotations

import argparse
import sys
import warnings

import numpy as np
import pandas as pd

import ddssp
from ddssp.bench.table_sources import load_table
from ddssp.evaluation.grade import grade_vs_data
from ddssp.evaluation.scores import compare
from ddssp.releasefile.quality import WEAK_CLIPPED, WEAK_ERROR, WEAK_FOLDED

TABLES = [
    ("diabetes", "sklearn:diabetes", None, []),
    ("anes96", "statsmodels:anes96", None, []),
    ("fair", "statsmodels:fair", 2000, []),
    ("randhie", "statsmodels:randhie", 2000, []),
    ("penguins", "palmerpenguins:penguins", None, ["NA"]),
    ("adult-300", "adult", 300, ["?"]),
    ("adult-1000", "adult", 1000, ["?"]),
    ("adult-2000", "adult", 2000, ["?"]),
]


def table(source: str, rows: int | None, na: list[str], seed: int) -> pd.DataFrame:
    """The raw table as text cells (empty and ``na`` cells missing), sampled to ``rows``."""
    if source == "adult":
        df = pd.read_csv("/work/shared/data/adult_raw.csv", dtype=str, keep_default_na=False)
    else:
        df = load_table(source, None)
    df = df.replace([""] + na, np.nan)
    if rows is not None and rows < len(df):
        df = df.sample(rows, random_state=seed).reset_index(drop=True)
    return df


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--eps", type=float, default=1.0)
    args = p.parse_args()
    out = []
    for name, source, rows, na in TABLES:
        for seed in range(args.seeds):
            df = table(source, rows, na, seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rel = ddssp.release(df, eps=args.eps, insecure_seed=100 + seed, seed=seed, progress=False)
                data = df[[c for c in df.columns if c in rel.schema.names]]
                codes = rel.schema.encode(data)
            res = compare(rel, codes)
            gr = grade_vs_data(rel, data, codes, res["one_way"])
            for c, r in gr["columns"].items():
                est, sd = rel.grade().columns[c].clipped, rel.grade().columns[c].clipped_sd
                out.append(
                    {
                        "table": name,
                        "seed": seed,
                        "column": c,
                        "weak": bool(r["weak"]),
                        "expected_error": r["expected_error"],
                        "measured_error": r["measured_error"],
                        "clip_source": r["clip_source"],
                        "clip_est": None if est is None else max(est),
                        "clip_sd": None if sd is None else max(sd),
                        "clip_true": None if r.get("clipped") is None else max(r["clipped"]),
                        "clip_flag": any("clipped" in w or "end bin" in w for w in r["weak"]),
                        "unchecked_flag": any("unchecked" in w for w in r["weak"]),
                        "fold_est": r["folded_estimate"],
                        "fold_true": r.get("folded"),
                    }
                )
            print(f"{name} seed {seed}: {len(gr['columns'])} columns, dropped {len(gr['dropped'])}", file=sys.stderr)
    t = pd.DataFrame(out)
    t.to_csv(sys.stdout, sep="\t", index=False)
    summarize(t)
    return 0


def summarize(t: pd.DataFrame) -> None:
    """The agreement, on stderr."""

    def say(s):
        print(s, file=sys.stderr)

    m = t.dropna(subset=["expected_error", "measured_error"])
    ratio = m["measured_error"] / m["expected_error"]
    say(f"columns: {len(t)} in {t.groupby(['table', 'seed']).ngroups} releases")
    say(
        f"one-way error: measured / expected, median {ratio.median():.2f}, quartiles "
        f"{ratio.quantile(0.25):.2f}-{ratio.quantile(0.75):.2f}; Spearman "
        f"{m['measured_error'].corr(m['expected_error'], method='spearman'):.2f}"
    )
    poor = m["measured_error"] > WEAK_ERROR
    flag = m["expected_error"] > WEAK_ERROR
    say(
        f"one-way error > {WEAK_ERROR:.0%}: truly {int(poor.sum())}, flagged {int(flag.sum())}, "
        f"both {int((poor & flag).sum())}, flagged not poor {int((flag & ~poor).sum())}, "
        f"poor not flagged {int((poor & ~flag).sum())}"
    )
    c = t.dropna(subset=["clip_true"])
    say(f"numeric columns with a range: {len(c)}; by source: {c['clip_source'].value_counts().to_dict()}")
    e = c.dropna(subset=["clip_est"])
    if len(e):
        err = (e["clip_est"] - e["clip_true"]).abs()
        within = err <= 2 * e["clip_sd"] + 0.01
        say(
            f"clipped share (larger side): |estimate - truth| median {err.median():.3f}, within 2 sd + 1%: "
            f"{int(within.sum())} of {len(e)}"
        )
    truly = c["clip_true"] > WEAK_CLIPPED
    say(
        f"clipped > {WEAK_CLIPPED:.0%}: truly {int(truly.sum())}, flagged {int(c['clip_flag'].sum())}, "
        f"both {int((truly & c['clip_flag']).sum())}, flagged not clipped {int((c['clip_flag'] & ~truly).sum())}"
    )
    u = c["clip_flag"] | c["unchecked_flag"]
    say(
        f"clipped or range unchecked: flagged {int(u.sum())}; of the {int(truly.sum())} truly clipped > "
        f"{WEAK_CLIPPED:.0%}: {int((truly & u).sum())} flagged; of the {int((~truly).sum())} others: {int((u & ~truly).sum())} flagged"
    )
    f = t.dropna(subset=["fold_true", "fold_est"])
    if len(f):
        err = (f["fold_est"] - f["fold_true"]).abs()
        ft, fe = f["fold_true"] > WEAK_FOLDED, f["fold_est"] > WEAK_FOLDED
        say(
            f"folded share: {len(f)} columns, |estimate - truth| median {err.median():.3f}, 90th pct "
            f"{err.quantile(0.9):.3f}; > {WEAK_FOLDED:.0%}: truly {int(ft.sum())}, flagged {int(fe.sum())}, "
            f"both {int((ft & fe).sum())}"
        )


if __name__ == "__main__":
    raise SystemExit(main())
