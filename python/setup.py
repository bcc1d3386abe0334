"""Builds the engine's WebAssembly module into the package.

`pip install ./python` and `pip wheel ./python` from a clone run
`go build` (Go 1.26 on PATH) for GOOS=wasip1 with the hostsqlite tag: the
module is the same file on every platform, so the wheel is pure Python
(py3-none-any) and installs with no Go, no compiler and no network.
AGENTSTATE_WASM=FILE uses a module built beforehand instead.

Then it compiles the module to this machine's code with wasmtime (a build
requirement, pyproject.toml) and writes the entry the package's run time
looks for into the user's cache (_cache.precompile): the first run maps it
in about 0.1 s instead of compiling for 17-37 s (measured at load 9-14 on 2 cores). A wheel built here and
installed elsewhere, or another wasmtime at run time, finds no entry and
compiles once, saying so.
"""

import importlib.util

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PKG = ("langgraph", "checkpoint", "agentstate")


class BuildWithEngine(build_py):
    def run(self):
        super().run()
        dest = Path(self.build_lib).resolve().joinpath(*PKG, "agentstate.wasm")
        dest.parent.mkdir(parents=True, exist_ok=True)
        prebuilt = os.environ.get("AGENTSTATE_WASM")
        if prebuilt:
            shutil.copyfile(prebuilt, dest)
        else:
            self.build_engine(dest)
        precompile(dest)

    def build_engine(self, dest):
        if not (REPO / "go.mod").exists() or not (REPO / "wasm" / "reactor").is_dir():
            raise SystemExit(
                "langgraph-checkpoint-agentstate: build from a clone of the agentstate repository "
                "(the engine's Go source is beside this folder), or set AGENTSTATE_WASM to a built module"
            )
        go = shutil.which("go")
        if go is None:
            raise SystemExit(
                "langgraph-checkpoint-agentstate: building the engine needs Go 1.26 on PATH "
                "(or AGENTSTATE_WASM=FILE, a module built with: GOOS=wasip1 GOARCH=wasm go build "
                "-buildmode=c-shared -tags hostsqlite -trimpath -ldflags='-s -w' -o FILE ./wasm/reactor)"
            )
        env = dict(os.environ, GOOS="wasip1", GOARCH="wasm", CGO_ENABLED="0")
        # pip shows this with -v; without it, only its "Building wheel" line.
        print("langgraph-checkpoint-agentstate: compiling the engine with go build "
              "(about 50 s the first time on 2 cores, seconds with Go's build cache)", flush=True)
        subprocess.run(
            [go, "build", "-buildmode=c-shared", "-tags", "hostsqlite", "-trimpath", "-ldflags=-s -w",
             "-o", str(dest), "./wasm/reactor"],
            cwd=REPO, env=env, check=True,
        )


def precompile(wasm):
    """The module compiled into the user's cache (see the docstring), with
    the wasmtime the package will run with: the one of the environment
    being installed into if it has one in range (pip keeps it), else the
    build's own (a fresh environment gets the same newest release). A
    build goes on without it: the run time compiles what it lacks."""
    cache_py = HERE / "src" / Path(*PKG) / "_cache.py"
    # -I: the target environment's own packages, not pip's build environment (PYTHONPATH).
    try:
        probe = subprocess.run(
            [sys.executable, "-I", "-c", "import importlib.metadata as m; print(m.version('wasmtime'))"],
            capture_output=True, text=True, timeout=120,
        )
        major = probe.stdout.strip().split(".")[0]
        if probe.returncode == 0 and major.isdigit() and 30 <= int(major) < 52:  # pyproject.toml's range
            subprocess.run([sys.executable, "-I", str(cache_py), str(wasm)], timeout=1800)
            return
    except (OSError, subprocess.SubprocessError) as e:
        print(f"langgraph-checkpoint-agentstate: the installed wasmtime could not compile the engine ({e})", flush=True)
    try:
        spec = importlib.util.spec_from_file_location("_agentstate_cache", cache_py)
        cache = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(cache)  # needs only wasmtime, not the package's other imports
    except Exception as e:  # noqa: BLE001 - no wasmtime (--no-build-isolation without it)
        print(f"langgraph-checkpoint-agentstate: not compiling the engine ahead ({type(e).__name__}: {e}); "
              "the first run compiles it", flush=True)
        return
    cache.precompile(wasm.read_bytes(), say=lambda line: print(line, flush=True))


setup(cmdclass={"build_py": BuildWithEngine})
