"""The public Python API: what every ``sparsescope`` command calls, one module per stage.

- :mod:`~sparsescope.api.runs`: :func:`run` (a suite end to end), :func:`device_context`;
- :mod:`~sparsescope.api.sweeps`: :func:`sweep` (a whole collection, resumable);
- :mod:`~sparsescope.api.reports`: :func:`report` (re-render a saved run);
- :mod:`~sparsescope.api.devices`: :func:`gpu_specs`, :func:`measure_ceilings`;
- :mod:`~sparsescope.api.matrices`: :func:`matrix_catalogue`, :func:`matrix_stats`,
  :func:`generate_matrix`, :func:`generate_suite`, :func:`load_matrix`, and the one way to
  name a suite's matrices (``suite:NAME#ENTRY[@SCALE]``): :func:`matrix_selection`,
  :func:`suite_matrix`;
- :mod:`~sparsescope.api.kernels`: :func:`sass_analysis`, :func:`list_kernels`
  (:func:`sass_markdown`, :mod:`~sparsescope.api.renderings`, renders an analysis);
- :mod:`~sparsescope.api.profiles`: :func:`profile_case`, :func:`read_profile`,
  :func:`profile_report`;
- :mod:`~sparsescope.api.analysis`: :func:`analyze_workload`, :func:`analyze_offline`,
  :func:`analyze_measurement`, :func:`compare_analyses`;
- :mod:`~sparsescope.api.models`: :func:`model_figures` (Little's law, sensitivity, DAE),
  :func:`what_if_matrices` (the what-if over files or a suite), :func:`default_backends`;
- :mod:`~sparsescope.api.results`: :func:`show_results`, :func:`compare_results`,
  :func:`results_readme`, :func:`compact_results`; :func:`read_json` and :func:`write_json`,
  a JSON file as results folders keep it (plain, gzip or xz);
- the cross-GPU what-if, :func:`what_if` (:mod:`sparsescope.whatif`), and the device context
  (:mod:`sparsescope.context`): :func:`named_gpu`, :func:`rates_context`, the one prediction
  entry point :func:`predict_call` / :func:`predict_plan`.

Scripts and notebooks import these names from ``sparsescope.api`` only; the CLI parses,
calls one of them and prints.
"""

from __future__ import annotations

# JSON files as results folders keep them (plain, gzip or xz, told by their first bytes; a
# .json.xz / .json.gz name written compressed)
from sparsescope._compressed import read_json, write_json

# stored runs scored against the model as it is now (`sparsescope model score`), and the
# building blocks the research scripts in scripts/ use
from sparsescope.analyze.readings import (
    Reading,
    family_errors,
    l1_check_reading,
    memory_floor_reading,
    model_score,
    profile_check_reading,
    spmm_bounds_reading,
)
from sparsescope.analyze.score_family import family_comparison_markdown
from sparsescope.analyze.score_runs import (
    RunsScore,
    ScoredCase,
    blocktc_registers,
    read_scores,
    score_runs,
    suite_csr,
)
from sparsescope.api.analysis import (
    analyze_measurement,
    analyze_offline,
    analyze_workload,
    compare_analyses,
)
from sparsescope.api.devices import CeilingsOutput, gpu_specs, measure_ceilings
from sparsescope.api.kernels import KernelSass, list_kernels, sass_analysis
from sparsescope.api.matrices import (
    Catalogue,
    GeneratedMatrix,
    generate_matrix,
    generate_suite,
    load_matrix,
    matrix_catalogue,
    matrix_selection,
    matrix_stats,
    suite_matrix,
)
from sparsescope.api.models import (
    CaseFigures,
    ModelFigures,
    default_backends,
    model_figures,
    what_if_matrices,
)
from sparsescope.api.profiles import (
    ProfileOutput,
    ProfileSectionOutput,
    profile_case,
    profile_report,
    read_profile,
)
from sparsescope.api.renderings import sass_markdown
from sparsescope.api.reports import ReportOutput, report
from sparsescope.api.results import (
    CompactedFile,
    CompactSummary,
    Comparison,
    ReadmeOutput,
    ResultsTable,
    RunInfo,
    compact_results,
    compare_results,
    results_readme,
    show_results,
)
from sparsescope.api.runs import RunOutput, device_context, run
from sparsescope.api.sweeps import SweepOutput, sweep
from sparsescope.backends.registry import get_backend
from sparsescope.context import (
    DeviceContext,
    named_gpu,
    predict_call,
    predict_plan,
    rates_context,
    sass_refiner,
)
from sparsescope.errors import SparsescopeError
from sparsescope.hardware.specs import get_spec
from sparsescope.hardware.types import MeasuredCeilings
from sparsescope.matrices import load_suite
from sparsescope.matrices.io import read_matrix, write_matrix
from sparsescope.model.hot_set import hot_set_reach
from sparsescope.model.spmm import x_reuse_dram_floors
from sparsescope.progress import quiet_tqdm
from sparsescope.registry import is_dense, is_own, is_sparse_library, op_entry
from sparsescope.results.io import read_runset
from sparsescope.timing.cuda import time_cuda
from sparsescope.timing.types import TimingConfig
from sparsescope.whatif import WhatIf, WhatIfCase, expand_backends, load_matrices, what_if

__all__ = [
    # records
    "Catalogue", "CeilingsOutput", "DeviceContext", "GeneratedMatrix", "KernelSass",
    "ProfileOutput", "ProfileSectionOutput", "ReportOutput", "RunOutput", "SweepOutput",
    "WhatIf", "WhatIfCase", "CaseFigures", "ModelFigures", "Comparison", "ReadmeOutput",
    "ResultsTable", "RunInfo", "MeasuredCeilings", "CompactedFile", "CompactSummary",
    # run, sweep, report
    "device_context", "report", "run", "sweep",
    # devices, matrices, kernels, profiles, analysis
    "analyze_measurement", "analyze_offline", "analyze_workload", "compare_analyses",
    "generate_matrix", "generate_suite", "read_matrix", "write_matrix", "quiet_tqdm",
    "SparsescopeError", "gpu_specs", "list_kernels", "load_matrix",
    "matrix_catalogue", "matrix_selection", "matrix_stats", "measure_ceilings", "suite_matrix",
    "profile_case", "profile_report",
    "read_profile", "sass_analysis", "sass_markdown", "op_entry",
    # the what-if and the prediction context
    "expand_backends", "load_matrices", "named_gpu", "predict_call", "predict_plan",
    "rates_context", "sass_refiner", "what_if", "what_if_matrices", "default_backends",
    # the model's figures for a GPU; stored runs read back
    "model_figures", "show_results", "compare_results", "results_readme", "compact_results",
    # stored runs against the model, and the scripts' building blocks
    "Reading", "family_comparison_markdown", "family_errors", "l1_check_reading",
    "memory_floor_reading", "model_score", "profile_check_reading", "spmm_bounds_reading",
    "RunsScore", "ScoredCase", "blocktc_registers", "read_scores", "score_runs",
    "suite_csr", "get_backend", "get_spec", "load_suite", "hot_set_reach",
    "x_reuse_dram_floors", "is_dense", "is_own", "is_sparse_library", "read_runset", "time_cuda",
    "TimingConfig", "read_json", "write_json",
]
