"""SDNist 2.4's own k-marginal and inconsistency counts on CSV files of the NIST excerpts (a script).

Run with a Python that has ``sdnist==2.4`` installed; it pins old numpy and pandas, so it usually
lives in a virtual environment of its own, and this file imports nothing from ddssp::

    venv-sdnist/bin/python agency_sdnist.py TARGET.csv DICTIONARY.json DEID1.csv [DEID2.csv ...]

Prints one JSON object a line, one per DEID file, in order. The target and each deidentified file
hold the same columns (any subset of the excerpt's). The steps are those of SDNist's report on its
data (``sdnist.report.dataset``): validation against the data dictionary, the density bins, the
codes of the categorical features, the 20 percentile bins of the numeric features, then
``KMarginal`` grouped by PUMA (the report's headline score) and without groups. INDP is left out
(``KMarginal`` leaves it out of the features). A feature whose synthetic values fall outside the
dictionary is dropped by SDNist's validation: ``features`` lists the ones it kept. With
``--inconsistencies`` first, SDNist's consistency checks (``sdnist.metrics.inconsistency``) are run
on each deidentified file too: the records inconsistent per group (age, work, housing) and per check.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

NUMERIC = ("AGEP", "POVPIP", "PINCP", "PWGTP", "WGTP")


def _schema(data_dict: dict) -> dict:
    """The schema SDNist's ``transform`` reads, from the data dictionary.

    A count with a not-applicable value (NOC, NPF) is listed by its values, so ``transform`` codes
    N as -1; the k-marginal compares those codes value for value either way.
    """
    out = {}
    for f, d in data_dict.items():
        vals = list(d.get("values", {}))
        entry = {"has_null": True, "null_value": "N"} if "N" in vals else {}
        if "min" in vals and (f in ("PINCP", "POVPIP") or "N" not in vals):
            entry.update({"min": d["values"]["min"], "max": d["values"]["max"]})
        else:
            entry["values"] = list(vals)
        out[f] = entry
    return out


def _kmarginal(target, deid, data_dict: dict) -> dict:
    """SDNist's grouped (by PUMA, when present) and plain k-marginal of one deidentified table."""
    import pandas as pd
    from sdnist.metrics.kmarginal import KMarginal
    from sdnist.report.dataset.binning import (
        add_bin_for_NA,
        bin_density,
        percentile_rank_synthetic,
        percentile_rank_target,
    )
    from sdnist.report.dataset.transform import transform
    from sdnist.report.dataset.validate import validate

    features = sorted(target.columns)
    c_deid, _ = validate(deid, data_dict, features)
    c_target, _ = validate(target, data_dict, features)
    features = [c for c in features if c in c_deid.columns]  # validation drops a feature with bad values
    c_target, c_deid = c_target[features].copy(), c_deid[features].copy()
    if "DENSITY" in features:
        bin_density(c_target, data_dict)
        bin_density(c_deid, data_dict)
    schema = _schema(data_dict)
    t_target, t_deid = transform(c_target, schema), transform(c_deid, schema)
    numeric = [c for c in NUMERIC if c in features]
    d_target = add_bin_for_NA(percentile_rank_target(c_target, numeric), c_target, numeric)
    d_deid = percentile_rank_synthetic(c_deid, c_target, d_target, numeric)
    d_deid = add_bin_for_NA(d_deid, c_deid, numeric)
    other = [c for c in features if c not in numeric]
    d_target[other] = t_target[other]
    d_deid[other] = t_deid[other]
    out = {"features": features}
    if "PUMA" in features:
        grouped = KMarginal(d_target, d_deid, ["PUMA"])
        grouped.compute_score()
        labels = list(data_dict["PUMA"]["values"])  # transform codes PUMA in the dictionary's order
        out["score_grouped"] = float(grouped.score)
        out["groups"] = {labels[int(k)]: float(v) for k, v in grouped.scores.items() if pd.notna(v)}
        d_target, d_deid = d_target.drop(columns=["PUMA"]), d_deid.drop(columns=["PUMA"])
    plain = KMarginal(d_target, d_deid)
    plain.compute_score()
    out["score"] = float(plain.score)
    return out


def _inconsistencies(deid) -> dict:
    """SDNist's inconsistency counts of one deidentified table (numbers where a column has no N)."""
    import pandas as pd
    from sdnist.metrics.inconsistency import Inconsistencies

    d = deid.copy()
    for c in d.columns:  # SDNist's loaded data holds numbers in a column without N
        num = pd.to_numeric(d[c], errors="coerce")
        if num.notna().all():
            d[c] = num.astype(int) if (num % 1 == 0).all() else num
    with tempfile.TemporaryDirectory() as tmp:
        ic = Inconsistencies(d, Path(tmp))
        ic.compute()
    out = {r["Inconsistency Group"]: int(r["Number of Records Inconsistent"]) for r in ic.report_data["summary"]}
    out["by_name"] = {
        x["inconsistency_name"]: int(x["inconsistency_violations"])
        for g in ("age", "work", "housing")
        for x in ic.report_data[g]["inconsistencies"]
    }
    return out


def main(argv: list[str]) -> None:
    """Score every DEID file against TARGET and print one JSON line each.

    Parameters
    ----------
    argv : list of str
        ``[--inconsistencies] TARGET.csv DICTIONARY.json DEID.csv ...``.
    """
    import pandas as pd
    import sdnist.report  # noqa: F401  (loads the package in the order its modules need)

    inconsistencies = bool(argv) and argv[0] == "--inconsistencies"
    if inconsistencies:
        argv = argv[1:]
    target_path, dict_path, *deid_paths = argv
    with open(dict_path) as fh:
        data_dict = json.load(fh)
    target = pd.read_csv(target_path, dtype=str, keep_default_na=False)
    target = target.drop(columns=[c for c in ("INDP",) if c in target.columns])
    for path in deid_paths:
        deid = pd.read_csv(path, dtype=str, keep_default_na=False)
        out = _kmarginal(target, deid[list(target.columns)], data_dict)
        if inconsistencies:
            try:
                out["inconsistencies"] = _inconsistencies(deid)
            except Exception as exc:  # a check that needs a column the file lacks
                out["inconsistencies"] = {"error": f"{type(exc).__name__}: {exc}"}
        out["file"] = path
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
