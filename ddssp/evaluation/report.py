"""The data holder's quality report: a release against the sensitive data it came from.

NOT FOR PUBLICATION: the report holds exact statistics of the data. :func:`evaluate` returns a
:class:`QualityReport` with the scores (mean one- and two-way total-variation error, per column and
per pair, and the regression agreement), a notebook display and a self-contained HTML page; the CLI
``ddssp evaluate`` prints and writes the same object. The scores are computed by
:func:`ddssp.evaluation.scores.compare` and the page drawn by :func:`ddssp.evaluation.page.render_html`.
"""

from __future__ import annotations

import html as _html
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ddssp._warnings import tidy_warnings
from ddssp.evaluation.page import agency_summary, render_html
from ddssp.evaluation.scores import BANNER, compare

__all__ = ["QualityReport", "evaluate"]


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
    synthetic: Any = None,
    synthetic_rows: int | None = None,
    seed: int | None = None,
    group: str | None = None,
    quasi_identifiers: list[str] | None = None,
    rules: Any = None,
    exclude: list[str] | None = None,
    fractions: list[float] | None = None,
    edges: dict[str, list[float]] | None = None,
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
    na_values : list of str, optional
        Cell values that mean missing in a ``data`` path, besides empty cells (default: those the
        release records).
    delimiter : str, optional
        The CSV field delimiter of a ``data`` path (default: the release's).
    encoding : str, optional
        The CSV text encoding of a ``data`` path (default: the release's).
    synthetic : pandas.DataFrame or str or Path, optional
        Synthetic rows to score with the agency's measures (SDNist's k-marginal and its sub-sample
        calibration, unique exact matches, pMSE, apparent matches, rule violations; see
        :func:`ddssp.evaluation.agency.agency_scores`), e.g. a file from ``ddssp synth``; a path is
        read with the same options as ``data``. Any of the agency keywords below asks for these
        measures; without ``synthetic`` the rows are sampled from the release.
    synthetic_rows : int, optional
        Sample this many synthetic rows from the release (default: as many as the data).
    seed : int, optional
        Makes the sampled rows, the sub-samples and the pMSE tree reproducible.
    group : str, optional
        Score the k-marginal within each value of this column too (PUMA in the NIST excerpts).
    quasi_identifiers : list of str, optional
        Columns for the apparent-match count.
    rules : callable or dict or list, optional
        Predicates marking rows that violate a rule: one callable, ``{name: predicate}`` or a
        list of predicates or ``(name, predicate)`` pairs; each takes a DataFrame (in the data's
        own values) and returns a truth value per row, True where the row breaks the rule.
    exclude : list of str, optional
        Columns left out of the k-marginal (for the NIST excerpts, SDNist leaves out INDP).
    fractions : list of float, optional
        Sub-sample fractions of the calibration (default: SDNist's 1%, 5%, 10%, 20%, ..., 90%).
    edges : dict, optional
        Fixed k-marginal bin edges of numeric columns (default: 20 percentile bins of the data).

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
    given = pd.DataFrame(columns=list(data.columns))  # the data's columns, for the dropped ones
    if set(rel.schema.names) <= set(map(str, data.columns)):  # columns the release left out
        data = data[[c for c in data.columns if str(c) in rel.schema]]
    codes = data if encoded else rel.schema.encode(data)
    res = compare(rel, codes, target=target, model=model, features=features)
    from ddssp.evaluation.grade import grade_vs_data

    raw = given if encoded else pd.concat([data, given.drop(columns=list(data.columns))], axis=1)
    res["grade"] = grade_vs_data(rel, raw, codes, res["one_way"])

    if rel.rules:  # the release's declared rules are counted on the synthetic rows and the data
        rules = _with_declared_rules(rules, rel, encoded)
    asked = (synthetic, synthetic_rows, group, quasi_identifiers, rules, exclude, fractions, edges)
    if any(x is not None for x in asked):
        from ddssp.evaluation.agency import DEFAULT_FRACTIONS, agency_scores

        if isinstance(synthetic, (str, Path)):
            reading = rel.reading
            delim = reading["delimiter"] if delimiter is None else delimiter
            synthetic = read_table(
                synthetic,
                delimiter="\t" if delim == "\\t" else delim,
                na_values=reading["na_values"] if na_values is None else na_values,
                encoding=reading["encoding"] if encoding is None else encoding,
            )
        elif synthetic is None:
            n = len(data) if synthetic_rows is None else synthetic_rows
            synthetic = rel.synthesize_codes(n, seed) if encoded else rel.sample(n, seed=seed)
        if not isinstance(synthetic, pd.DataFrame):
            from ddssp.errors import DataError

            raise DataError(f"synthetic must be a DataFrame or the path of a table, got {type(synthetic).__name__}")
        cols = [c for c in data.columns if str(c) in rel.schema]
        res["agency"] = agency_scores(
            data[cols],
            synthetic,
            group=group,
            quasi_identifiers=quasi_identifiers,
            rules=rules,
            exclude=exclude or (),
            fractions=DEFAULT_FRACTIONS if fractions is None else fractions,
            seed=seed,
            edges=edges,
        )
    return QualityReport(res, list(rel.schema.names))


def _with_declared_rules(rules: Any, rel: Any, encoded: bool) -> list:
    """The caller's rule predicates (see :func:`ddssp.evaluation.agency.rule_violations`) followed by
    one predicate per rule of the release, named by the rule, reading rows in the data's own values
    (or codes, for ``encoded``) under the release's schema."""
    from ddssp.evaluation.agency import _rule_list

    out = _rule_list(rules) if rules is not None else []
    for comp in rel.compiled_rules():
        sub = rel.schema.subset(comp.columns)

        def broken(df: pd.DataFrame, comp: Any = comp, sub: Any = sub) -> Any:
            cols = df[list(comp.columns)]
            return comp.broken(cols if encoded else sub.encode(cols))

        out.append((f"declared {comp.rule.name}", broken))
    if not encoded:  # an order holds inside bins too: it is read on the values, not the codes
        from ddssp.data.orders import broken_by_order
        from ddssp.data.rules import orders

        for o in orders(rel.rules):
            out.append((f"declared {o.name}", lambda df, o=o: broken_by_order(df, o, rel.schema)))
    return out


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
    agency : dict or None
        When asked for: the agency's measures of synthetic rows against the data (see
        :func:`ddssp.evaluation.agency.agency_scores`).
    kmarginal : float or None
        When asked for: NIST's k-marginal score of the synthetic rows (0 to 1000).
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
        self.agency = result.get("agency")
        self.kmarginal = None if self.agency is None else float(self.agency["kmarginal"]["score"])

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
        if self.agency is not None:
            reg += f"<p>{esc(agency_summary(self.agency))}</p>"
        return (
            f"<div><p style='background:#b00;color:#fff;padding:4px;font-weight:bold'>{esc(BANNER)}</p>"
            f"<p>Mean TV error: one-way {self.one_way_tv:.4f}, two-way {self.two_way_tv:.4f} "
            f"(max {self.max_two_way_tv:.4f}) over {len(self.pairs)} pairs.</p>{reg}"
            f"<table><tr><th>worst pairs</th><th>TV</th></tr>{rows}</table></div>"
        )

    def __repr__(self) -> str:
        km = "" if self.kmarginal is None else f", k-marginal {self.kmarginal:.0f}"
        return (
            f"<QualityReport (NOT FOR PUBLICATION): mean TV one-way {self.one_way_tv:.4f}, "
            f"two-way {self.two_way_tv:.4f} (max {self.max_two_way_tv:.4f}), {len(self.pairs)} pairs{km}>"
        )
