#!/bin/sh
# Worked example: a raw table to a private release in one command, then regression and synthetic rows.
#
# The raw UCI Adult table (48,842 rows; continuous age / fnlwgt / capital-gain / capital-loss /
# hours-per-week / education-num, text labels, '?' for missing) has no schema. `ddssp release` with
# nothing but --eps discovers one under DP (10% of the budget by default) and spends the rest on AIM;
# the whole release is (1, 1e-9)-DP. Run from a directory holding adult_raw.csv, e.g.
#     cp ../shared/data/adult_raw.csv /tmp/adult && cd /tmp/adult && sh /path/to/examples/adult_raw.sh
set -e
ddssp release adult_raw.csv --eps 1 --na-values '?'
ddssp inspect adult_raw.release
ddssp fit adult_raw.release --target income --model logistic
ddssp synth adult_raw.release --rows 1000 -o adult_raw.synthetic.csv --seed 1
