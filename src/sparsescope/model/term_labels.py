"""What a prediction's terms are called for a reader, and which one binds.

The predictors name their terms and queue stations by short identifiers (``dram``, ``issue``,
``imbalance``); a summary shows each with its words (:data:`TERM_LABELS`). The *binding* term is
the largest of those the prediction takes the maximum of (``memory``, ``imbalance``,
``compute``; ``memory`` already lies above the ``dram``, ``l2``, ``issue`` and ``latency``
bounds, being their queueing network)::

    predicted = overhead + max(memory, imbalance, compute)

so the limiter a summary names is always the largest term it shows (:func:`binding_term`).
Where the memory system binds, the predictors' own ``limiter`` names the station of its queueing
network with the longest residence per iteration (the per-SM MVA of ``model.predict``); a
station can lead there while its whole-GPU term is small: 37 blocks on 37 of 132 SMs issue
their instructions on 37 SMs' schedulers, 132 / 37 = 3.6 times the whole-GPU issue term per SM.
:func:`limiter_label` names the binding term and, under it, that station with its share of the
loaded iteration, from the residences the prediction keeps (``residence_ns_<station>``).
"""

from __future__ import annotations

#: Term or station identifier -> the reader's words.
TERM_LABELS: dict[str, str] = {
    "dram": "DRAM bandwidth",
    "l2": "L2 bandwidth",
    "issue": "instruction issue",
    "latency": "memory latency (too few loads in flight)",
    "memory": "memory system",
    "imbalance": "load imbalance (the longest block)",
    "compute": "FP32 arithmetic",
    "tensor": "tensor cores",
    "overhead": "launch overhead",
}
#: The terms the time takes the largest of (``model.predict.BINDING_TERMS`` and the SpMM
#: predictors' ``tensor``).
BINDING = ("memory", "imbalance", "compute", "tensor")
#: The round trips of the memory system's queueing network (its delay station).
ROUND_TRIPS = "round_trips"


def term_label(name: str) -> str:
    """``name``'s words (an unknown identifier with its underscores as spaces)."""
    return TERM_LABELS.get(name, name.replace("_", " "))


def binding_term(prediction) -> str:
    """The largest of the prediction's binding terms (any term but the overhead when it has
    none of them); "" without terms."""
    terms = [t for t in prediction.terms if t.name in BINDING] or \
        [t for t in prediction.terms if t.name != "overhead"]
    if not terms:
        return ""
    return max(terms, key=lambda t: t.time_ms).name


def queue_shares(prediction) -> dict[str, float]:
    """Share of one loaded iteration of the memory system each station and the round trips
    take (``residence_ns_<station>`` and ``round_trips_ns`` over their sum), largest first;
    empty when the prediction keeps no residences."""
    inputs = prediction.inputs
    parts = {k[len("residence_ns_"):]: float(v) for k, v in inputs.items()
             if k.startswith("residence_ns_")}
    if not parts:
        return {}
    parts[ROUND_TRIPS] = float(inputs.get("round_trips_ns", 0.0))
    total = sum(parts.values())
    if total <= 0:
        return {}
    return dict(sorted(((k, v / total) for k, v in parts.items()), key=lambda kv: -kv[1]))


def limiter_label(prediction) -> str:
    """The binding term in words; for the memory system, the part of its loaded iteration that
    leads (``memory system, mostly instruction issue (39 % of a loaded iteration)``)."""
    name = binding_term(prediction)
    if not name:
        return ""
    words = term_label(name)
    if name != "memory":
        return words
    shares = queue_shares(prediction)
    if not shares:
        return words
    lead, share = next(iter(shares.items()))
    part = "round trips to memory" if lead == ROUND_TRIPS else term_label(lead)
    return f"{words}, mostly {part} ({100 * share:.0f} % of a loaded iteration)"
