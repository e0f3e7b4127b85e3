"""Read ``.ncu-rep`` files through NVIDIA's ``ncu-report`` package (``ncu_report.load_report``).

No GPU and no ncu binary are needed. ``load_report`` accepts any file without complaint and returns
a context with zero ranges when the file is not a report; that case is an error here, naming the
file, instead of an empty profile.
"""

from __future__ import annotations

import re
from pathlib import Path

from sparsescope._optional import import_optional
from sparsescope.profile import metrics as M
from sparsescope.profile.errors import ProfileError
from sparsescope.profile.records import (
    InstructionSample,
    KernelProfile,
    MetricValue,
    RuleMessage,
    build_profile,
)

#: ncu_report's MsgType -> the word the CLI and the CSV details page print.
_MSG_TYPES = {1: "INF", 2: "OPT", 3: "WRN", 4: "ERR"}
#: ncu_report's SpeedupType -> the CSV details page's "Estimated Speedup Type".
_SPEEDUP_TYPES = {1: "local", 2: "global"}
_MARKUP = re.compile(r"@(\w+):([^@]*)@")
#: Reports start with these bytes (used only to word the error for a file with no ranges).
REPORT_MAGIC = b"NVR\x00"


def _load_context(path: str | Path):
    ncu_report = import_optional("ncu_report", "reading .ncu-rep files")
    path = Path(path)
    if not path.is_file():
        raise ProfileError("not_a_report", "no such file", path=str(path))
    try:
        context = ncu_report.load_report(str(path))
    except Exception as exc:  # the library raises plain RuntimeErrors for corrupt files
        raise ProfileError("not_a_report", f"ncu_report could not load it: {exc}",
                           path=str(path)) from exc
    if context.num_ranges() == 0:
        # load_report accepts any file silently; a real report always holds a range.
        if path.stat().st_size == 0:
            what = "empty file, not an Nsight Compute report"
        else:
            with path.open("rb") as handle:
                magic = handle.read(len(REPORT_MAGIC)) == REPORT_MAGIC
            what = ("report header but no readable profile (truncated, or no kernel profiled)"
                    if magic else
                    "not an Nsight Compute report (ncu_report found no ranges in it)")
        raise ProfileError("not_a_report", what, path=str(path))
    return context


def _actions(context):
    for r in range(context.num_ranges()):
        profile_range = context.range_by_idx(r)
        for a in range(profile_range.num_actions()):
            yield profile_range.action_by_idx(a)


def plain_message(text: str) -> str:
    """Rule text with ncu's markup resolved the way the CLI prints it:
    ``@section:Id:Title@`` -> ``Title``, ``@url:text:https://...@`` -> ``text (https://...)``."""
    def replace(match: re.Match) -> str:
        kind, body = match.group(1), match.group(2)
        first, _, rest = body.partition(":")
        if kind == "url":
            return f"{first} ({rest})" if rest else first
        return rest or first
    return _MARKUP.sub(replace, text)


def _metric_dict(action) -> dict[str, MetricValue]:
    out: dict[str, MetricValue] = {}
    for name in action.metric_names():
        if ":" in name:  # "group:..." and "breakdown:..." are section plumbing, not metrics
            continue
        metric = action.metric_by_name(name)
        if metric is None or not metric.has_value():
            continue
        value = metric.value()
        if value is None:
            continue
        out[name] = (value if isinstance(value, str) else float(value), metric.unit())
    return out


def _rules(action) -> tuple[RuleMessage, ...]:
    rules = []
    for result in action.rule_results_as_dicts():
        message = result.get("rule_message") or {}
        text = message.get("message", "")
        if not text:
            continue  # ncu keeps placeholder results with no message; the CLI prints nothing
        speedup = result.get("speedup_estimation") or {}
        rules.append(RuleMessage(
            rule=result.get("rule_identifier", ""),
            section=result.get("section_identifier", ""),
            type=_MSG_TYPES.get(message.get("type", 0), ""),
            message=plain_message(text),
            speedup_type=_SPEEDUP_TYPES.get(speedup.get("type", 0), ""),
            estimated_speedup_pct=speedup.get("speedup"),
        ))
    return tuple(rules)


def load_profiles(path: str | Path) -> tuple[KernelProfile, ...]:
    """Every profiled launch of a report, in report order, as :class:`KernelProfile`."""
    context = _load_context(path)
    profiles = []
    for index, action in enumerate(_actions(context)):
        demangled = action.name(action.NameBase_DEMANGLED)
        profiles.append(build_profile(index, demangled, _metric_dict(action),
                                      name=action.name(), rules=_rules(action),
                                      source=str(path)))
    return tuple(profiles)


def _per_pc(action, name: str) -> dict[int, float]:
    """Instanced metric -> {pc: value}; empty when the report lacks it."""
    metric = action.metric_by_name(name)
    if metric is None or not metric.has_correlation_ids():
        return {}
    ids = metric.correlation_ids()
    return {int(ids.as_uint64(i)): float(metric.value(i)) for i in range(metric.num_instances())}


def load_instruction_samples(path: str | Path) -> dict[int, tuple[InstructionSample, ...]]:
    """Per-instruction counts of each launch that carries them (``--set full`` or the
    SourceCounters section): launch index -> instructions in address order."""
    context = _load_context(path)
    out: dict[int, tuple[InstructionSample, ...]] = {}
    for index, action in enumerate(_actions(context)):
        executed = _per_pc(action, "inst_executed")
        if not executed:
            continue
        threads = _per_pc(action, "thread_inst_executed")
        pred_on = _per_pc(action, "thread_inst_executed_true")
        sectors = _per_pc(action, "memory_l2_theoretical_sectors_global")
        excessive = _per_pc(action, "derived__memory_l2_theoretical_sectors_global_excessive")
        samples: dict[int, dict[str, int]] = {}
        not_issued: dict[int, int] = {}
        for name in action.metric_names():
            parsed = M.pcsamp_reason(name)
            if parsed is None:
                continue
            reason, only_not_issued = parsed
            for pc, count in _per_pc(action, name).items():
                if only_not_issued:
                    not_issued[pc] = not_issued.get(pc, 0) + int(count)
                elif count:
                    samples.setdefault(pc, {})[reason] = int(count)
        rows = []
        for pc in sorted(executed):
            info = action.source_info(pc)
            by_reason = samples.get(pc, {})
            rows.append(InstructionSample(
                kernel=action.name(), address=pc, sass=action.sass_by_pc(pc).strip(),
                warp_stall_samples=sum(by_reason.values()),
                warp_stall_samples_not_issued=not_issued.get(pc, 0),
                instructions_executed=int(executed[pc]),
                thread_instructions_executed=int(threads.get(pc, 0)),
                predicated_on_thread_instructions=int(pred_on.get(pc, 0)),
                stall_samples=by_reason,
                l2_sectors_global=int(sectors.get(pc, 0)),
                l2_sectors_global_excessive=int(excessive.get(pc, 0)),
                source_file=info.file_name() if info is not None else "",
                source_line=info.line() if info is not None else None,
            ))
        out[index] = tuple(rows)
    return out
