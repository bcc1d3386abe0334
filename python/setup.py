"""Builds the engine's WebAssembly module into the package.

`pip install ./python` and `pip wheel ./python` from a clone run
`go build` (Go 1.26 on PATH) for GOOS=wasip1 with the hostsqlite tag: the
module is the same file on every platform, so the wheel is pure Python
(py3-none-any) and installs with no Go, no compiler and no network.
AGENTSTATE_WASM=FILE uses a module built beforehand instead.
"""

import os
import shutil
import subprocess
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
            return
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


setup(cmdclass={"build_py": BuildWithEngine})
