"""cmake --install puts the package under the prefix, where it finds the installed reader."""
import glob
import os
import shutil
import subprocess
import sys

import pytest

from conftest import BUILD, binary


def test_cmake_install_installs_the_package(tmp_path, monkeypatch, one_rank):
    if shutil.which("cmake") is None:
        pytest.skip("no cmake")
    binary("grain-trace-read")
    prefix = tmp_path / "prefix"
    # The install scripts of the reader's and the package's folders (a whole cmake --install
    # needs every target built).
    for part in ("instrumentation", "python"):
        p = subprocess.run(["cmake", "-DCMAKE_INSTALL_PREFIX=%s" % prefix, "-P",
                            os.path.join(BUILD, part, "cmake_install.cmake")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert p.returncode == 0, p.stdout
    inits = glob.glob(str(prefix / "lib" / "python3*" / "*-packages" / "grain_analysis" /
                          "__init__.py"))
    assert len(inits) == 1, p.stdout
    site = os.path.dirname(os.path.dirname(inits[0]))
    monkeypatch.delenv("GRAIN_TRACE_READER")
    code = ("import grain_analysis as ga, sys; print(ga.__file__); print(ga.find_reader()); "
            "print(len(ga.read_trace(sys.argv[1]).tasks))")
    r = subprocess.run([sys.executable, "-c", code, one_rank["dir"]], cwd=str(tmp_path),
                       env=dict(os.environ, PYTHONPATH=site, PATH="/usr/bin:/bin"),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert r.returncode == 0, r.stdout
    lines = r.stdout.splitlines()
    assert lines[0].startswith(site)
    assert lines[1] == str(prefix / "bin" / "grain-trace-read")
    assert int(lines[2]) > 0
