"""The privacy contract of :class:`ChargedMechanisms`: every mechanism is charged to the ledger before
any noise is drawn, a charge the ledger cannot pay draws nothing, and the ledger never passes its
budget. A spy noise source records what the ledger held at each draw."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ddssp.dp import LEDGER_RTOL, ChargedMechanisms, InsecureSeededNoise, Ledger
from ddssp.dp.measurements import gaussian_measurement
from ddssp.errors import BudgetExceededError


class SpyNoise(InsecureSeededNoise):
    """Seeded noise that notes, at every draw, the ledger's entries so far."""

    def __init__(self, seed: int = 0):
        super().__init__(seed)
        self.ledger: Ledger | None = None
        self.draws: list[tuple[str, list]] = []
        self.scales: list[float] = []

    def bind(self, ledger: Ledger) -> Ledger:
        self.ledger = ledger
        return ledger

    def _note(self, what: str, scale: float = math.nan) -> None:
        self.draws.append((what, list(self.ledger.entries)))
        self.scales.append(float(scale))

    def gaussian_int(self, counts, sigma):
        self._note("gaussian_int", sigma)
        return super().gaussian_int(counts, sigma)

    def noisy_max(self, scores, scale):
        self._note("noisy_max", scale)
        return super().noisy_max(scores, scale)

    def run_opendp(self, measurement, arg, fallback=None):
        self._note("run_opendp")
        return super().run_opendp(measurement, arg, fallback=fallback)


def _gauss_fallback(arg):
    return lambda rng: [int(x) + int(z) for x, z in zip(arg, rng.integers(-3, 4, len(arg)))]


#: (name, entry kind, call) for every mechanism the object runs
CALLS = [
    ("measure", "measure", lambda m: m.measure(np.array([3, 1, 2]), 2.0, clique=("a",), round=1)),
    ("select", "select", lambda m: m.select([0.0, 2.0, 1.0], 1.0, 1.0, round=1)),
    ("select-allowed", "select", lambda m: m.select([0.0, 2.0, 1.0], 1.0, 1.0, allowed=lambda i: i != 1)),
    ("counts", "discover-counts", lambda m: m.counts(np.array([4, 0, 7]), 2.0, column="c", note="cells")),
    ("keys", "discover-keys", lambda m: m.keys({"x": 90, "y": 1}, 2.0, 1e-3, column="c")),
    (
        "medians",
        "discover-medians",
        lambda m: m.medians([np.array([2, 5, 1]), np.array([3])], 0.01, column="c", note=""),
    ),
    (
        "opendp",
        "test-gaussian",
        lambda m: m.run_opendp(
            "test-gaussian", gaussian_measurement(2.0), 1, [5, 6], fallback=_gauss_fallback([5, 6]), params={}
        ),
    ),
]


@pytest.mark.parametrize("name,kind,call", CALLS, ids=[c[0] for c in CALLS])
def test_every_mechanism_is_charged_before_it_draws(name, kind, call):
    noise = SpyNoise(3)
    ledger = noise.bind(Ledger(10.0, delta_budget=0.5))
    call(ChargedMechanisms(ledger, noise))
    (entry,) = ledger.entries
    assert entry.kind == kind and entry.rho > 0
    assert noise.draws, "the mechanism drew no noise"
    for _what, held in noise.draws:
        assert held == [entry]  # charged already, at every draw


@pytest.mark.parametrize("name,kind,call", CALLS, ids=[c[0] for c in CALLS])
def test_a_charge_the_ledger_cannot_pay_draws_nothing(name, kind, call):
    noise = SpyNoise(3)
    ledger = noise.bind(Ledger(1e-6, delta_budget=1e-12))
    with pytest.raises(BudgetExceededError):
        call(ChargedMechanisms(ledger, noise))
    assert ledger.entries == [] and noise.draws == []


def test_spending_until_refused_never_passes_the_budget():
    noise = SpyNoise(5)
    ledger = noise.bind(Ledger(1.0))
    mech = ChargedMechanisms(ledger, noise)
    runs = 0
    with pytest.raises(BudgetExceededError):
        while True:
            mech.measure(np.array([1, 2]), 1.5) if runs % 2 else mech.select([0.0, 1.0], 0.9, 1.0)
            runs += 1
    assert len(ledger.entries) == len(noise.draws) == runs > 0
    assert ledger.spent <= ledger.rho_budget * (1 + LEDGER_RTOL)
    # the refused charge is the one that would have passed the budget
    assert ledger.spent + min(1 / (2 * 1.5**2), 0.9**2 / 8) > ledger.rho_budget


def test_aim_charges_every_draw_first_and_spends_its_budget(monkeypatch):
    """A whole AIM run: each discrete Gaussian draw follows its 'measure' entry, each noisy max its
    'select' entry (same noise parameters), one draw per entry, and the ledger ends at the budget."""
    import pandas as pd

    from ddssp.marginals import aim
    from ddssp.marginals.workload import all_pairs

    noise = SpyNoise(11)
    monkeypatch.setattr(aim, "Ledger", lambda rho: noise.bind(Ledger(rho)))
    rng = np.random.default_rng(0)
    dom = {"a": 3, "b": 4, "c": 2, "d": 5}
    df = pd.DataFrame({k: rng.integers(0, n, 300) for k, n in dom.items()})
    res = aim.run_aim(df, dom, all_pairs(dom), 0.5, rng=np.random.default_rng(0), noise=noise, final_iters=20)
    entries = res.ledger.entries
    assert len(noise.draws) == len(entries) > len(dom)
    for i, (what, held) in enumerate(noise.draws):
        assert held == entries[: i + 1]
        e = held[-1]
        if what == "gaussian_int":
            assert e.kind == "measure" and e.sigma == noise.scales[i]
        else:
            assert what == "noisy_max" and e.kind == "select" and e.params["scale"] == noise.scales[i]
    assert math.isclose(res.ledger.spent, 0.5, rel_tol=1e-9) and res.ledger.spent <= 0.5 * (1 + LEDGER_RTOL)


def test_discovery_and_the_package_name_the_same_class():
    from ddssp.dp import discovery

    assert discovery.ChargedMechanisms is ChargedMechanisms
