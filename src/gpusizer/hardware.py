r"""Your own hardware: a catalogue GPU with fields overridden, or one MIG slice of it.

``modified(base, "memory=48GB,memory_bandwidth=1.2TB/s")`` is ``base`` with those fields replaced (a modded
RTX 4090 with 48 GB); ``modified(base, "mig=3g.40gb")`` is one Multi-Instance GPU slice of ``base``. The
result is a validated ``records.GPU`` whose ``id`` is the spec itself (``h100-sxm:mig=3g.40gb``), so that
``catalog.gpu(id)`` finds it again. Values are read by the record's own validators (``units.parse``:
``"48GB"``, ``"48 GiB"``, ``"1.2 TB/s"``); only the fields of ``OVERRIDABLE`` are accepted, and an unknown
one is refused naming the closest. Nothing here reads a file or runs code; ``catalog.gpu`` and
``catalog.gpu_with`` are the public entry points.

A MIG slice (``MIG_PROFILES``) takes its share of the whole GPU: memory capacity and L2 by its *fraction of
memory*, the dense rates by its *fraction of SMs* (the NVIDIA MIG user guide, "Supported MIG Profiles",
tables per product: A100 ``3g.20gb`` is 4/8 of the memory and 3/7 of the SMs). The guide gives no bandwidth
figure per profile; gpusizer assumes the memory bandwidth follows the memory fraction, because a memory
slice carries its own memory controllers (an assumption, stated in ``docs/own-hardware.md``). A slice
cannot join an NVLink domain (``scale_up_domain`` 1) and has no power limit of its own (``tdp`` None).

Deliberate omissions: compute instances inside a GPU instance (``2c.7g.40gb``) and media extensions
(``+me``: the same memory and SMs as the plain profile).
"""

from __future__ import annotations

import difflib
from fractions import Fraction
from typing import Any

from gpusizer.records import GPU, RATE_PRECISIONS

__all__ = ["MIG_GUIDE", "MIG_PROFILES", "OVERRIDABLE", "mig_profiles", "mig_slice", "modified", "parse_spec",
           "validated"]

MIG_GUIDE = "https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html"
"""NVIDIA Multi-Instance GPU User Guide, "Supported MIG Profiles" (checked 2026-12-03)."""

#: Fields a spec may override: GPU record fields, and the dense rates by precision (``bf16=...``).
OVERRIDABLE: tuple[str, ...] = ("name", "memory", "memory_usable", "memory_bandwidth", "l2_cache", "tdp",
                                "scale_up_domain", "native_fp8", "native_fp4", *RATE_PRECISIONS, "fp16_acc16",
                                "mig")

# (compute slices, memory slices) of each profile shape, out of 7 and 8 (GA100, GH100, GB100) or 4 and 4
# (GB202, RTX PRO 6000): the guide's "Fraction of SMs" and "Fraction of Memory" columns.
_SEVEN = {"1g": (1, 1), "1g.2x": (1, 2), "2g": (2, 2), "3g": (3, 4), "4g": (4, 4), "7g": (7, 8)}
_FOUR = {"1g": (1, 1), "2g": (2, 2), "4g": (4, 4)}


def _names(shapes: dict[str, tuple[int, int]], sizes: dict[str, str], slices: tuple[int, int]
           ) -> dict[str, tuple[Fraction, Fraction]]:
    return {f"{shape.split('.')[0]}.{sizes[shape]}gb": (Fraction(c, slices[0]), Fraction(m, slices[1]))
            for shape, (c, m) in shapes.items()}


_A100_40 = _names(_SEVEN, {"1g": "5", "1g.2x": "10", "2g": "10", "3g": "20", "4g": "20", "7g": "40"}, (7, 8))
_80 = _names(_SEVEN, {"1g": "10", "1g.2x": "20", "2g": "20", "3g": "40", "4g": "40", "7g": "80"}, (7, 8))
_94 = _names(_SEVEN, {"1g": "12", "1g.2x": "24", "2g": "24", "3g": "47", "4g": "47", "7g": "94"}, (7, 8))
_141 = _names(_SEVEN, {"1g": "18", "1g.2x": "35", "2g": "35", "3g": "71", "4g": "71", "7g": "141"}, (7, 8))
_180 = _names(_SEVEN, {"1g": "23", "1g.2x": "45", "2g": "45", "3g": "90", "4g": "90", "7g": "180"}, (7, 8))
_96 = _names(_FOUR, {"1g": "24", "2g": "48", "4g": "96"}, (4, 4))

#: MIG profiles by catalogue GPU id: profile name -> (fraction of SMs, fraction of memory), from the
#: guide's tables (A100-SXM4-40GB, A100 80GB, H100 80GB and 94GB, H200 141GB, B200 180GB, RTX PRO 6000
#: Blackwell 96GB). GPUs whose profile table the guide does not publish (GB200, B300, H20, GH200) have none.
MIG_PROFILES: dict[str, dict[str, tuple[Fraction, Fraction]]] = {
    "a100-40gb-sxm": _A100_40, "a100-80gb-sxm": _80, "a100-80gb-pcie": _80, "h100-sxm": _80, "h100-pcie": _80,
    "h100-nvl": _94, "h200-sxm": _141, "h200-nvl": _141, "b200": _180, "rtx-pro-6000-bw-ws": _96,
    "rtx-pro-6000-bw-server": _96,
}


def mig_profiles(gpu_id: str) -> tuple[str, ...]:
    """The MIG profile names of a catalogue GPU (``()`` when the guide publishes none for it).

    >>> mig_profiles("h100-sxm")
    ('1g.10gb', '1g.20gb', '2g.20gb', '3g.40gb', '4g.40gb', '7g.80gb')
    """
    return tuple(MIG_PROFILES.get(gpu_id, {}))


def parse_spec(spec: str) -> dict[str, str]:
    """``"memory=48GB, tdp=450W"`` as ``{"memory": "48GB", "tdp": "450W"}``; names checked against ``OVERRIDABLE``.

    Fields are separated by ``,`` or ``+`` (``+`` inside comma-separated lists of GPUs: ``--gpus
    h100,rtx-4090:memory=48GB+tdp=450W``).

    Raises
    ------
    ValueError
        An item without ``=``, an empty value, a field named twice, or an unknown field (with the closest
        names).

    >>> parse_spec("memory=48GB,memory_bandwidth=1.1TB/s")
    {'memory': '48GB', 'memory_bandwidth': '1.1TB/s'}
    """
    out: dict[str, str] = {}
    for item in (part.strip() for part in spec.replace("+", ",").split(",")):
        key, sep, value = item.partition("=")
        key = key.strip().lower().replace("-", "_")
        if not sep or not key or not value.strip():
            raise ValueError(f"gpu override {item!r}: write field=value, e.g. memory=48GB")
        if key not in OVERRIDABLE:
            near = difflib.get_close_matches(key, OVERRIDABLE, n=3, cutoff=0.5)
            hint = f"did you mean {', '.join(near)}?" if near else f"known: {', '.join(OVERRIDABLE)}"
            raise ValueError(f"gpu override: unknown field {key!r}; {hint}")
        if key in out:
            raise ValueError(f"gpu override: field {key!r} given twice")
        out[key] = value.strip()
    return out


def validated(data: dict[str, Any], where: str) -> GPU:
    """``data`` validated as a ``GPU``; a bad field raises ``ValueError("WHERE: field: message")`` in one line."""
    try:
        return GPU.model_validate(data)
    except ValueError as error:  # pydantic's ValidationError: name each field
        errors: list[Any] = getattr(error, "errors", list)()
        fields = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in errors) or str(error)
        raise ValueError(f"{where}: {fields}") from None


def mig_slice(base: GPU, profile: str) -> GPU:
    r"""One MIG slice of ``base``: memory, L2 and bandwidth times its memory fraction, rates times its SM fraction.

    .. math:: M' = f_m M, \quad L_2' = f_m L_2, \quad B' = f_m B \ (\text{assumed}), \quad R_p' = f_c R_p

    Raises
    ------
    KeyError
        ``base`` has no published MIG profiles, or ``profile`` is not one of them (naming those it has).

    References
    ----------
    NVIDIA Multi-Instance GPU User Guide, "Supported MIG Profiles" (``MIG_GUIDE``).

    Examples
    --------
    >>> from gpusizer import catalog
    >>> s = mig_slice(catalog.gpu("h100-sxm"), "3g.40gb")
    >>> s.memory, round(s.dense.bf16 / catalog.gpu("h100-sxm").dense.bf16, 4)
    (40000000000.0, 0.4286)
    """
    table = MIG_PROFILES.get(base.id.partition(":")[0])
    if not table:
        known = ", ".join(MIG_PROFILES)
        raise KeyError(f"gpu {base.id!r} has no MIG profiles in the NVIDIA MIG user guide's tables (known: {known})")
    key = profile.strip().lower().removeprefix("mig-").removesuffix("+me")
    if key not in table:
        raise KeyError(f"MIG profile {profile!r} is not one of {base.id}'s: {', '.join(table)}")
    compute, memory = (float(f) for f in table[key])
    data = base.model_dump()
    rates = {k: (None if v is None else v * compute) for k, v in data["dense"].items()}
    scaled = {k: (None if data[k] is None else data[k] * memory) for k in ("memory", "memory_usable", "l2_cache")}
    data.update(scaled, dense=rates, memory_bandwidth=data["memory_bandwidth"] * memory, scale_up_domain=1, tdp=None,
                mig=False, derived_fields=(*data["derived_fields"], "memory", "memory_bandwidth", "dense", "l2_cache"),
                source=(*data["source"], MIG_GUIDE),
                notes=f"MIG {key} slice of {base.name}: {table[key][1]} of the memory and {table[key][0]} of the "
                      f"SMs (NVIDIA MIG user guide); bandwidth assumed to follow the memory fraction. {data['notes']}")
    return validated(data, f"MIG profile {key!r}")


def modified(base: GPU, spec: str, gpu_id: str | None = None) -> GPU:
    """``base`` with the fields of ``spec`` (``parse_spec``) replaced; ``mig=PROFILE`` first takes a MIG slice.

    Memory set without ``memory_usable`` drops the driver-reported figure (the stated memory is then the
    capacity). The record's ``id`` is ``gpu_id`` (default ``base.id:spec``), its name says what changed.

    Examples
    --------
    >>> from gpusizer import catalog
    >>> g = modified(catalog.gpu("rtx-4090"), "memory=48GB")
    >>> g.id, g.capacity, g.memory_bandwidth == catalog.gpu("rtx-4090").memory_bandwidth
    ('rtx-4090:memory=48GB', 48000000000.0, True)
    """
    fields = parse_spec(spec)
    gpu_id = f"{base.id}:{spec}" if gpu_id is None else gpu_id
    if "mig" in fields:
        base = mig_slice(base, fields.pop("mig"))
    data = base.model_dump()
    if "memory" in fields and "memory_usable" not in fields:
        data["memory_usable"] = None
    dense = dict(data["dense"])
    for key, value in fields.items():
        if key in dense:
            dense[key] = value
        else:
            data[key] = value
    data.update(id=gpu_id, dense=dense, aliases=(), name=fields.get("name", f"{base.name} ({spec})"),
                derived_fields=(*data["derived_fields"], *(k for k in fields if k != "name")),
                source=(*data["source"], f"user override {spec}"))
    return validated(data, f"gpu override {spec!r}")
