"""The limits of a release file, shared by the code that writes one and the code that reads one.

The reader (:mod:`ddssp.releasefile.reader`) refuses a file over any of these limits before it does
the work the limit guards; the writer side (:func:`check_release_plan`, called before AIM runs, and
the release writer, which applies the reader's own count and memory checks to the document it is
about to write) refuses a release the reader would refuse, naming the option that fixes it. The
pair workload of a wide table is capped at :data:`MAX_WORKLOAD_CLIQUES`
(:func:`ddssp.marginals.workload.all_pairs`), so a wide table gets a release that loads.

Every JSON member is parsed only after a linear scan bounds its structure: the values of any kind
(:data:`MAX_JSON_ITEMS`), the nesting depth (:data:`MAX_JSON_DEPTH`) and the longest string
(:data:`MAX_JSON_STRING`); manifest.json, which is parsed before any checksum, has tighter caps
(:data:`MANIFEST_LIMITS`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ddssp.errors import DDSSPError

# --------------------------------------------------------------------------- the archive
#: Cap on the file and on the sum of the members' declared (uncompressed) sizes.
MAX_TOTAL_BYTES = 2 << 30
#: Cap on release.json.
MAX_JSON_BYTES = 64 << 20

# --------------------------------------------------------------------------- counts
#: Caps on counts, checked before any per-entry work. A real release holds a few hundred entries.
MAX_LEDGER_ENTRIES = 20_000
#: Schema discovery's entries: a key-release entry's check recomputes a threshold cost (about 0.2 ms
#: for a new noise scale), so this cap keeps the load of a forged ledger short. Discovery needs at
#: least two entries per column it keeps (:func:`check_discovery_width`).
MAX_DISCOVERY_ENTRIES = 1_000
MAX_MEASUREMENTS = 10_000
MAX_CLIQUES = 10_000
MAX_COLUMNS = 10_000
#: The pair workload of a wide table holds at most this many pairs (see
#: :func:`ddssp.marginals.workload.all_pairs`); it fits the reader's clique cap.
MAX_WORKLOAD_CLIQUES = MAX_CLIQUES
#: Cap on the levels, edges, values, labels and within-bin numbers listed by all the schema's columns together.
MAX_LISTED_LEVELS = 1_000_000
#: Members of the archive: release.json, manifest.json, a signature and one array per measurement
#: and per model clique. Checked from the end-of-central-directory record, before the directory is read.
MAX_MEMBERS = MAX_MEASUREMENTS + MAX_CLIQUES + 3
#: Bytes of the central directory: a member's entry is 46 bytes plus its name and extra fields
#: (release members have short names and no extra fields; 200 bytes is far above any).
MAX_CENTRAL_DIRECTORY_BYTES = MAX_MEMBERS * 200
#: Cap on one ledger entry's note (a short public description of the mechanism).
MAX_NOTE_CHARS = 1_000

# --------------------------------------------------------------------------- JSON structure
#: Integers in the JSON members are refused above this many digits (no count or id needs more).
MAX_INT_DIGITS = 30
#: Cap on the values of a JSON member (lists, objects, strings, numbers, keys), counted before parsing:
#: a parsed value costs the parser about 100 bytes whatever its kind (an empty list included), so this
#: bounds its memory near 150 MB.
MAX_JSON_ITEMS = 1_500_000
#: Cap on the nesting depth of a JSON member (a release nests about 8 deep).
MAX_JSON_DEPTH = 64
#: Cap on one string of a JSON member, in bytes as stored (a label, a column name, a note), checked as
#: the longest stretch between two quotes: a long list of numbers counts too, so the cap is generous.
MAX_JSON_STRING = 8 << 20


@dataclass(frozen=True)
class JSONLimits:
    """Structural caps of one JSON member.

    Parameters
    ----------
    max_bytes : int
        The member's size.
    max_items : int
        Values of any kind.
    max_depth : int
        Nesting depth.
    max_string : int
        One string's bytes.
    """

    max_bytes: int
    max_items: int
    max_depth: int
    max_string: int


#: release.json.
RELEASE_LIMITS = JSONLimits(MAX_JSON_BYTES, MAX_JSON_ITEMS, MAX_JSON_DEPTH, MAX_JSON_STRING)
#: manifest.json: a format header and one (sha256, size) entry per member, three levels deep.
MANIFEST_LIMITS = JSONLimits(MAX_MEMBERS * 200 + 4096, MAX_MEMBERS * 6 + 64, 8, 4096)
#: signature.json: an algorithm name, a signature and a public key.
SIGNATURE_LIMITS = JSONLimits(4096, 64, 4, 2048)

# --------------------------------------------------------------------------- memory
#: Default budget for everything a load allocates (arrays, float copies, check temporaries, the model).
#: The largest honest releases measured: Adult (declared domain, 15 columns) at eps 4, whose model
#: reaches 9.6 million cells (73 MiB of tables, near AIM's default 80 MB limit), is estimated at
#: 731 MiB (544 MB peak resident for ``ddssp inspect``); raw Adult at eps 1 at 152 MiB.
DEFAULT_MAX_MEMORY = 1 << 30
#: Environment variable overriding :data:`DEFAULT_MAX_MEMORY` (bytes, or with a K/M/G suffix).
MAX_MEMORY_ENV = "DDSSP_MAX_LOAD_MEMORY"
#: The model tables (MB of float64, as AIM's ``max_model_size``) a load accepts under the default
#: budget: AIM's largest default limit. A larger budget raises it in proportion.
DEFAULT_MAX_MODEL_MB = 80.0
#: Bytes allocated per cell while loading, beyond the array itself: a measurement gets a float copy
#: and the integrality check's temporaries; a model table its float copy, its log-potential, the
#: calibrated belief and the message-passing temporaries.
MEASUREMENT_BYTES_PER_CELL = 8 * 5
MODEL_BYTES_PER_CELL = 8 * 10
#: Bytes per declared level of the schema once parsed (a label string and its list and dict slots).
SCHEMA_BYTES_PER_LEVEL = 160


def parse_memory(raw: str, what: str) -> int:
    """A memory size (``123``, ``512M``, ``2G``) as a positive number of bytes.

    Parameters
    ----------
    raw : str
        The size.
    what : str
        Where it came from, for the message.

    Returns
    -------
    int

    Raises
    ------
    DDSSPError
        When it is not a memory size.
    """
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    s = str(raw).strip().upper().removesuffix("B").removesuffix("I")
    k = mult.get(s[-1:], 1)
    try:
        v = float(s[:-1] if s[-1:] in mult else s) * k
    except ValueError:
        v = float("nan")
    if not (math.isfinite(v) and v >= 1):
        raise DDSSPError(f"{what}={raw!r} is not a memory size; give bytes or e.g. 512M, 2G")
    return int(v)


def max_memory_default() -> int:
    """The load budget: ``DDSSP_MAX_LOAD_MEMORY`` if set (bytes, or e.g. ``2G``), else 1 GiB.

    Returns
    -------
    int
        Bytes.

    Raises
    ------
    DDSSPError
        For an unreadable environment value.
    """
    raw = os.environ.get(MAX_MEMORY_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_MEMORY
    return parse_memory(raw, MAX_MEMORY_ENV)


def max_model_mb(max_memory: int) -> float:
    """The model tables (MB of float64) a load with budget ``max_memory`` accepts.

    Parameters
    ----------
    max_memory : int
        The load budget in bytes.

    Returns
    -------
    float
        :data:`DEFAULT_MAX_MODEL_MB` under the default budget, in proportion to it otherwise.
    """
    return DEFAULT_MAX_MODEL_MB * max_memory / DEFAULT_MAX_MEMORY


def budget_hint(model_mb: float, memory: int = 0) -> str:
    """The ``DDSSP_MAX_LOAD_MEMORY`` setting under which a model of ``model_mb`` MB and a load of
    ``memory`` bytes are accepted.

    Parameters
    ----------
    model_mb : float
        The model's tables, MB.
    memory : int
        What the load allocates, bytes.

    Returns
    -------
    str
        E.g. ``DDSSP_MAX_LOAD_MEMORY=3G``.
    """
    need = max(model_mb * DEFAULT_MAX_MEMORY / DEFAULT_MAX_MODEL_MB, memory)
    return f"{MAX_MEMORY_ENV}={max(2, math.ceil(need / 2**30))}G"


def check_release_plan(
    domain: dict[str, int],
    workload_cliques: int,
    rounds: int,
    ledger_entries: int = 0,
    discovery_entries: int = 0,
    listed_levels: int = 0,
) -> None:
    """Refuse, before AIM runs, a release the reader would refuse, naming the option that fixes it.

    AIM measures every column's one-way marginal and then at most ``rounds`` cliques (each round
    after the first spends at least the budget of one planned round), recording a selection and a
    measurement per round.

    Parameters
    ----------
    domain : dict
        ``{column: size}`` of the release.
    workload_cliques : int
        The workload's cliques.
    rounds : int
        AIM's T.
    ledger_entries : int
        Entries already in the ledger (schema discovery).
    discovery_entries : int
        Of those, the discovery entries.
    listed_levels : int
        Levels, edges and labels the schema lists.

    Raises
    ------
    DDSSPError
        For more columns, workload cliques, measurements, ledger entries or listed levels than a
        release file holds. (The model's size and the load's memory depend on what AIM selects: the
        release writer checks them, exactly as the reader will, before it writes anything.)
    """
    d = len(domain)
    if d > MAX_COLUMNS:
        raise DDSSPError(
            f"the table has {d:,} columns, more than the {MAX_COLUMNS:,} a release file holds; "
            "keep fewer columns (--drop, or a schema listing only the ones to release)"
        )
    if workload_cliques > MAX_CLIQUES:
        raise DDSSPError(
            f"the workload has {workload_cliques:,} cliques, more than the {MAX_CLIQUES:,} a release file "
            "holds; give a smaller workload (--workload FILE, or the default all-pairs, which is capped)"
        )
    if discovery_entries > MAX_DISCOVERY_ENTRIES:
        raise DDSSPError(
            f"schema discovery made {discovery_entries:,} ledger entries, more than the "
            f"{MAX_DISCOVERY_ENTRIES:,} a release file holds; declare some columns (--schema) or --drop some"
        )
    most = d + int(rounds)
    if most > MAX_MEASUREMENTS or ledger_entries + d + 2 * int(rounds) > MAX_LEDGER_ENTRIES:
        fit = min(MAX_MEASUREMENTS - d, (MAX_LEDGER_ENTRIES - ledger_entries - d) // 2)
        fix = (
            f"give --rounds {fit:,} or less"
            if fit > d  # AIM needs more rounds than columns
            else f"keep fewer columns (--drop; with --rounds just above the columns, fewer than {MAX_MEASUREMENTS // 2:,})"
        )
        raise DDSSPError(
            f"{d:,} columns and {int(rounds):,} rounds may make {most:,} measurements and "
            f"{d + 2 * int(rounds):,} ledger entries, more than the {MAX_MEASUREMENTS:,} and {MAX_LEDGER_ENTRIES:,} "
            f"a release file holds; {fix}"
        )
    if listed_levels > MAX_LISTED_LEVELS:
        raise DDSSPError(
            f"the schema lists {listed_levels:,} levels, more than the {MAX_LISTED_LEVELS:,} a release file "
            "holds; bin or cap the large columns (--max-levels, --bins)"
        )


#: The fewest ledger entries schema discovery makes for one column it keeps: a column declared
#: categorical takes at least one key release; any other column a scan and then at least one key
#: release or one round of counts. Discovery also makes one noisy row count for the whole table.
DISCOVERY_ENTRIES_PER_CATEGORICAL = 1
DISCOVERY_ENTRIES_PER_COLUMN = 2


def check_discovery_width(undeclared: Sequence[str], categorical: Collection[str] = ()) -> None:
    """Refuse, from the header and the options alone, a table whose discovery cannot fit the ledger.

    Discovery of ``undeclared`` makes at least one row count plus
    :data:`DISCOVERY_ENTRIES_PER_CATEGORICAL` entries per column declared categorical and
    :data:`DISCOVERY_ENTRIES_PER_COLUMN` per other column it keeps; when that is over
    :data:`MAX_DISCOVERY_ENTRIES`, a release keeping every column would be refused after discovery
    had read the table and drawn its noise, so the table is refused before. (Discovery could fit
    only by dropping columns, at one scan's entry each, for want of rows: a release of a few of the
    columns, which the user gets better by choosing them.) Only column names and the user's options
    are used: the refusal reveals nothing about the rows.

    Parameters
    ----------
    undeclared : sequence of str
        The columns discovery would discover.
    categorical : collection of str
        The columns declared categorical (``DiscoveryOptions.categorical``).

    Raises
    ------
    DDSSPError
        Naming the options that fix it.
    """
    cat = set(categorical)
    n_cat = sum(1 for n in undeclared if n in cat)
    least = 1 + n_cat * DISCOVERY_ENTRIES_PER_CATEGORICAL + (len(undeclared) - n_cat) * DISCOVERY_ENTRIES_PER_COLUMN
    if least > MAX_DISCOVERY_ENTRIES:
        most = (MAX_DISCOVERY_ENTRIES - 1) // DISCOVERY_ENTRIES_PER_COLUMN
        raise DDSSPError(
            f"schema discovery of {len(undeclared):,} undeclared columns needs at least {least:,} ledger "
            f"entries to keep them all, more than the {MAX_DISCOVERY_ENTRIES:,} a release file holds; keep fewer "
            f"columns (ReadOptions.columns/drop; at most {most:,} undeclared columns can fit) or declare some in the "
            "schema (declared columns cost no ledger entries)"
        )
