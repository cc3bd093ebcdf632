"""Builds fakekey: pure Python plus, where mypyc and a C compiler are at hand, the hot
modules of fakekey/compiled.py compiled from the same source (HACKING.md "Compiled
modules"). FAKEKEY_PURE=1 builds pure Python only; a failed compile falls back to it.
FAKEKEY_OPT_LEVEL sets the C compiler's optimization level (3 unless given)."""

import os
import runpy
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
compiled = runpy.run_path(str(ROOT / "fakekey" / "compiled.py"))
# the steps that build no code (an sdist, the metadata) need no compiling
BUILDS_CODE = not {"sdist", "egg_info", "dist_info"} & set(sys.argv[1:])
# `make build`: a module mypyc refuses, or a failed compile, is an error, not pure Python
STRICT = os.environ.get("FAKEKEY_BUILD_STRICT", "") not in ("", "0")


def extensions() -> list:
    if not BUILDS_CODE or os.environ.get(compiled["PURE_ENV"], "") not in ("", "0"):
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        print("fakekey: mypyc is not installed; building pure Python", file=sys.stderr)
        return []
    paths = [str(Path(compiled["source_path"](m)).relative_to(ROOT)) for m in compiled["MODULES"]]
    try:
        # one extension per module, so that they compile in parallel (OptionalBuildExt)
        # FAKEKEY_OPT_LEVEL: the C compiler's -O (0 compiles in half the time: tests/fakekey/test_packaging.py)
        opt_level = os.environ.get("FAKEKEY_OPT_LEVEL", "3")
        return mypycify(paths, opt_level=opt_level, debug_level="0", separate=True)
    except BaseException as err:  # noqa: BLE001 - a type error is a SystemExit: still installable
        if STRICT:
            raise
        print(f"fakekey: mypyc refused the modules ({err!r}); building pure Python", file=sys.stderr)
        return []


class OptionalBuildExt(build_ext):
    """Records what the compiled modules were built from (at import, a source that differs
    means pure Python); a compile that fails (no C compiler, say) leaves a pure build."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if self.parallel is None:
            self.parallel = os.cpu_count() or 1

    def run(self) -> None:
        if not self.extensions:
            return
        manifest = Path(self.get_ext_fullpath("fakekey.compiled")).parent / compiled["MANIFEST"].name
        try:
            super().run()
        except Exception as err:  # noqa: BLE001
            if STRICT:
                raise
            print(f"fakekey: compiling failed ({err!r}); building pure Python", file=sys.stderr)
            for output in self.get_outputs():
                Path(output).unlink(missing_ok=True)
            manifest.unlink(missing_ok=True)
            return
        manifest.write_text(compiled["manifest_text"]())


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
