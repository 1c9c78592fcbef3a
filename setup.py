"""The build hook: a wheel or sdist of Sundown is complete by itself.

While building, the gettext catalogs are compiled (.po to .mo, with Babel) and
the files that live beside ``app/`` in the source tree (templates, static
files, migrations, alembic.ini, gunicorn.conf.py) are copied into the package
as ``app/_files/``, where ``app.core.paths`` finds them once installed. Everything
else about the package is in pyproject.toml.
"""

import shutil
from pathlib import Path

from babel.messages.frontend import compile_catalog
from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
BESIDE_APP = ["templates", "static", "migrations", "alembic.ini", "gunicorn.conf.py"]
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc")


class BuildWithFiles(build_py):
    """build_py, then the compiled catalogs and the files beside app/ into the build."""

    def run(self):
        super().run()
        target = Path(self.build_lib) / "app"
        compile_catalogs(HERE / "app" / "translations", target / "translations")
        copy_beside_app(target / "_files")


def compile_catalogs(source: Path, target: Path) -> None:
    """Compile every messages.po under ``source`` to a messages.mo under ``target``."""
    for po in sorted(source.glob("*/LC_MESSAGES/messages.po")):
        mo = target / po.relative_to(source).with_suffix(".mo")
        mo.parent.mkdir(parents=True, exist_ok=True)
        command = compile_catalog()
        command.input_file, command.output_file, command.locale = str(po), str(mo), po.parent.parent.name
        command.domain, command.directory, command.use_fuzzy, command.statistics = "messages", None, False, False
        command.finalize_options()
        if command.run():
            raise SystemExit(f"{po}: could not be compiled")


def copy_beside_app(target: Path) -> None:
    """Copy templates/, static/, migrations/ and the two settings files into ``target``."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for name in BESIDE_APP:
        source = HERE / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=IGNORED)
        else:
            shutil.copy2(source, target / name)


setup(cmdclass={"build_py": BuildWithFiles})
