"""The suite runs on the installed wheel, and the wheel carries its typing files."""

from __future__ import annotations

import os
import sysconfig

import redlatch
import redlatch._native


def test_imported_from_site_packages_not_the_source_tree() -> None:
    purelib = os.path.realpath(sysconfig.get_paths()["purelib"])
    platlib = os.path.realpath(sysconfig.get_paths()["platlib"])
    here = os.path.realpath(redlatch.__file__)
    assert here.startswith(purelib) or here.startswith(platlib), here


def test_wheel_ships_stubs_and_marker() -> None:
    pkg = os.path.dirname(redlatch.__file__)
    assert os.path.isfile(os.path.join(pkg, "py.typed"))
    assert os.path.isfile(os.path.join(pkg, "_native.pyi"))
    assert ".abi3." in os.path.basename(redlatch._native.__file__)


def test_public_names() -> None:
    for n in redlatch.__all__:
        assert hasattr(redlatch, n)
    assert hasattr(redlatch.asyncio, "Client") and hasattr(redlatch.asyncio, "Lock")
