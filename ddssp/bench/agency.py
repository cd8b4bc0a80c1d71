"""The statistical agency's benchmark: NIST CRC excerpts, SDNist's k-marginal, sub-samples beside.

``run(spec, ctx)`` for ``ddssp bench`` with ``kind = "agency"`` (spec: workloads/agency-nist.toml).
It does what an agency would do with the public tools, as a new user would run them:

1. **Codebook.** ``ddssp schema --from-dictionary DICTIONARY -o codebook.json`` (public, reads no
   data), then the publisher's review (:func:`review_codebook`): PUMA keeps the state's own PUMAs
   (their code prefix is public), the columns a release does not keep are removed, and the numeric
   columns whose bins a rule or the score depends on get declared bins in a partial schema
   (:func:`bins_schema`): AGEP with an edge at every age a rule names, PINCP and POVPIP at round
   numbers, DENSITY at SDNist's density bins, each bin's values spread evenly inside it (a declared
   ``within``) unless the recipe says otherwise; the ``topcoded`` recipe also top-codes the counts
   NOC (at 10) and NPF (at 14), one bin per count; the ``topcoded-range`` recipe top-codes them
   at the same counts as reviewed codebook ranges instead (``ranges``: NOC 0..10, NPF 2..14, one
   level per whole number, whose levels the release's noisy counts show empty are marked so).
   Everything is declared: no budget goes to discovery. A ``[bins.NAME]`` table of the spec makes
   another recipe (``AGEP``, ``PINCP``, ``POVPIP``, ``NOC``, ``NPF`` edges, ``within = "uniform"``
   or ``"none"``, ``ranges = {NOC = [0, 10]}``, ``quantiles = true``: AGEP, PINCP and POVPIP left
   to the release as quantile bins cut from noisy counts, :data:`QUANTILE_HINTS`), which a ``[[configs]]`` entry names with ``bins =
   "NAME"``; its ``rules`` is true (the spec's rules file), false, or a rules file of its own, and
   ``args`` adds release options; ``by`` passes ``--by``, with which the release itself asks for a
   column the rules declare to depend on ``by`` alone only with it (the pair (by, c), not the triples
   (by, c, a): :func:`~ddssp.marginals.workload.grouped_pairs`) and gives no rows to a group its
   noisy counts do not show; ``dependent = true`` (with ``by``) is kept for the specs of earlier
   rounds, which wrote that workload to a file.
2. **Releases.** Per state and configuration, ``releases`` fresh releases with secure noise:
   ``ddssp release DATA --eps E --codebook codebook.json --schema bins.json --na-values N --columns
   ... [--by PUMA] [--rules FILE]``, then ``ddssp synth REL --rows N`` (as many rows as the data).
   The synthetic CSVs are kept in ``OUTDIR/files/``.
3. **Scores.** ddssp's k-marginal (:func:`ddssp.evaluation.agency.kmarginal`, grouped by PUMA as
   SDNist's report, its worst PUMA, and without groups) always; rows breaking a declared rule
   (:func:`ddssp.data.rules.broken_rows` on the encoded rows) or a declared dependency (rows away
   from their group's most common value, :func:`ddssp.data.rules.dependency_violations`) or a declared
   order (:func:`ddssp.data.orders.order_violations` on the decoded rows); and, when an interpreter with
   ``sdnist`` is given (``sdnist_python`` in the spec, ``DDSSP_SDNIST_PYTHON``, or ``python -m
   ddssp.bench.agency SPEC --sdnist-python PY``), SDNist 2.4's own k-marginal and inconsistency
   counts, run by :mod:`.agency_sdnist` in that interpreter.
4. **Sub-samples.** Per state and feature set, ``draws`` random sub-samples of each of
   ``fractions`` of the data (without replacement), written as CSVs and scored the same way: the
   calibration each release is read against ("scores like a 20% sub-sample").

Rows of results.csv: ``method`` (the configuration, or ``subsample``), ``state``, ``features``,
``epsilon`` (0 for sub-samples), ``fraction`` (0 for releases), ``trial`` (release or draw),
``metric``, ``value``, ``seconds``. Metrics: ``kmarginal`` (ddssp, grouped), ``kmarginal_plain``,
``worst_puma``, ``sdnist_kmarginal`` (grouped), ``sdnist_plain``, ``sdnist_worst_puma``,
``rule_violations`` (declared rules, synthetic rows), ``sdnist_age`` / ``sdnist_work`` /
``sdnist_housing`` (records SDNist finds inconsistent), ``release_cpu_s``. ``results.md`` holds the
tables: each configuration's mean over its releases next to the sub-sample scores of the same file.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ddssp.bench.agency_bins import (  # noqa: F401  (the recipes, used here and by the bench's tests)
    COUNTS,
    DEFAULT_BINS,
    QUANTILE_HINTS,
    TOPCODED_COUNTS,
    TOPCODED_RANGES,
    binned_columns,
    bins_schema,
    density_edges,
    quantile_hints,
)
from ddssp.bench.release_process import bench_env, run_release
from ddssp.errors import WorkloadError

SPEC_KEYS = {
    "name",
    "kind",
    "description",
    "plot",
    "dictionary",
    "rules",
    "releases",
    "fractions",
    "draws",
    "sdnist_python",
    "timeout",
    "states",
    "features",
    "bins",
    "configs",
}
STATE_KEYS = {"name", "source", "puma_prefix"}
#: a configuration's ``rules``: true (the spec's rules file), false (none) or its own rules file
CONFIG_KEYS = {"name", "features", "eps", "by", "rules", "bins", "args", "dependent", "description"}
BIN_KEYS = {"AGEP", "PINCP", "POVPIP", "NOC", "NPF", "within", "ranges", "quantiles"}


def parse_spec(spec: dict, ctx: Any) -> dict:
    """Validate an agency spec into plain settings.

    Parameters
    ----------
    spec : dict
        The parsed spec.
    ctx : BenchContext
        ``--trials`` (releases per configuration) and ``--eps`` (replaces every configuration's eps)
        override the spec; ``extra["sdnist_python"]`` names SDNist's interpreter.

    Returns
    -------
    dict

    Raises
    ------
    WorkloadError
        For unknown keys or invalid values.
    """
    from ddssp.bench.spec_options import check_keys, read_releases

    check_keys(spec, SPEC_KEYS, "an agency spec")
    releases = read_releases(spec, ctx, 3)
    draws = int(spec.get("draws", 5))
    if draws < 0:
        raise WorkloadError(f"draws must be >= 0, got {draws}")
    fractions = [float(f) for f in spec.get("fractions", [0.05, 0.1, 0.2, 0.3, 0.5])]
    if any(not 0 < f < 1 for f in fractions):
        raise WorkloadError(f"fractions must lie in (0, 1), got {fractions}")
    states = spec.get("states")
    if not isinstance(states, list) or not states:
        raise WorkloadError("an agency spec needs [[states]] entries (name, source, puma_prefix)")
    for st in states:
        bad = sorted(set(st) - STATE_KEYS) if isinstance(st, dict) else ["(not a table)"]
        prefix = st.get("puma_prefix") if isinstance(st, dict) else None
        prefixes = isinstance(prefix, list) and prefix and all(isinstance(p, str) and p for p in prefix)
        if (
            bad
            or not all(isinstance(st.get(k), str) for k in ("name", "source"))
            or not (isinstance(prefix, str) or prefixes)
        ):
            raise WorkloadError(
                f"each [[states]] entry needs exactly {sorted(STATE_KEYS)} (strings; puma_prefix may be a list of "
                "prefixes, as for an excerpt of several states)"
            )
    feature_sets = spec.get("features", {})
    if not isinstance(feature_sets, dict) or not feature_sets:
        raise WorkloadError("an agency spec needs a [features] table: name = [columns]")
    bins = {
        "agency": dict(DEFAULT_BINS),
        "topcoded": {**DEFAULT_BINS, **TOPCODED_COUNTS},
        "topcoded-range": {**DEFAULT_BINS, "ranges": dict(TOPCODED_RANGES)},
    }
    for name, b in (spec.get("bins") or {}).items():
        bad = sorted(set(b) - BIN_KEYS)
        if bad:
            raise WorkloadError(f"unknown key(s) {bad} in [bins.{name}]; known: {sorted(BIN_KEYS)}")
        ranges = b.get("ranges", {})
        if not isinstance(ranges, dict) or not all(
            c in COUNTS and isinstance(r, list) and len(r) == 2 and all(isinstance(x, int) for x in r) and r[0] < r[1]
            for c, r in ranges.items()
        ):
            raise WorkloadError(f"[bins.{name}] ranges: give {{NOC = [low, high], NPF = [low, high]}} (whole numbers)")
        q = b.get("quantiles", False)
        if not (isinstance(q, bool) or (isinstance(q, list) and set(q) <= set(QUANTILE_HINTS))):
            raise WorkloadError(f"[bins.{name}] quantiles must be true, false or a list of {sorted(QUANTILE_HINTS)}")
        bins[name] = {**DEFAULT_BINS, **b}
    configs = []
    for c in spec.get("configs", []):
        bad = sorted(set(c) - CONFIG_KEYS)
        if bad:
            raise WorkloadError(f"unknown key(s) {bad} in [[configs]]; known: {sorted(CONFIG_KEYS)}")
        if c.get("features") not in feature_sets:
            raise WorkloadError(f"config {c.get('name')!r}: features must name a [features] entry")
        if c.get("dependent") and not c.get("by"):
            raise WorkloadError(f"config {c.get('name')!r}: dependent = true needs by")
        if c.get("bins", "agency") not in bins:
            raise WorkloadError(f"config {c.get('name')!r}: bins must name a [bins.NAME] entry or 'agency'")
        eps_list = ctx.eps if ctx.eps is not None else [c.get("eps")]
        for eps in eps_list:
            if not (isinstance(eps, (int, float)) and eps > 0 and math.isfinite(eps)):
                raise WorkloadError(f"config {c.get('name')!r}: eps must be positive and finite")
            configs.append(
                {
                    "name": str(c["name"]),
                    "features": c["features"],
                    "eps": float(eps),
                    "by": c.get("by") or None,
                    "rules": c.get("rules", True),
                    "bins": c.get("bins", "agency"),
                    "args": [str(a) for a in c.get("args", [])],
                    "dependent": bool(c.get("dependent", False)),
                }
            )
    if not configs:
        raise WorkloadError("an agency spec needs [[configs]] entries (name, features, eps)")
    sdnist = ctx.extra.get("sdnist_python") or os.environ.get("DDSSP_SDNIST_PYTHON") or spec.get("sdnist_python")
    return {
        "name": spec.get("name", "agency"),
        "dictionary": spec.get("dictionary", "nist/data_dictionary.json"),
        "rules": spec.get("rules"),
        "releases": releases,
        "draws": draws,
        "fractions": fractions,
        "states": states,
        "feature_sets": {k: list(v) for k, v in feature_sets.items()},
        "bins": bins,
        "configs": configs,
        "sdnist_python": sdnist or None,
        "timeout": float(spec.get("timeout", 3600)),
    }


def make_codebook(dictionary_path: Path, out: Path) -> dict:
    """``ddssp schema --from-dictionary DICTIONARY -o OUT`` (the public command), read back.

    Parameters
    ----------
    dictionary_path : pathlib.Path
        The agency's data dictionary.
    out : pathlib.Path
        Where the codebook goes.

    Returns
    -------
    dict
        The codebook as written.

    Raises
    ------
    WorkloadError
        When the command fails.
    """
    cmd = [sys.executable, "-m", "ddssp", "schema", "--from-dictionary", str(dictionary_path), "-o", str(out)]
    proc = subprocess.run(cmd + ["--force"], capture_output=True, text=True, env=bench_env())
    if proc.returncode != 0:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=bench_env())
    if proc.returncode != 0:
        raise WorkloadError(f"ddssp schema --from-dictionary failed: {proc.stderr.strip().splitlines()[-1:]}")
    return json.loads(out.read_text())


def review_codebook(
    codebook: dict,
    columns: list[str],
    puma_prefix: str | list[str],
    binned: tuple = (),
    ranges: dict | None = None,
    quantiles: dict | None = None,
) -> dict:
    """The publisher's review of a codebook written from the dictionary, for one state's release.

    PUMA keeps the levels of the state's own PUMAs (the dictionary lists every state's; a level no
    row can hold takes cells in every marginal and can receive synthetic rows); only the released
    columns are kept; the columns given declared bins (:func:`bins_schema`) are removed here, as the
    schema declares them; a column of ``ranges`` gets those bounds instead of the dictionary's (a
    top-code: values above clip to the top, one level per whole number of the range).

    Parameters
    ----------
    codebook : dict
        The ``ddssp-codebook/1`` dictionary.
    columns : list of str
        The released columns.
    puma_prefix : str or list of str
        The state's PUMA code prefix (``25-`` for Massachusetts), or the prefixes of an excerpt of
        several states (a PUMA level is kept when it starts with one of them).
    binned : tuple of str
        The columns :func:`bins_schema` declares.
    ranges : dict, optional
        ``{column: [low, high]}``: reviewed whole-number bounds.
    quantiles : dict, optional
        ``{column: fields}``: quantile-bin fields (``bins``, ``cuts``, ``step``, ``points``) added to
        the column's entry (:data:`QUANTILE_HINTS`).

    Returns
    -------
    dict
        The reviewed codebook.

    Raises
    ------
    WorkloadError
        When no PUMA level has the prefix.
    """
    out = []
    for col in codebook["columns"]:
        name = col["name"]
        if name not in columns or name in binned:
            continue
        col = dict(col)
        if name in (ranges or {}):
            col["bounds"] = [int(x) for x in ranges[name]]
        col.update((quantiles or {}).get(name, {}))
        if name == "PUMA":
            prefixes = (puma_prefix,) if isinstance(puma_prefix, str) else tuple(puma_prefix)
            col["levels"] = [lv for lv in col["levels"] if str(lv).startswith(prefixes)]
            if not col["levels"]:
                raise WorkloadError(f"no PUMA level of the dictionary starts with {puma_prefix!r}")
        out.append(col)
    return {"format": codebook["format"], "columns": out}


def rules_for(rules_text: str, columns: list[str]) -> str:
    """The rules of a rules file whose columns are all released (one rule a line).

    Parameters
    ----------
    rules_text : str
        The rules file.
    columns : list of str
        The released columns.

    Returns
    -------
    str
    """
    from ddssp.data.rules import parse_rules

    keep = []
    for line in rules_text.splitlines():
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        (rule,) = parse_rules(text)
        if set(rule.columns) <= set(columns):
            keep.append(text)
    return "\n".join(keep) + "\n"


def ddssp_scores(target: Path, files: list[Path], edges: dict) -> list[dict[str, float]]:
    """ddssp's k-marginal of ``files``: grouped by PUMA (SDNist's headline), worst PUMA, plain.

    Run as ``python -m ddssp.evaluation.agency`` (one process for all the files; the bench and the
    evaluation layer stay independent), N read as missing.

    Parameters
    ----------
    target : pathlib.Path
        The data.
    files : list of pathlib.Path
        The rows to score (the target's columns).
    edges : dict
        Fixed bins (DENSITY).

    Returns
    -------
    list of dict
        ``kmarginal``, ``worst_puma``, ``kmarginal_plain`` per file, in order.

    Raises
    ------
    WorkloadError
        When the scoring fails.
    """
    if not files:
        return []
    cmd = [sys.executable, "-m", "ddssp.evaluation.agency", str(target), *map(str, files), "--group", "PUMA"]
    cmd += ["--edges", json.dumps(edges)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=bench_env())
    if proc.returncode != 0:
        raise WorkloadError(f"ddssp's k-marginal failed: {(proc.stderr.strip().splitlines() or [''])[-1]}")
    out = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if len(out) != len(files):
        raise WorkloadError(f"ddssp's k-marginal returned {len(out)} results for {len(files)} files")
    return [{("worst_puma" if k == "worst_group" else k): v for k, v in r.items()} for r in out]


def sdnist_scores(python: str, target: Path, dictionary: Path, files: list[Path], inconsistencies: bool) -> list[dict]:
    """SDNist's own k-marginal (and inconsistencies) of ``files``, run by :mod:`.agency_sdnist`.

    Parameters
    ----------
    python : str
        An interpreter with ``sdnist==2.4``.
    target : pathlib.Path
        The data (same columns as the files).
    dictionary : pathlib.Path
        The data dictionary.
    files : list of pathlib.Path
        Deidentified CSVs.
    inconsistencies : bool
        Run SDNist's consistency checks too.

    Returns
    -------
    list of dict
        One per file, in order.

    Raises
    ------
    WorkloadError
        When the script fails.
    """
    if not files:
        return []
    script = Path(__file__).with_name("agency_sdnist.py")
    cmd = [python, str(script)] + (["--inconsistencies"] if inconsistencies else [])
    cmd += [str(target), str(dictionary), *map(str, files)]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or ["(no output)"]
        raise WorkloadError(f"SDNist's scoring failed ({python}): {tail[0]}")
    out = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if len(out) != len(files):
        raise WorkloadError(f"SDNist's scoring returned {len(out)} results for {len(files)} files")
    return out


def _sdnist_metrics(r: dict) -> dict[str, float]:
    out = {"sdnist_plain": r["score"]}
    if "score_grouped" in r:
        out["sdnist_kmarginal"] = r["score_grouped"]
        out["sdnist_worst_puma"] = min(r["groups"].values())
    ic = r.get("inconsistencies") or {}
    for group in ("Age", "Work", "Housing"):
        if group in ic:
            out[f"sdnist_{group.lower()}"] = float(ic[group])
    out["sdnist_features"] = float(len(r["features"]))
    return out


def run(spec: dict, ctx: Any) -> pd.DataFrame:
    """Run an agency spec (see the module docstring).

    Parameters
    ----------
    spec : dict
        The parsed spec.
    ctx : BenchContext
        The run's context.

    Returns
    -------
    pandas.DataFrame
        One row per measured number.
    """
    from ddssp.data.orders import order_violations
    from ddssp.data.rules import (
        broken_rows,
        compile_rules,
        dependencies,
        dependency_violations,
        orders,
        parse_rules,
    )
    from ddssp.releasefile import Release

    s = parse_spec(spec, ctx)
    dict_path = ctx.data_path(s["dictionary"])
    dictionary = json.loads(dict_path.read_text())
    edges = {"DENSITY": density_edges(dictionary)}
    rules_text = ctx.data_path(s["rules"]).read_text() if s["rules"] else ""
    files = ctx.outdir / "files"
    files.mkdir(parents=True, exist_ok=True)
    codebook = make_codebook(dict_path, files / "codebook.json")
    rng = np.random.default_rng(ctx.seed)
    rows: list[dict] = []
    sdnist_jobs: list[tuple[Path, list[tuple[Path, dict]]]] = []  # (target, [(file, row key)])

    for st in s["states"]:
        data_path = ctx.data_path(st["source"])
        full = pd.read_csv(data_path, dtype=str, keep_default_na=False)
        for fname, cols in s["feature_sets"].items():
            missing = [c for c in cols if c not in full.columns]
            if missing:
                raise WorkloadError(f"feature set {fname!r}: columns {missing} not in {data_path}")
            stem = f"{st['name']}-{fname}"
            target = files / f"{stem}-target.csv"
            full[cols].to_csv(target, index=False)
            job: list[tuple[Path, dict]] = []
            # sub-samples of the same file: the calibration
            for frac in s["fractions"]:
                for d in range(s["draws"]):
                    k = max(1, int(round(frac * len(full))))
                    idx = np.sort(rng.choice(len(full), k, replace=False))
                    path = files / f"{stem}-sub{int(round(frac * 100))}-{d}.csv"
                    full[cols].iloc[idx].to_csv(path, index=False)
                    key = {"method": "subsample", "state": st["name"], "features": fname, "epsilon": 0.0}
                    key.update({"fraction": frac, "trial": d})
                    job.append((path, key))
            # releases
            for cfg in [c for c in s["configs"] if c["features"] == fname]:
                cfg_stem = f"{stem}-{cfg['name']}-e{cfg['eps']:g}"
                (files / f"{cfg_stem}.codebook.json").write_text(
                    json.dumps(
                        review_codebook(
                            codebook,
                            cols,
                            st["puma_prefix"],
                            binned_columns(cols, s["bins"][cfg["bins"]]),
                            s["bins"][cfg["bins"]].get("ranges"),
                            quantile_hints(s["bins"][cfg["bins"]]),
                        ),
                        indent=1,
                    )
                )
                (files / f"{cfg_stem}.bins.json").write_text(
                    json.dumps(bins_schema(cols, s["bins"][cfg["bins"]], dictionary), indent=1)
                )
                args = ["--codebook", str(files / f"{cfg_stem}.codebook.json")]
                args += ["--schema", str(files / f"{cfg_stem}.bins.json"), "--columns", ",".join(cols)]
                cfg_rules = rules_text
                if isinstance(cfg["rules"], str):  # the configuration's own rules file
                    cfg_rules = ctx.data_path(cfg["rules"]).read_text()
                released_rules = rules_for(cfg_rules, cols) if cfg_rules else ""
                parsed = parse_rules(released_rules) if cfg_rules else []  # what the violations count
                if cfg["rules"] and cfg_rules:
                    rule_file = files / f"{cfg_stem}.rules"
                    rule_file.write_text(released_rules)
                    args += ["--rules", str(rule_file)]
                if cfg["by"]:  # the grouped pairs; a column the rules fix by the group is asked with it only
                    args += ["--by", cfg["by"]]
                args += cfg["args"]  # further release options (e.g. --rounds)
                for r in range(s["releases"]):
                    key = {"method": cfg["name"], "state": st["name"], "features": fname, "epsilon": cfg["eps"]}
                    key.update({"fraction": 0.0, "trial": r})
                    rel_path = files / f"{cfg_stem}-{r}.release"
                    rel_path.unlink(missing_ok=True)
                    res = run_release(data_path, rel_path, cfg["eps"], ["N"], s["timeout"], args)
                    if not res["ok"]:
                        ctx.log(f"{cfg_stem} release {r} failed: {res['error']}")
                        rows.append({**key, "metric": "ok", "value": 0.0, "seconds": res["wall_s"]})
                        continue
                    syn_path = files / f"{cfg_stem}-{r}.csv"
                    t0 = time.perf_counter()
                    proc = subprocess.run(
                        [sys.executable, "-m", "ddssp", "synth", str(rel_path), "--rows", str(len(full))]
                        + ["-o", str(syn_path), "--force", "--seed", str(r)],
                        capture_output=True,
                        text=True,
                        env=bench_env(),
                    )
                    synth_s = time.perf_counter() - t0
                    if proc.returncode != 0:
                        raise WorkloadError(f"ddssp synth failed: {proc.stderr.strip().splitlines()[-1:]}")
                    sc = {}
                    rel = Release.load(rel_path)
                    declared = compile_rules(parsed, rel.schema)
                    raw = pd.read_csv(syn_path, dtype=str, keep_default_na=False)
                    codes = rel.schema.encode(raw[rel.schema.names].replace({"N": None}))
                    sc["rule_violations"] = float(broken_rows(codes, declared).sum()) if declared else 0.0
                    found = dependency_violations(codes, dependencies(parsed))
                    # an order holds inside bins too: read on the rows' values (N is outside it)
                    found += order_violations(raw, orders(parsed), rel.schema)
                    sc["rule_violations"] += float(sum(d["rows"] for d in found))
                    sc["release_cpu_s"] = res["cpu_s"]
                    sc["release_wall_s"] = res["wall_s"]
                    sc["synth_wall_s"] = synth_s
                    sc["ok"] = 1.0
                    rows += [{**key, "metric": m, "value": v, "seconds": res["wall_s"]} for m, v in sc.items()]
                    job.append((syn_path, key))
                    pd.DataFrame(rows).to_csv(ctx.outdir / "partial.csv", index=False)  # a stopped run's scores
                    ctx.log(f"{cfg_stem} release {r}: {res['cpu_s']:.0f} CPU s")
            t0 = time.perf_counter()
            scores = ddssp_scores(target, [p for p, _ in job], edges)
            secs = (time.perf_counter() - t0) / max(len(job), 1)
            for (_, key), sc in zip(job, scores):
                rows += [{**key, "metric": m, "value": v, "seconds": secs} for m, v in sc.items()]
            ctx.log(f"{stem}: ddssp's k-marginal of {len(job)} files")
            sdnist_jobs.append((target, job))
    if s["sdnist_python"]:
        for target, job in sdnist_jobs:
            t0 = time.perf_counter()
            inconsistent = [k["method"] != "subsample" for _, k in job]
            res_sub = sdnist_scores(
                s["sdnist_python"], target, dict_path, [p for (p, _), i in zip(job, inconsistent) if not i], False
            )
            res_rel = sdnist_scores(
                s["sdnist_python"], target, dict_path, [p for (p, _), i in zip(job, inconsistent) if i], True
            )
            secs = (time.perf_counter() - t0) / max(len(job), 1)
            it_sub, it_rel = iter(res_sub), iter(res_rel)
            for (_, key), i in zip(job, inconsistent):
                r = next(it_rel) if i else next(it_sub)
                rows += [{**key, "metric": m, "value": v, "seconds": secs} for m, v in _sdnist_metrics(r).items()]
            ctx.log(f"{target.name}: SDNist scored {len(job)} files")
    from ddssp.bench.agency_report import markdown_tables

    results = pd.DataFrame(rows)
    with open(ctx.outdir / "results.md", "w") as fh:
        fh.write(markdown_tables(results))
    return results


def main(argv: list[str] | None = None) -> int:
    """``python -m ddssp.bench.agency SPEC [--sdnist-python PY] [ddssp bench options]``.

    Parameters
    ----------
    argv : list of str, optional
        The command line (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status.
    """
    import argparse

    from ddssp.bench.runner import run_bench

    p = argparse.ArgumentParser(prog="python -m ddssp.bench.agency", description=__doc__.splitlines()[0])
    p.add_argument("spec")
    p.add_argument("-o", "--outdir")
    p.add_argument("--data-dir")
    p.add_argument("--trials", type=int, help="releases per configuration")
    p.add_argument("--sdnist-python", help="a Python with sdnist==2.4: score with SDNist's own code too")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--force", action="store_true")
    p.add_argument("--quiet", action="store_true")
    a = p.parse_args(argv)
    if a.sdnist_python:
        os.environ["DDSSP_SDNIST_PYTHON"] = a.sdnist_python
    run_bench(a.spec, a.outdir, data_dir=a.data_dir, trials=a.trials, seed=a.seed, quiet=a.quiet, force=a.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())

__all__ = ["bins_schema", "ddssp_scores", "density_edges", "parse_spec", "review_codebook", "rules_for", "run"]
