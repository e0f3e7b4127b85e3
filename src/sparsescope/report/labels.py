"""Human labels for the internal identifiers a report would otherwise show.

Records keep their identifiers (``limited_by="mlp_gain"``, ``ceilings.method["copy_bw_gb_s"]``,
``libraries["cuda_runtime"]``): they are the JSON a program reads. What a reader sees goes
through :func:`label`, which looks the identifier up in :data:`LABELS` and, for one the map
does not know yet, still never prints it raw (underscores become spaces). A name the reader
meets elsewhere as written -- a kernel, a file, a command-line value -- is shown as code
(:func:`code`), not relabelled. ``tests/report/test_labels.py`` renders reports and fails on a
snake_case token left outside code (:func:`leftover_identifiers`).
"""

from __future__ import annotations

import re

#: Internal identifier -> the words a reader sees.
LABELS: dict[str, str] = {
    # model.concurrency.DaePrediction.limited_by: what caps the DAE gain
    "mlp_gain": "doubled memory-level parallelism (2x)",
    "littles_law": "Little's-law ceiling",
    # hardware.types.MeasuredCeilings fields (and their ``method`` keys)
    "copy_bw_gb_s": "copy bandwidth",
    "read_bw_gb_s": "read bandwidth",
    "l2_bw_gb_s": "L2 bandwidth",
    "l2_write_bw_gb_s": "L2 write bandwidth",
    "dram_latency_ns": "DRAM latency",
    "l2_latency_ns": "L2 latency",
    "fp32_gflops": "FP32 throughput",
    "dram_gather_gsectors_s": "DRAM random gathers",
    "l2_gather_gsectors_s": "L2 random gathers",
    "launch_us": "empty kernel launch",
    "call_us": "timed call of one empty launch",
    "next_launch_us": "each further launch of a call",
    "pdl_launch_us": "PDL launch back to back",
    "flush_writeback_share": "L2 flush write-back share",
    # Provenance.libraries keys (backends' library_versions)
    "cuda_runtime": "CUDA runtime",
    "cuda_driver_api": "CUDA driver API",
    "torch_cuda": "CUDA of the PyTorch build",
    "gpu_backends": "GPU backends",
    "timing_stream": "timing stream",
    "index_dtype": "index type",
    "value_dtype": "value type",
    "x_order": "x layout",
    "x_strides": "x strides",
    # words of the runner's outcome reasons
    "rel_err": "relative error",
}

#: A snake_case token: lower-case words joined by underscores (``mlp_gain``, ``copy_bw_gb_s``).
SNAKE = re.compile(r"(?<![\w/.:\-`])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w/:\-`])")
#: Inline code spans, whose content is meant to be read as written.
_CODE = re.compile(r"`[^`\n]*`")


def label(identifier: str) -> str:
    """The reader's words for ``identifier`` (never the identifier with its underscores)."""
    return LABELS.get(identifier, identifier.replace("_", " "))


def humanize(text: str) -> str:
    """``text`` (a reason written by a lower stage) with each snake_case identifier outside
    code replaced by its :func:`label` (``rel_err 3.2e-02`` -> ``relative error 3.2e-02``)."""
    parts = re.split(r"(`[^`\n]*`)", text)
    return "".join(p if p.startswith("`") else SNAKE.sub(lambda m: label(m.group(0)), p)
                   for p in parts)


def params_text(params) -> str:
    """A case's parameters for a reader: ``rows selected 16, weights scalar`` (each name
    through :func:`label`; explicit lists, summarised elsewhere, left out), "" for none."""
    values = params.as_dict() if hasattr(params, "as_dict") else dict(params or {})
    return ", ".join(f"{label(name)} {value}" for name, value in values.items()
                     if not isinstance(value, tuple | list))


def code(name: str) -> str:
    """``name`` as an inline code span: a kernel, file or option value shown as written."""
    return f"`{name}`" if name and "`" not in name else name


def leftover_identifiers(text: str) -> list[str]:
    """The snake_case tokens of ``text`` (Markdown) outside inline code spans, code blocks and
    file paths, in order of appearance: identifiers no reader should have to decode."""
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    text = _CODE.sub(" ", text)
    text = re.sub(r"!?\[[^\]]*\]\([^)]*\)", " ", text)  # links and images: their target
    return [m.group(0) for m in SNAKE.finditer(text)]
