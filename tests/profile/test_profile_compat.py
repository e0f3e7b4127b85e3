"""Profiles recorded another way: metrics missing from a copy of a fixture export, the stall
form and units of older ncu versions, the long CSV layout ``ncu --csv`` prints by default, the
details page alone; and ncu's pass counts. The report says what is missing instead of failing."""

from __future__ import annotations

import csv
import io
import json

import pytest

from sparsescope.cli import main
from sparsescope.profile import load
from sparsescope.profile import metrics as M
from sparsescope.profile.collect import passes_from_output
from sparsescope.profile.read_csv import load_profiles_csv
from sparsescope.profile.records import short_kernel_name
from sparsescope.report.profile_render import render_markdown, write_figures

MODULES = ["sparsescope.cli.profile_cmd", "sparsescope.cli.report_cmd"]


def _rows(path):
    lines = [ln for ln in path.read_text().splitlines() if not ln.startswith("==")]
    start = next(i for i, ln in enumerate(lines) if ln.startswith('"ID"'))
    return list(csv.reader(io.StringIO("\n".join(lines[start:]))))


def _write(path, rows):
    buffer = io.StringIO()
    csv.writer(buffer, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    path.write_text(buffer.getvalue())
    return path


DROPPED = (M.CPI, M.REGISTERS_PER_THREAD, "smsp__inst_executed.sum", "dram__sectors_read.sum",
           "lts__t_sector_hit_rate.pct", "sm__warps_active.avg.per_cycle_active")


@pytest.fixture
def stripped(h200_fixtures, tmp_path):
    """spmv_full_raw.csv without the CPI, every stall reason and a few more metrics."""
    rows = _rows(h200_fixtures / "spmv_full_raw.csv")
    keep = [i for i, name in enumerate(rows[0])
            if name not in DROPPED and M.stall_reason(name) is None]
    return _write(tmp_path / "stripped_raw.csv", [[r[i] for i in keep] for r in rows])


def test_missing_metrics_are_named_not_fatal(stripped, tmp_path):
    profiles = load(stripped)
    assert profiles[0].cpi is None and profiles[0].stalls == {}
    assert profiles[0].registers_per_thread is None
    made = write_figures(profiles, tmp_path / "fig")
    assert "stalls" not in made and "instruction_roofline" not in made  # nothing to draw
    text = render_markdown(profiles)
    assert "| Registers/Thread | n/a | n/a | n/a | n/a |" in text
    assert "- Registers/Thread: `launch__registers_per_thread` (csrmv_v3_kernel#0," in text
    assert "- CPI (warp cycles per issued instruction): " \
           "`smsp__average_warp_latency_per_inst_issued.ratio`" in text
    assert "- L2 hit rate: `lts__t_sector_hit_rate.pct`" in text
    assert "*Not in the profile of csrmv_v3_kernel#0, " in text          # stall reasons
    assert "No instruction-roofline metrics (`smsp__inst_executed.sum`" in text
    assert "No FLOP counters" in text
    # active warps fall back to achieved % x max warps; Little's law still runs
    assert "| Active Warps/SM | 29.69 |" in text and "Not computed" not in text
    # a quantity that is n/a for another reason (no shared memory) is not called missing
    assert "- Shared load bank conflicts" not in text


@pytest.mark.usefixtures("figures_not_drawn")
def test_report_command_on_a_stripped_export(stripped, tmp_path, capsys):
    from pathlib import Path

    results = Path(__file__).resolve().parents[2] / "results" / "h200" / "seed6" / "results.json"
    out = tmp_path / "rep"
    assert main(["report", str(results), "--profile", str(stripped), "--out", str(out),
                 "--json"], modules=MODULES) == 0
    assert json.loads(capsys.readouterr().out)["sections"] == ["Nsight Compute profile"]
    md = (out / "report.md").read_text()
    assert "`smsp__average_warp_latency_per_inst_issued.ratio`" in md
    assert "| DRAM latency | 342.7 ns | measured |" in md     # the results file's measurement


def test_older_ncu_stall_form_units_and_columns(h200_fixtures, tmp_path):
    """ncu before the per-issue ratios: % of warp-active cycles; ``usecond`` durations; the
    Process ID / Process Name / Host Name columns of the 2020-2022 raw page."""
    rows = _rows(h200_fixtures / "ncu_metrics_cant_analog.csv")
    header, units, data = rows[0], rows[1], rows[2:]
    cpi_col = header.index(M.CPI)
    new_header, new_units, new_data = [], [], [[] for _ in data]
    for i, name in enumerate(header):
        reason = M.stall_reason(name)
        if reason is not None:
            new_header.append(f"smsp__warp_issue_stalled_{reason}_per_warp_active.pct")
            new_units.append("%")
            for out, row in zip(new_data, data, strict=True):
                pct = float(row[i]) / float(row[cpi_col].replace(",", "")) * 100
                out.append(repr(pct))
        elif name == M.DURATION_NS:
            new_header.append(name)
            new_units.append("usecond")
            for out, row in zip(new_data, data, strict=True):
                out.append(repr(float(row[i].replace(",", "")) / 1000))
        else:
            new_header.append(name)
            new_units.append(units[i])
            for out, row in zip(new_data, data, strict=True):
                out.append(row[i])
        if name == "ID":
            new_header += ["Process ID", "Process Name", "Host Name"]
            new_units += ["", "", ""]
            for out in new_data:
                out += ["4242", "python3", "127.0.0.1"]
    old = load(_write(tmp_path / "old_raw.csv", [new_header, new_units, *new_data]))
    now = load(h200_fixtures / "ncu_metrics_cant_analog.csv")
    assert len(old) == len(now) == 51
    for a, b in zip(old, now, strict=True):
        assert list(a.stalls) == list(b.stalls)
        for reason, cycles in b.stalls.items():
            assert a.stalls[reason] == pytest.approx(cycles, rel=1e-9, abs=1e-12)
        assert a.duration_ns == pytest.approx(b.duration_ns, rel=1e-12)
        assert (a.name, a.block_size, a.cpi) == (b.name, b.block_size, b.cpi)


def test_long_layout_of_ncu_csv_default_output(h200_fixtures, tmp_path):
    """``ncu --csv --metrics ...`` without ``--page raw``: one row per metric, display units,
    thousands separators; the same numbers as the raw page."""
    rows = _rows(h200_fixtures / "spmv_full_raw.csv")
    header, units, data = rows[0], rows[1], rows[2:]
    col = {n: i for i, n in enumerate(header)}
    wanted = [M.CPI, M.DURATION_NS, M.BLOCK_SIZE, M.ACHIEVED_OCCUPANCY_PCT, "dram__bytes_read.sum",
              *(M.stall_metric(r) for r in M.STALL_REASONS)]
    out = [["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
            "Block Size", "Grid Size", "Device", "CC", "Section Name", "Metric Name",
            "Metric Unit", "Metric Value"]]
    for row in data:
        for name in wanted:
            value, unit = row[col[name]], units[col[name]]
            if name == M.DURATION_NS:            # the raw export says 27.840000 us; CLI: 27.84
                assert unit == "us"
                value = f"{float(value):,.2f}"
            elif name == "dram__bytes_read.sum":     # 49.121792 Mbyte -> 49,121.792 Kbyte
                assert unit == "Mbyte"
                value, unit = f"{float(value) * 1000:,.3f}", "Kbyte"
            out.append([row[0], "447", "python3.12", "127.0.0.1", row[col["Kernel Name"]], "1",
                        "7", "(512, 1, 1)", "(1305, 1, 1)", "0", "9.0",
                        "Command line profiler metrics", name, unit, value])
    long = load_profiles_csv(_write(tmp_path / "long.csv", out))
    raw = load(h200_fixtures / "spmv_full_raw.csv")
    assert [p.name for p in long] == [p.name for p in raw]
    for a, b in zip(long, raw, strict=True):
        assert a.stalls == pytest.approx(b.stalls, rel=1e-6)
        assert (a.cpi, a.block_size) == (pytest.approx(b.cpi, rel=1e-6), b.block_size)
        assert a.duration_ns == pytest.approx(b.duration_ns, abs=10)         # 0.01 us printed
        assert a.value("dram__bytes_read.sum") == pytest.approx(b.value("dram__bytes_read.sum"))


def test_details_page_alone_is_a_profile(h200_fixtures):
    details = load_profiles_csv(h200_fixtures / "spmv_full_details.csv")
    raw = load(h200_fixtures / "spmv_full_raw.csv")
    assert [p.name for p in details] == [p.name for p in raw]
    first = details[0]
    # the section tables print rounded values: CPI 14.54, Duration 27.84 us, Achieved 46.39 %
    assert (first.cpi, first.duration_ns, first.achieved_occupancy_pct) == (14.54, 27840.0, 46.39)
    assert (first.block_size, first.grid_size, first.registers_per_thread) == (512, 1305, 47)
    assert first.cpi == pytest.approx(raw[0].cpi, abs=0.005)
    assert len(first.rules) == 13 and first.stalls == {}
    assert "Duration" not in first.metrics and M.DURATION_NS in first.metrics


def test_pass_counts_from_ncu_output():
    text = "\n".join([
        "==PROF== Connected to process 490 (/usr/bin/python3.12)",
        '==PROF== Profiling "csr_partition_kernel": 0%....50%....100% - 34 passes',
        '==PROF== Profiling "csrmv_v3_kernel" - 0: 0%....50%....100% - 40 passes',   # older form
        '==PROF== Profiling "k": 0%....50%....100% - 1 pass',
        "sparsescope-target: cant torch-cusparse-i64 spmv: ok"])
    assert passes_from_output(text) == (("csr_partition_kernel", 34), ("csrmv_v3_kernel", 40),
                                        ("k", 1))


def test_short_names_of_csv_exports():
    # ncu's CSV pages print cusparse::<unnamed>:: as "unnamed>::" (seen on H200, ncu 2025.3)
    csv_name = "void unnamed>::csr_partition_kernel<long, long>(const T1 *, T2, T1, T1, T2)"
    assert short_kernel_name(csv_name) == "csr_partition_kernel"
    assert short_kernel_name("void ns::(anonymous namespace)::k<int>(int)") == "k"
