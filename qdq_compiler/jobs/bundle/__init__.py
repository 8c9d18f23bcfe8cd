"""Ahead-of-time deployment bundles: many op configurations x many targets, one verified directory.

``qdqc build --config bundle.toml --out dist/`` (or :func:`build_bundle`) compiles every entry of the
config (:mod:`.schema`) for every target into ``dist/``: one ``<entry>.<target>.vmfb`` each and a
``manifest.json`` (:mod:`.build`). :func:`load_bundle` verifies it and exposes each entry as a callable
with the raw op's keyword arguments (:mod:`.load`). How the ``cpu`` target's CPU is chosen and checked:
:mod:`qdq_compiler.targets.cpu`.
"""
from __future__ import annotations

from .build import BuildResult, build_bundle
from .load import Bundle, BundleEntry, compatibility, load_bundle, verify_bundle
from .schema import MANIFEST, SCHEMA, SCHEMA_VERSION, BundleConfig, Entry, parse_config
from .signature import function_signature

__all__ = ["build_bundle", "BuildResult", "load_bundle", "verify_bundle", "compatibility", "Bundle", "BundleEntry",
           "parse_config", "BundleConfig", "Entry", "function_signature", "MANIFEST", "SCHEMA", "SCHEMA_VERSION"]
