"""Small helpers the discovery phases share: the noise sd of a count vector's budget, and when the
noisy counts outside one value say that a column holds that value alone.

Pure arithmetic on public budgets and noisy outputs: nothing here reads the data.
"""

from __future__ import annotations

import math

__all__ = ["confident_single", "noise_sd", "single_value_message"]


def noise_sd(rho: float) -> float:
    """The noise sd of a count vector of L2 sensitivity 1 that costs ``rho`` zCDP.

    Parameters
    ----------
    rho : float
        The zCDP cost (positive).

    Returns
    -------
    float
        ``1 / sqrt(2 rho)``.
    """
    return 1.0 / math.sqrt(2.0 * rho)


def single_value_message(name: str) -> str:
    """The refusal of a column that holds a single value.

    Parameters
    ----------
    name : str
        The column name.

    Returns
    -------
    str
    """
    return f"column {name!r} holds a single value; drop it (it carries no information)"


def confident_single(rest: float, sd: float, n: float) -> bool:
    """Whether the noisy counts say "a single value" rather than "too noisy to see the others".

    True when the noisy count of rows outside the one value found is within 2 sds of zero, and the
    noise is small enough (sd below 1% of the rows) for that to mean the column holds that value
    alone. Post-processing of noisy counts.

    Parameters
    ----------
    rest : float
        The noisy count of rows outside the value.
    sd : float
        Its noise sd.
    n : float
        The noisy count of rows.

    Returns
    -------
    bool
    """
    return rest < 2 * sd and sd < 0.01 * max(n, 1.0)
