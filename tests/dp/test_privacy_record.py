"""The one privacy record every estimator exposes as ``privacy_``: built from a ledger, read-only,
JSON-able, and the same type for every estimator in the package."""

import dataclasses
import json
import math

import numpy as np
import pytest

from ddssp.dp import (
    INSECURE_STAMP,
    ChargedMechanisms,
    InsecureSeededNoise,
    Ledger,
    PrivacyRecord,
    SecureNoise,
    eps_from_rho_delta,
)
from ddssp.errors import PrivacyParameterError


def _ledger(noise):
    ledger = Ledger(1.0)
    mech = ChargedMechanisms(ledger, noise)
    mech.measure(np.array([3, 4, 5]), 2.0, clique=("a", "b"), round=0)
    mech.select([0.0, 1.0, 2.0], 0.5, 1.0, round=1)
    return ledger


def test_from_ledger_carries_rho_entries_and_the_implied_eps():
    noise = SecureNoise()
    ledger = _ledger(noise)
    rec = ledger.record("two mechanisms", delta=1e-6, noise=noise, details={"k": 1})
    assert rec.rho == ledger.spent and rec.entries == tuple(ledger.entries) and len(rec.entries) == 2
    assert rec.eps == pytest.approx(eps_from_rho_delta(ledger.spent, 1e-6), rel=1e-12)
    assert rec.delta == 1e-6 and rec.stamp is None and rec.noise == {"source": "opendp", "secure": True}
    assert rec.private
    # a stated eps (a release's budget) wins over the conversion
    assert PrivacyRecord.from_ledger(ledger, "m", delta=1e-6, eps=3.0).eps == 3.0
    # charging the ledger later does not change a record already made
    ChargedMechanisms(ledger, noise).measure(np.array([1]), 3.0)
    assert len(rec.entries) == 2


def test_insecure_noise_is_stamped_and_not_private():
    noise = InsecureSeededNoise(0)
    rec = _ledger(noise).record("m", delta=1e-6, noise=noise)
    assert rec.stamp == INSECURE_STAMP and not rec.private and rec.noise["secure"] is False


def test_record_is_read_only():
    rec = PrivacyRecord("m", eps=1.0, delta=0.0, details={"personalized_eps": np.array([0.5, 1.0])})
    with pytest.raises(dataclasses.FrozenInstanceError):
        rec.eps = 2.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        rec.details["x"] = 1  # type: ignore[index]


@pytest.mark.parametrize("bad", [{"eps": -1.0}, {"delta": float("nan")}, {"rho": -0.1}])
def test_bad_values_are_refused(bad):
    kw = {"eps": 1.0, "delta": 0.0, **bad}
    with pytest.raises(PrivacyParameterError):
        PrivacyRecord("m", **kw)


def test_to_dict_is_json_and_can_leave_entries_out():
    noise = SecureNoise()
    rec = _ledger(noise).record("m", delta=1e-6, noise=noise, details={"w": np.array([0.25, 0.75])})
    full = json.loads(json.dumps(rec.to_dict()))
    assert len(full["entries"]) == 2 and full["details"]["w"] == [0.25, 0.75] and full["rho"] == rec.rho
    assert "entries" not in rec.to_dict(entries=False)
    assert PrivacyRecord("none", eps=math.inf, delta=1.0).private is False


def test_every_row_estimator_fills_the_same_record():
    from ddssp.estimators import (
        NAPPERM,
        AdaSSP,
        JorgensenSampleMechanism,
        NonPersonalizedOutputPerturbation,
        ObjectivePerturbation,
        PDPOutputPerturbation,
        PublicLinearRegression,
    )
    from ddssp.estimators.napp_options import Augmentation, DeclaredBounds

    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(200, 3)) / 2
    y = np.clip(X @ np.array([0.3, -0.2, 0.1]), -1, 1)
    labels = (y > 0).astype(int)
    fits = [
        AdaSSP(1.0, 1e-5, x_bound=1.0, y_bound=1.0, insecure_seed=0).fit(X, y),
        ObjectivePerturbation(1.0, 1e-5, x_bound=1.0, insecure_seed=0).fit(X, labels),
        PDPOutputPerturbation(lam=1.0, eps=0.5, insecure_seed=0).fit(X, y),
        NonPersonalizedOutputPerturbation(lam=1.0, insecure_seed=0).fit(X, y, eps=np.linspace(0.1, 1, 200)),
        JorgensenSampleMechanism(lam=1.0, eps=0.5, insecure_seed=0).fit(X, y),
        NAPPERM(
            eps=1.0,
            bounds=DeclaredBounds(y_bound=1.0, theta_bound=2.0),
            augmentation=Augmentation(n_e=200, max_iter=3),
            seed=0,
            insecure_seed=0,
        ).fit(X, y),
        PublicLinearRegression().fit(X, y),
    ]
    for m in fits:
        rec = m.privacy_
        assert isinstance(rec, PrivacyRecord) and rec.eps is not None and rec.delta is not None, type(m)
        json.dumps(rec.to_dict())
    ada, objp, pdp, nonpers, jorg, napp, pub = (m.privacy_ for m in fits)
    assert ada.rho == pytest.approx(sum(e.rho for e in ada.entries)) and len(ada.entries) == 3
    assert ada.details["eps_from_opendp"] <= ada.eps and ada.stamp == INSECURE_STAMP
    assert objp.rho is None and objp.entries == () and (objp.eps, objp.delta) == (1.0, 1e-5)
    assert pdp.eps == 0.5 and pdp.delta == 0.0 and pdp.details["max_eps"] == 0.5
    assert nonpers.eps == pytest.approx(0.1) and len(nonpers.details["requested_eps"]) == 200
    assert jorg.eps == jorg.details["guaranteed_eps"] == 0.5
    assert napp.eps == 1.0 and napp.delta == 0.0 and napp.details["eps_planned"] == 1.0
    assert pub.eps == math.inf and not pub.private
