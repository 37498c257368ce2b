"""Both notebooks execute top to bottom (with their own sanity asserts) in the venv's kernel."""

from __future__ import annotations

from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["01_ragas_scoring.ipynb", "02_chunking_experiments.ipynb"])
def test_notebook_executes(name: str) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")

    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), (
        f"{name}: clear the outputs before committing"
    )
    client = nbclient.NotebookClient(
        notebook,
        kernel_name="python3",  # jupyter_client starts it with this interpreter (sys.executable)
        timeout=240,
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    client.execute()
    errors = [
        out
        for cell in notebook.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]
    assert not errors, errors
