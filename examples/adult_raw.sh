#!/bin/sh
# A raw table to a private release in one command, then a regression and synthetic rows from the
# release alone.
#
#     sh examples/adult_raw.sh ADULT_RAW.csv [OUTDIR] [--force]
#
# ADULT_RAW.csv is the raw UCI Adult table (https://archive.ics.uci.edu/dataset/2/adult: adult.data
# and adult.test with a header row added; 48,842 rows, continuous age / fnlwgt / capital-gain /
# capital-loss / hours-per-week / education-num, text labels, '?' for missing). It has no schema:
# `ddssp release` with nothing but --eps discovers one under DP (10% of the budget by default) and
# spends the rest on AIM; the whole release is (1, 1e-9)-DP.
#
# The results go to OUTDIR (default: the current directory): adult_raw.release,
# adult_raw.synthetic.csv. Running again refuses to replace them; add --force to redo the run.
# Runs from any directory. It calls `python3 -m ddssp`, so it needs ddssp installed in that
# interpreter (set PYTHON=/path/to/python for another one), not a `ddssp` command on PATH.
# TARGET names the column to fit (default income; use another for another table).
set -e
usage="usage: sh adult_raw.sh ADULT_RAW.csv [OUTDIR] [--force]"
data=""; outdir="."; force=""
for arg in "$@"; do
    case "$arg" in
        --force) force="--force" ;;
        -h|--help) echo "$usage"; exit 0 ;;
        -*) echo "$usage" >&2; exit 2 ;;
        *) if [ -z "$data" ]; then data="$arg"; else outdir="$arg"; fi ;;
    esac
done
if [ -z "$data" ]; then
    echo "$usage" >&2
    echo "ADULT_RAW.csv: the raw UCI Adult table, see the comments at the top of this script" >&2
    exit 2
fi
py="${PYTHON:-python3}"
target="${TARGET:-income}"
mkdir -p "$outdir"
release="$outdir/adult_raw.release"
"$py" -m ddssp release "$data" --eps 1 --na-values '?' -o "$release" $force
"$py" -m ddssp inspect "$release"
"$py" -m ddssp fit "$release" --target "$target" --model logistic
"$py" -m ddssp synth "$release" --rows 1000 -o "$outdir/adult_raw.synthetic.csv" --seed 1 $force
