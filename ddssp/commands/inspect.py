from ddssp.commands import output_group, warn_stamp

HELP = "show what a release file holds and what it cost (columns, cliques and sigmas, eps/delta/rho)"


EXAMPLES = """
    ddssp inspect adult.release
    ddssp inspect adult.release --json
"""


def add_arguments(p) -> None:
    p.add_argument("release", metavar="RELEASE", help="release file written by `ddssp release`")
    output_group(p).add_argument("--json", action="store_true", help="machine-readable output")


def run(args) -> int:
    import json

    from ddssp.releasefile import Release

    rel = Release.load(args.release)
    warn_stamp(rel, args.release)
    s = rel.summary()
    if args.json:
        print(json.dumps(s, indent=2))
        return 0
    print(f"{args.release}: {s['format']} v{s['format_version']}, written by ddssp {s['ddssp_version']} at {s['created']}")
    if s["stamp"]:
        print(f"*** {s['stamp']} ***")
    else:
        print("noise: OpenDP exact samplers (discrete Gaussian counts, Gumbel noisy-max selection), no seed")
    if s["signature_valid"] is False:
        print("signature: INVALID (it does not match even the key embedded in it; treat the file as forged)")
    elif s["signed_by_unverified"]:
        print(f"signed: {s['signed_by_unverified']} (not verified here; run `ddssp verify RELEASE --public-key KEY.pub.pem`)")
    print(f"privacy: eps={s['eps']:g} delta={s['delta']:g}  rho budget {s['rho_budget']:.6g}, "
          f"spent {s['rho_spent']:.6g} (eps spent {s['eps_spent']:.4g})")
    if not rel.schema_private:
        print(f"WARNING: {s['schema_status']}")
    d = s["discovery"]
    if d["entries"]:
        print(f"schema: discovered under DP, in the ledger: {len(d['entries'])} discovery charges on "
              f"{len(d['columns'])} column(s), rho {d['rho']:.6g} (AIM rho {s['rho_aim']:.6g}); thresholding "
              f"delta spent {d['delta']:.3g} of {s['delta_threshold_budget']:.3g} set aside")
        for e in d["entries"]:
            extra = f", delta {e['delta']:.3g}" if e["delta"] else ""
            print(f"  {e['clique'][0]:<24} {e['kind']:<16} sigma {e['sigma']:.4g}  rho {e['rho']:.4g}{extra}  {e['note']}")
    elif rel.schema_private:
        print("schema: declared (public; not part of the privacy budget)")
    if s["target"]:
        print(f"target: {s['target']}")
    print(f"columns ({len(s['columns'])}):")
    for name, c in s["columns"].items():
        print(f"  {name:<24} {c['kind']:<12} {c['size']:>6} levels")
    print(f"measured marginals ({len(s['cliques'])}), {s['selections']} selections in {s['rounds']} rounds:")
    for c in s["cliques"]:
        sig = ", ".join(f"{x:.4g}" for x in c["sigma"])
        print(f"  {' x '.join(c['clique']):<48} sigma {sig}")
    print(f"model: {len(s['model_cliques'])} cliques, estimated total {s['model_total']:.1f} rows")
    return 0
