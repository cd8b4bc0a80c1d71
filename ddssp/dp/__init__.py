"""DP primitives: parameter checks, zCDP accounting and the ledger, the charged mechanisms, the random source.

Import from here (``from ddssp.dp import Ledger, check_eps``); the submodules are an implementation
detail. This layer imports nothing of ddssp above it (only :mod:`ddssp.errors`).
"""

from ddssp.dp.accounting import LEDGER_RTOL, Ledger, PrivacyRecord
from ddssp.dp.charged import ChargedMechanisms  # (its import registers discovery's entry checks)
from ddssp.dp.entries import LedgerEntry, entry_problem, register_entry_check
from ddssp.dp.mechanisms import (
    clip_rows,
    exponential_probabilities,
    exponential_rho,
    gaussian_rho,
    gaussian_sigma,
)
from ddssp.dp.noise import (
    INSECURE_STAMP,
    InsecureSeededNoise,
    NoiseSource,
    SecureNoise,
    make_noise,
)
from ddssp.dp.params import check_bound, check_delta, check_eps, check_positive, check_rho
from ddssp.dp.random import make_rng
from ddssp.dp.zcdp import (
    approx_zcdp_delta,
    approx_zcdp_rho_budget,
    cks_delta,
    eps_from_rho_delta,
    rho_for_release,
    rho_from_eps_delta,
)

__all__ = [
    "LEDGER_RTOL",
    "ChargedMechanisms",
    "Ledger",
    "LedgerEntry",
    "PrivacyRecord",
    "cks_delta",
    "eps_from_rho_delta",
    "rho_from_eps_delta",
    "entry_problem",
    "register_entry_check",
    "approx_zcdp_rho_budget",
    "approx_zcdp_delta",
    "rho_for_release",
    "INSECURE_STAMP",
    "InsecureSeededNoise",
    "NoiseSource",
    "SecureNoise",
    "make_noise",
    "clip_rows",
    "exponential_probabilities",
    "exponential_rho",
    "gaussian_rho",
    "gaussian_sigma",
    "check_bound",
    "check_delta",
    "check_eps",
    "check_positive",
    "check_rho",
    "make_rng",
]
