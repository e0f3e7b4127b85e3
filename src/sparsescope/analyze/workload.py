"""What ``sparsescope analyze`` measures: a workload.

Two kinds:

* **A Python callable** ``module:function`` (or ``path/to/file.py:function``). Each call launches
  the GPU work on the current stream and returns the output (a CuPy array, a torch tensor, a
  NumPy array, or a tuple of them; None when there is nothing to check). Inputs are built
  once, outside the call (the module caches them), so the call is what gets timed.
  Metadata is attached with :func:`describe` (``ideal_bytes``, ``ideal_flops``, ``reference``,
  ``cuda_source``, ``kernel``, ``addresses``, ``inputs``, ``library``, ``tolerance``) and can be
  overridden on the command line.
* **A CUDA source and a launch spec**: ``--cuda FILE.cu --kernel NAME --grid G --block B
  --args SPEC``, compiled with CuPy's ``RawModule`` when measured. ``SPEC`` declares every
  kernel argument, ``;``-separated, in order::

      n:i32=4096; x:f32[n]=rand; col:i32[n*16]=randint(0,n); rp:i32[n+1]=arange(0,16);
      y:f32[n]=zeros!out

  ``name:type=value`` is a scalar; ``name:type[count]=init`` an array of ``count`` elements
  (an integer expression over earlier scalars) initialised by ``zeros``, ``ones``, ``rand``
  (uniform [0, 1)), ``randn``, ``sorted`` (sorted uniform), ``arange(start,step)``,
  ``randint(lo,hi)`` or ``full(v)``; ``!out`` marks an output. Types: ``i32 i64 u32 f16 bf16
  f32 f64``. The inferred ideal bytes are every input array read once plus every output written
  once. Grid and block are integer expressions over the scalars (``(n+255)//256``, ``64,8``).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import operator
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sparsescope.errors import UsageError

#: Type name -> (numpy storage dtype, bytes per element). bf16 is stored as its uint16 bits.
DTYPES = {"i32": ("int32", 4), "i64": ("int64", 8), "u32": ("uint32", 4), "f16": ("float16", 2),
          "bf16": ("uint16", 2), "f32": ("float32", 4), "f64": ("float64", 8)}
INITS = ("zeros", "ones", "rand", "randn", "sorted", "arange", "randint", "full")
_ITEM = re.compile(r"^\s*(?P<name>[A-Za-z_]\w*)\s*:\s*(?P<type>\w+)\s*"
                   r"(?:\[(?P<count>[^\]]+)\])?\s*=\s*(?P<init>.+?)\s*(?P<out>!out)?\s*$")
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}


def eval_int(expr: str, env: dict[str, int]) -> int:
    """An integer expression of literals, names in ``env``, ``+ - * // % **`` and parentheses
    (true division is refused: a launch dimension must be exact)."""
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as exc:
        raise UsageError(f"bad expression {expr!r}: {exc.msg}") from None

    def ev(node) -> int:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in env:
                raise UsageError(f"expression {expr!r}: unknown name {node.id!r} (known: "
                                 f"{', '.join(env) or 'none'})")
            return int(env[node.id])
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return int(_OPS[type(node.op)](ev(node.left), ev(node.right)))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        raise UsageError(f"expression {expr!r}: only integers, names and + - * // % ** allowed")

    return ev(tree)


def eval_dims(text: str, env: dict[str, int]) -> tuple[int, ...]:
    """``"(n+255)//256"`` or ``"64,8"`` -> a 1-3 element tuple of positive integers."""
    parts = [p for p in _split_top(text) if p.strip()]
    dims = tuple(eval_int(p, env) for p in parts)
    if not 1 <= len(dims) <= 3 or any(d < 1 for d in dims):
        raise UsageError(f"launch dimensions {text!r} must be 1-3 positive integers, got {dims}")
    return dims


def _split_top(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return out + [cur]


@dataclass(frozen=True)
class ArgSpec:
    """One kernel argument of a launch spec."""

    name: str
    type: str
    count: str | None
    """Element-count expression of an array; None for a scalar."""
    init: str
    """Scalar value, or the array initialiser (``rand``, ``arange(0,16)``)."""
    output: bool = False

    @property
    def itemsize(self) -> int:
        return DTYPES[self.type][1]


def parse_args_spec(text: str) -> tuple[ArgSpec, ...]:
    """Parse ``--args`` (grammar in the module docstring)."""
    specs = []
    for k, item in enumerate(x for x in text.split(";") if x.strip()):
        m = _ITEM.match(item)
        if not m:
            raise UsageError(f"--args item {k + 1} {item.strip()!r}: expected name:type=value or "
                             "name:type[count]=init[!out]")
        typ = m.group("type")
        if typ not in DTYPES:
            raise UsageError(f"--args item {m.group('name')!r}: unknown type {typ!r}; known: "
                             f"{', '.join(DTYPES)}")
        init = m.group("init")
        if m.group("count") is not None and init.split("(")[0].strip() not in INITS:
            raise UsageError(f"--args item {m.group('name')!r}: unknown initialiser {init!r}; "
                             f"known: {', '.join(INITS)}")
        if m.group("count") is None and m.group("out"):
            raise UsageError(f"--args item {m.group('name')!r}: a scalar cannot be an output")
        specs.append(ArgSpec(m.group("name"), typ, m.group("count"), init, bool(m.group("out"))))
    if not specs:
        raise UsageError("--args is empty")
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise UsageError(f"--args names repeat: {', '.join(names)}")
    return tuple(specs)


def scalar_env(specs: tuple[ArgSpec, ...]) -> dict[str, int]:
    """Integer scalars by name (for counts, grid and block expressions)."""
    env: dict[str, int] = {}
    for s in specs:
        if s.count is None and s.type in ("i32", "i64", "u32"):
            env[s.name] = eval_int(s.init, env)
    return env


def array_counts(specs: tuple[ArgSpec, ...]) -> dict[str, int]:
    env = scalar_env(specs)
    return {s.name: eval_int(s.count, env) for s in specs if s.count is not None}


def inferred_bytes(specs: tuple[ArgSpec, ...]) -> int:
    """Ideal bytes of a launch spec: every input array read once, every output written once
    (``sum(count x itemsize)`` over the arrays)."""
    counts = array_counts(specs)
    return sum(counts[s.name] * s.itemsize for s in specs if s.count is not None)


def _float_to_bf16_bits(a: np.ndarray) -> np.ndarray:
    """Round-to-nearest-even float32 -> bfloat16 bit patterns (uint16)."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    rounded = u + 0x7FFF + ((u >> 16) & 1)
    return (rounded >> 16).astype(np.uint16)


def bf16_bits_to_float(bits: np.ndarray) -> np.ndarray:
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def host_arrays(specs: tuple[ArgSpec, ...], seed: int = 0) -> dict[str, object]:
    """NumPy values of every argument (scalars as NumPy scalars), reproducible from ``seed``."""
    rng = np.random.default_rng(seed)
    env = scalar_env(specs)
    out: dict[str, object] = {}
    for s in specs:
        storage = DTYPES[s.type][0]
        if s.count is None:
            value = float(s.init) if s.type.startswith("f") else eval_int(s.init, env)
            out[s.name] = np.dtype(storage if s.type != "bf16" else "float32").type(value)
            continue
        n = eval_int(s.count, env)
        kind, _, rest = s.init.partition("(")
        args = [a for a in rest.rstrip(")").split(",") if a.strip()]
        kind = kind.strip()
        if kind in ("zeros", "ones"):
            values = np.zeros(n) if kind == "zeros" else np.ones(n)
        elif kind == "rand":
            values = rng.random(n)
        elif kind == "randn":
            values = rng.standard_normal(n)
        elif kind == "sorted":
            values = np.sort(rng.random(n))
        elif kind == "full":
            values = np.full(n, float(args[0]))
        elif kind == "arange":
            start = eval_int(args[0], env) if args else 0
            step = eval_int(args[1], env) if len(args) > 1 else 1
            values = start + step * np.arange(n, dtype=np.int64)
        else:  # randint
            lo, hi = (eval_int(a, env) for a in args[:2])
            values = rng.integers(lo, hi, n)
        out[s.name] = _float_to_bf16_bits(values) if s.type == "bf16" else \
            np.asarray(values).astype(storage)
    return out


@dataclass(frozen=True)
class CudaLaunch:
    """A CUDA kernel and how to launch it."""

    source: Path
    kernel: str
    """Function name, or a name expression for a template (``csr_vector<float, int, 8>``)."""
    grid: str
    block: str
    args: tuple[ArgSpec, ...]
    dynamic_shared_bytes: int = 0
    options: tuple[str, ...] = ("-std=c++17",)

    def dims(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        env = scalar_env(self.args)
        return eval_dims(self.grid, env), eval_dims(self.block, env)


@dataclass(frozen=True)
class Workload:
    """A workload to analyse: which code, its reference, its ideal bytes and flops."""

    name: str
    version: str
    kind: str
    """``callable`` or ``cuda``."""
    target: str
    """``module:function`` or the ``.cu`` path."""
    reference: str | None = None
    ideal_bytes: int | None = None
    ideal_flops: int | None = None
    bytes_source: str = "none"
    cuda_source: Path | None = None
    """CUDA source of the kernels, for SASS analysis (callables may name one)."""
    kernel: str | None = None
    """Regular expression of the kernels to profile (None: every kernel the call launches)."""
    addresses: tuple[str, ...] = ()
    library: str | None = None
    """``torch`` or ``cupy``: whose events time it (None: whichever the call uses)."""
    tolerance: float | None = None
    launch: CudaLaunch | None = None
    extra: dict = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict:
        """JSON-ready form (what the ncu target program receives)."""
        d = {k: getattr(self, k) for k in ("name", "version", "kind", "target", "reference",
                                           "ideal_bytes", "ideal_flops", "bytes_source",
                                           "kernel", "library", "tolerance")}
        d["addresses"] = list(self.addresses)
        d["cuda_source"] = str(self.cuda_source) if self.cuda_source else None
        if self.launch is not None:
            L = self.launch
            d["launch"] = {"source": str(L.source), "kernel": L.kernel, "grid": L.grid,
                           "block": L.block, "args": ";".join(
                               f"{a.name}:{a.type}" + (f"[{a.count}]" if a.count else "") +
                               f"={a.init}" + ("!out" if a.output else "") for a in L.args),
                           "dynamic_shared_bytes": L.dynamic_shared_bytes,
                           "options": list(L.options)}
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Workload:
        launch = None
        if d.get("launch"):
            L = d["launch"]
            launch = CudaLaunch(Path(L["source"]), L["kernel"], L["grid"], L["block"],
                                parse_args_spec(L["args"]), L.get("dynamic_shared_bytes", 0),
                                tuple(L.get("options", ())))
        return cls(d["name"], d.get("version", ""), d["kind"], d["target"], d.get("reference"),
                   d.get("ideal_bytes"), d.get("ideal_flops"), d.get("bytes_source", "none"),
                   Path(d["cuda_source"]) if d.get("cuda_source") else None, d.get("kernel"),
                   tuple(d.get("addresses", ())), d.get("library"), d.get("tolerance"), launch)


def describe(**meta) -> Callable:
    """Decorator attaching workload metadata to a callable (keys: ``ideal_bytes``,
    ``ideal_flops`` (int or a zero-argument callable), ``reference``, ``cuda_source``,
    ``kernel``, ``addresses``, ``inputs``, ``library``, ``tolerance``, ``name``, ``version``)."""
    known = {"ideal_bytes", "ideal_flops", "reference", "cuda_source", "kernel", "addresses",
             "inputs", "library", "tolerance", "name", "version"}
    bad = sorted(set(meta) - known)
    if bad:
        raise UsageError(f"describe(): unknown key(s) {', '.join(bad)}; known: "
                         f"{', '.join(sorted(known))}")

    def wrap(fn):
        fn.__sparsescope__ = dict(meta)
        return fn

    return wrap


def resolve_callable(spec: str) -> Callable:
    """``package.module:function`` or ``path/to/file.py:function`` -> the function."""
    if ":" not in spec:
        raise UsageError(f"{spec!r}: expected module:function or file.py:function")
    mod_name, _, attr = spec.rpartition(":")
    if mod_name.endswith(".py"):
        path = Path(mod_name).resolve()
        if not path.is_file():
            raise UsageError(f"{spec!r}: no such file {path}")
        name = f"sparsescope_workload_{path.stem}"
        if name in sys.modules:
            module = sys.modules[name]
        else:
            if str(path.parent) not in sys.path:
                sys.path.insert(0, str(path.parent))
            spec_obj = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec_obj)
            sys.modules[name] = module
            spec_obj.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(mod_name)
        except ImportError as exc:
            raise UsageError(f"{spec!r}: cannot import {mod_name!r} ({exc})") from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise UsageError(f"{spec!r}: {mod_name} has no callable {attr!r}")
    return fn


def _maybe_call(v):
    return v() if callable(v) else v


def callable_workload(spec: str, *, reference: str | None = None, ideal_bytes: int | None = None,
                      ideal_flops: int | None = None, kernel: str | None = None,
                      version: str | None = None, addresses: tuple[str, ...] = ()) -> Workload:
    """A callable workload, its :func:`describe` metadata merged with the arguments (arguments
    win). Ideal bytes not declared are inferred when measured (inputs + output)."""
    mod_part, _, attr = spec.rpartition(":")
    if mod_part.endswith(".py"):  # absolute, so the ncu target program finds it from anywhere
        spec = f"{Path(mod_part).resolve()}:{attr}"
    fn = resolve_callable(spec)
    meta = getattr(fn, "__sparsescope__", {})
    src = meta.get("cuda_source")
    if src is not None and not Path(src).is_absolute():
        src = Path(sys.modules[fn.__module__].__file__).parent / src
    declared = ideal_bytes if ideal_bytes is not None else _maybe_call(meta.get("ideal_bytes"))
    return Workload(meta.get("name") or spec.rpartition(":")[2], version or meta.get("version")
                    or spec.rpartition(":")[2], "callable", spec,
                    reference or meta.get("reference"), declared,
                    ideal_flops if ideal_flops is not None else
                    _maybe_call(meta.get("ideal_flops")),
                    "declared" if declared is not None else "none", Path(src) if src else None,
                    kernel or meta.get("kernel"), tuple(addresses or meta.get("addresses", ())),
                    meta.get("library"), meta.get("tolerance"))


def cuda_workload(source: str | Path, kernel: str, grid: str, block: str, args: str, *,
                  reference: str | None = None, ideal_bytes: int | None = None,
                  ideal_flops: int | None = None, dynamic_shared_bytes: int = 0,
                  name: str | None = None, version: str | None = None,
                  addresses: tuple[str, ...] = ()) -> Workload:
    """A CUDA-source workload; ideal bytes inferred from the argument arrays unless given."""
    path = Path(source)
    if not path.is_file():
        raise UsageError(f"--cuda {source}: no such file")
    specs = parse_args_spec(args)
    launch = CudaLaunch(path, kernel, grid, block, specs, dynamic_shared_bytes)
    launch.dims()  # fail early on a bad grid or block
    nbytes, how = (ideal_bytes, "declared") if ideal_bytes is not None else \
        (inferred_bytes(specs), "inferred (argument arrays read/written once)")
    base = kernel.split("<")[0]
    return Workload(name or path.stem, version or base, "cuda", str(path), reference, nbytes,
                    ideal_flops, how, path, re.escape(base), tuple(addresses), "cupy", None,
                    launch)
