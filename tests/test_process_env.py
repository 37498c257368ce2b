"""Environment defaults of the ``rag`` process: set by the CLI callback, not on import."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from rag_app.cli.common import PROCESS_ENV_DEFAULTS

CODE = """
import json, os
from typer.testing import CliRunner
import rag_app.cli
seen = {"imported": {k: os.environ.get(k) for k in NAMES}}
CliRunner().invoke(rag_app.cli.app, ["docs", "--help"])
seen["invoked"] = {k: os.environ.get(k) for k in NAMES}
print(json.dumps(seen))
"""


def test_the_cli_sets_its_defaults_when_it_runs_and_keeps_explicit_values() -> None:
    names = sorted(PROCESS_ENV_DEFAULTS)
    env = {k: v for k, v in os.environ.items() if k not in PROCESS_ENV_DEFAULTS}
    env["TOKENIZERS_PARALLELISM"] = "true"  # set by the user: kept
    code = f"NAMES = {names!r}\n{CODE}"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["imported"] == {k: env.get(k) for k in names}  # importing writes nothing
    assert seen["invoked"] == PROCESS_ENV_DEFAULTS | {"TOKENIZERS_PARALLELISM": "true"}
