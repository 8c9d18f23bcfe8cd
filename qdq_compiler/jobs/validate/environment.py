"""Where a validation run ran: the host CPU, the device behind each target, the IREE and NumPy versions and
the TensorFlow version the goldens came from. Cheap: no compile, one device query per available driver."""
from __future__ import annotations

import os
import platform
import sys

import numpy as np

from ... import iree_tools
from ... import semantics as SEM
from ... import targets as T
from .inputs import golden_reference, golden_tf_version

_CPU_DRIVERS = ("local-sync", "local-task")


def host_cpu() -> str:
    """The CPU's model name (/proc/cpuinfo), else what ``platform`` says."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith(("model name", "hardware", "processor\t: ")) and ":" in line:
                    name = line.split(":", 1)[1].strip()
                    if name and not name.isdigit():
                        return name
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def device_name(target: str) -> str:
    """The device artifacts of ``target`` run on here: the host CPU for the CPU drivers, else the names of
    the devices IREE's driver reports (``llvmpipe ...`` is Mesa's CPU Vulkan, not a GPU). Call only for an
    available target (the Vulkan driver must not load before ``Target.availability``)."""
    t = T.get(target)
    if t.driver in _CPU_DRIVERS:
        how = "VMVX interpreter" if t.backend == "vmvx" else f"{t.backend} code"
        return f"host CPU {host_cpu()} ({how}, {t.driver} driver)"
    try:
        import iree.runtime as rt
        names = [d.get("name") or d.get("path") or "?" for d in rt.get_driver(t.driver).query_available_devices()]
    except Exception as e:  # noqa: BLE001 - a report field, never a failure
        return f"unknown ({T.readable_iree_error(e)})"
    return "; ".join(names) or "no device listed"


def driver_detail(target: str, reason: str) -> str:
    """IREE's own text for why ``target``'s driver gave no device (the report keeps it; the console shows
    ``reason``, one readable line), or '' when the reason is not a driver error."""
    t = T.get(target)
    if not reason.startswith(f"no {t.driver} device"):
        return ""
    try:
        import iree.runtime as rt
        rt.get_device(t.driver)
    except Exception as e:  # noqa: BLE001 - the error being recorded
        return " ".join(str(e).split())
    return ""


def iree_versions() -> dict:
    """``iree_tools.iree_info()``: compiler and runtime versions, revisions, the tools used."""
    try:
        return dict(iree_tools.iree_info())
    except Exception as e:  # noqa: BLE001 - a report field; compiling already checked the tools
        return {"compiler_version": iree_tools.compiler_version(), "iree_info_error": f"{type(e).__name__}: {e}"}


def goldens_tf_versions(ops) -> dict[str, str]:
    """The TF version of each (op, semantics) golden file (``tf_version``), for the ones that exist; keyed
    by the op's name ("op@tf-xla" under a semantics other than tf-cpu)."""
    out = {}
    for op, sem in dict.fromkeys(ops):
        v = golden_tf_version(op, sem)
        if v:
            out[op if sem == SEM.DEFAULT else f"{op}@{sem}"] = v
    return out


def environment(run_on: list[str], skipped: dict[str, str]) -> dict:
    """The report's ``environment``: host, per-target devices, versions (goldens' TF added by the caller)."""
    devices = {t: device_name(t) for t in run_on}
    devices.update({t: f"none here ({why})" for t, why in skipped.items()})
    details = {t: d for t, why in skipped.items() if (d := driver_detail(t, why))}
    iree = iree_versions()
    return {"host_cpu": host_cpu(), "cpu_count": os.cpu_count(), "platform": platform.platform(),
            "python": sys.version.split()[0], "numpy": np.__version__, "devices": devices,
            "skipped_details": details, "iree": iree,
            "iree_compiler": iree.get("compiler_version"), "iree_runtime": iree.get("runtime_version")}


def golden_references(ops) -> list[str]:
    """Who wrote the golden files of these (op, semantics) pairs, each once, in the order met."""
    refs = (golden_reference(op, sem) for op, sem in dict.fromkeys(ops))
    return list(dict.fromkeys(r for r in refs if r))


def tf_version_text(versions: dict[str, str]) -> str:
    """'2.21.0' when every golden file says the same, else 'op: v, ...'; 'none' without goldens."""
    distinct = sorted(set(versions.values()))
    if not distinct:
        return "none (no golden files)"
    if len(distinct) == 1:
        return distinct[0]
    return ", ".join(f"{op}: {v}" for op, v in versions.items())
