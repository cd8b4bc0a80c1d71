import json

from ddssp.commands import output_group, warn_stamp

HELP = "show what a release file holds and what it cost (columns, cliques and sigmas, eps/delta/rho)"


EXAMPLES = """
    ddssp inspect adult.release
    ddssp inspect adult.release --json
"""


def add_arguments(p) -> None:
    """Add the options of ``ddssp inspect`` to its parser, in the shared option groups.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The sub-command's parser.
    """
    p.add_argument("release", metavar="RELEASE", help="release file written by `ddssp release`")
    output_group(p).add_argument("--json", action="store_true", help="machine-readable output")
    output_group(p).add_argument(
        "--schema",
        action="store_true",
        help="with -o: write the release's schema as a reusable schema file (public: DP output)",
    )
    output_group(p).add_argument("-o", "--output", metavar="S.json", help="with --schema: the schema file to write")
    output_group(p).add_argument("--force", action="store_true", help="replace an existing output file")


def _fmt(x) -> str:
    if isinstance(x, str):
        return x
    x = float(x)
    if x != x:
        return "empty"
    return str(int(x)) if x.is_integer() and abs(x) < 1e15 else f"{x:.6g}"


def _label(x) -> str:
    """A label as ``inspect`` lists it: quoted when a comma, edge spaces or emptiness would blur the list."""
    x = str(x)
    if not x or "," in x or x != x.strip() or '"' in x:
        return json.dumps(x, ensure_ascii=False)
    return x


def column_details(rel) -> dict:
    """What the release says about each column.

    Parameters
    ----------
    rel : Release
        The release.

    Returns
    -------
    dict
        Per column: declared or discovered, kind, levels (or bin edges with representative values),
        where empty cells and unknown values go, and the zCDP spent discovering it.
    """
    from ddssp.data.dates import format_day

    disc: dict[str, float] = {}
    for e in rel.ledger.discovery_entries:
        disc[e.clique[0]] = disc.get(e.clique[0], 0.0) + e.rho
    out = {}
    for c in rel.schema.columns:
        d = {
            "source": "discovered" if c.name in disc else "declared",
            "kind": c.kind,
            "size": c.size,
            "budget_share": disc.get(c.name, 0.0) / rel.rho_budget if rel.rho_budget > 0 else 0.0,
        }
        unit = getattr(c, "unit", None)
        if unit is not None:  # a time axis: bins are labelled with dates, values shown as ISO text
            d["unit"] = unit

        def value(v, unit=unit):
            return format_day(v, unit) if unit is not None else float(v)

        if c.kind == "categorical" or c.values is None:
            d["levels"] = list(c.labels)
        elif c.edges is not None:
            d["bins"] = [{"bin": lab, "value": value(v)} for lab, v in zip(c.labels, c.values) if v == v]
        else:
            d["levels"] = [value(v) for v in c.values if v == v]
        if c.missing is not None:
            d["other"] = c.missing  # unknown labels (and, numeric, values of no level) go here
        if c.na is not None or c.missing is not None:
            d["empty_cells"] = c.na if c.na is not None else c.missing
        if c.empty:
            d["no_rows"] = list(c.empty)  # structural zeros: the model gives them no mass
        out[c.name] = d
    return out


def run(args) -> int:
    """Run ``ddssp inspect``: print what a release holds and cost, or write its schema as a reusable schema file.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.

    Returns
    -------
    int
        The exit status, 0 (failures raise).

    Raises
    ------
    DDSSPError
        For bad input or a failed step: the CLI prints it as one line and exits non-zero.
    """
    import json

    from ddssp.releasefile import Release

    rel = Release.load(args.release)
    warn_stamp(rel, args.release)
    if args.schema or args.output:
        import sys

        from ddssp.errors import DDSSPError

        if not (args.schema and args.output):
            raise DDSSPError("write the schema with `ddssp inspect RELEASE --schema -o S.json` (both options)")
        from ddssp.data import Schema
        from ddssp.data.safetext import terminal_text

        schema = Schema(list(rel.schema.columns))  # no discovery record: a published DP output, reused as is
        out = schema.save(args.output, force=args.force)
        print(
            f"ddssp: wrote {terminal_text(out)}: the schema of {terminal_text(args.release)} ({len(schema)} columns; public, a DP output). "
            "A release of the same data with it adds its own budget to this release's",
            file=sys.stderr,
        )
        return 0
    s = rel.summary()
    details = column_details(rel)
    grade = rel.grade()
    if args.json:
        s = dict(s)
        for name, d in details.items():
            s["columns"][name] = dict(s["columns"][name], **d)
        s["grade"] = grade.to_dict()
        print(json.dumps(s, indent=2))
        return 0
    from ddssp.data.safetext import terminal_text

    def say(line: str) -> None:  # labels, names and notes come from the file: no control characters
        print(terminal_text(line))

    say(
        f"{args.release}: {s['format']} v{s['format_version']}, written by ddssp {s['ddssp_version']} at {s['created']}"
    )
    if s["stamp"]:
        say(f"*** {s['stamp']} ***")
    else:
        say("noise: OpenDP exact samplers (discrete Gaussian counts, Gumbel noisy-max selection), no seed")
    if s["signature_valid"] is False:
        say("signature: INVALID (it does not match even the key embedded in it; treat the file as forged)")
    elif s["signed_by_unverified"]:
        say(
            f"signed: {s['signed_by_unverified']} (not verified here; run `ddssp verify RELEASE --public-key KEY.pub.pem`)"
        )
    say(
        f"privacy: eps={s['eps']:g} delta={s['delta']:g}  rho budget {s['rho_budget']:.6g}, "
        f"spent {s['rho_spent']:.6g} (eps spent {s['eps_spent']:.4g})"
    )
    if not rel.schema_private:
        say(f"WARNING: {s['schema_status']}")
    d = s["discovery"]
    if d["entries"]:
        say(
            f"schema: discovered under DP, in the ledger: {len(d['entries'])} discovery charges on "
            f"{len(d['columns'])} column(s), rho {d['rho']:.6g} (AIM rho {s['rho_aim']:.6g}); thresholding "
            f"delta spent {d['delta']:.3g} of {s['delta_threshold_budget']:.3g} set aside"
        )
        for e in d["entries"]:
            extra = f", delta {e['delta']:.3g}" if e["delta"] else ""
            say(f"  {e['clique'][0]:<24} {e['kind']:<16} {_noise_scale(e)}  rho {e['rho']:.4g}{extra}  {e['note']}")
    elif rel.schema_private:
        say("schema: declared (public; not part of the privacy budget)")
    if s["target"]:
        from ddssp.marginals.aim_settings import DEFAULT_TARGET_SHARE

        aim = rel.info.get("settings", {})
        share, note = aim.get("target_share"), ""
        if isinstance(share, (int, float)):
            raised = aim.get("target_share_given") is False and share > DEFAULT_TARGET_SHARE
            note = f" (its pairs first: {100 * share:.0f}% of AIM's budget{', raised for a small table' if raised else ''})"
        say(f"target: {s['target']}{note}")
    say(f"columns ({len(s['columns'])}):")
    for name, c in s["columns"].items():
        d = details[name]
        share = f", {100 * d['budget_share']:.2g}% of the budget" if d["source"] == "discovered" else ""
        kind = f"{c['kind']} ({d['unit']})" if "unit" in d else c["kind"]
        say(f"  {name:<24} {kind:<12} {c['size']:>6} levels ({d['source']}{share})")
        if "bins" in d:
            say("      bins: " + ", ".join(f"{b['bin']} -> {_fmt(b['value'])}" for b in d["bins"]))
        else:
            shown = [_label(v) if isinstance(v, str) else _fmt(v) for v in d["levels"]]
            say("      levels: " + ", ".join(shown[:40]) + (f" ... ({len(shown)} in all)" if len(shown) > 40 else ""))
        if "other" in d or "empty_cells" in d:
            other = d.get("other", "clipped / nearest level" if d["kind"] == "numeric" else "(refused)")
            say(f"      other values -> {other}; empty cells -> {d.get('empty_cells', '(refused)')}")
        if "no_rows" in d:
            say(
                f"      no rows (the model gives them no mass): {', '.join(_label(v) if 'bins' not in d else v for v in d['no_rows'])}"
            )
    say(f"measured marginals ({len(s['cliques'])}), {s['selections']} selections in {s['rounds']} rounds:")
    for c in s["cliques"]:
        sig = ", ".join(f"{x:.4g}" for x in c["sigma"])
        say(f"  {' x '.join(c['clique']):<48} sigma {sig}")
    for r in s.get("recycled", []):  # discovery's counts summed onto levels: fitted, charged once
        sig = f"{min(r['sigma']):.4g}-{max(r['sigma']):.4g}" if r["sigma"] else "-"
        say(
            f"  {r['clique'][0]:<48} sigma {sig} (discovery's counts, ledger entry {r['entry']}: {r['levels']} of {r['size']} levels)"
        )
    say(f"model: {len(s['model_cliques'])} cliques, estimated total {s['model_total']:.1f} rows")
    from ddssp.commands import with_flags
    from ddssp.releasefile.quality import grade_lines, problems

    for line in grade_lines(grade):
        say(line)
    for line in problems(grade):
        say(f"  weak: {with_flags(line)}")

    if s.get("rules"):  # declared, public; no synthetic row breaks one
        say(f"rules ({len(s['rules'])}, declared, public; synthetic rows follow every one):")
        for r in s["rules"]:
            say(f"  {r}")
    return 0


def _noise_scale(e: dict) -> str:
    """A discovery entry's noise: the Gaussian sigma of noisy counts, or the Gumbel scale of a
    noisy-max choice (private medians), which has no sigma."""
    if e.get("sigma") is not None:
        return f"sigma {e['sigma']:.4g}"
    scale = (e.get("params") or {}).get("scale")
    return f"Gumbel scale {scale:.4g}" if isinstance(scale, (int, float)) else "noise scale not recorded"
