"""👎 → `rag feedback export` → `rag eval` fails on the rejected answer, and passes after an
annotation (issue 68's done-when): the question is then answered with the annotation. Also
`rag annotations list/add/edit/delete` and the annotation cases the export adds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.eval.test_feedback_loop import LEAVE, STOCK, rag, thumbs_down


def evaluate(kb: Path, cases: Path) -> list[dict[str, Any]]:
    run = rag("eval", str(cases), "--kb", str(kb), "--json", "-")
    assert run.exit_code == 0, run.output
    records: list[dict[str, Any]] = json.loads(run.stdout)["records"]
    return records


def test_a_thumbs_down_fails_until_an_annotation_answers_it(kb_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "休假.md").write_text(LEAVE.format(days="五天"), encoding="utf-8")
    assert rag("ingest", str(tmp_path / "休假.md"), "--kb", str(kb_dir)).exit_code == 0
    feedback_id = thumbs_down(kb_dir, "年假有几天？", "数字不对，应为十天")
    assert rag("feedback", "correct", str(feedback_id), "-a", "十天", "--kb", str(kb_dir)).exit_code == 0  # fmt: skip
    cases = tmp_path / "fix.jsonl"
    assert rag("feedback", "export", str(cases), "--kb", str(kb_dir)).exit_code == 0
    (rec,) = evaluate(kb_dir, cases)
    assert rec["passed"] is False and rec["fail_reason"] == "rejected answer came back"

    added = rag("annotations", "add", "年假有几天？", "-a", "年假为十天。", "--author", "王审核",
                "--kb", str(kb_dir), "--json")  # fmt: skip
    assert added.exit_code == 0, added.output
    annotation = json.loads(added.stdout)
    (rec,) = evaluate(kb_dir, cases)  # the same file: the question now gets the annotation
    assert rec["passed"] is True and rec["rejected_back"] is False, rec
    assert rec["answer"].startswith("年假为十天。")
    shown = rag(
        "ask", "请问年假有几天", "--kb", str(kb_dir)
    )  # a rewording: marked as the annotation
    assert shown.exit_code == 0 and "年假为十天。" in shown.output
    assert f"人工标注 #{annotation['annotation_id']} · 王审核" in shown.output

    # the export now holds the annotation's own case too, which passes
    assert rag("feedback", "export", str(cases), "--kb", str(kb_dir)).exit_code == 0
    lines = [json.loads(line) for line in cases.read_text(encoding="utf-8").splitlines()]
    assert [c["id"] for c in lines] == [f"feedback-{feedback_id}", f"annotation-{annotation['annotation_id']}"]  # fmt: skip
    assert lines[1]["answers"] == ["年假为十天。"] and lines[1]["answerable"] is True
    assert all(r["passed"] for r in evaluate(kb_dir, cases))

    # edited, then deleted: the documents answer again, and the 👎 case fails again
    edit = rag("annotations", "edit", str(annotation["annotation_id"]), "-a", "年假为十五天。",
               "--kb", str(kb_dir))  # fmt: skip
    assert edit.exit_code == 0, edit.output
    listed = json.loads(rag("annotations", "list", "--kb", str(kb_dir), "--json").stdout)
    assert [(a["answer"], a["author"]) for a in listed] == [("年假为十五天。", "王审核")]
    human = rag("annotations", "list", "--kb", str(kb_dir))
    assert "#1 (default, whole tenant) 年假有几天？" in human.output and "王审核" in human.output
    assert rag("annotations", "delete", str(annotation["annotation_id"]), "--kb", str(kb_dir)).exit_code == 0  # fmt: skip
    assert rag("annotations", "delete", "99", "--kb", str(kb_dir)).exit_code == 1
    (rec,) = [r for r in evaluate(kb_dir, cases) if r["id"].startswith("feedback")]
    assert rec["passed"] is False


def test_a_refusal_annotation_makes_a_should_refuse_case_pass(kb_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "库存.md").write_text(STOCK, encoding="utf-8")
    assert rag("ingest", str(tmp_path / "库存.md"), "--kb", str(kb_dir)).exit_code == 0
    thumbs_down(kb_dir, "SKU-1024的库存是多少？", "该商品已下架，应该拒答")
    cases = tmp_path / "fix.jsonl"
    assert rag("feedback", "export", str(cases), "--kb", str(kb_dir)).exit_code == 0
    (rec,) = evaluate(kb_dir, cases)
    assert rec["passed"] is False and "80" in rec["answer"]

    assert rag("annotations", "add", "SKU-1024的库存是多少？", "--refuse", "--kb", str(kb_dir)).exit_code == 0  # fmt: skip
    (rec,) = evaluate(kb_dir, cases)
    assert rec["refused"] is True and rec["passed"] is True, rec
    # another SKU is not the annotated question
    other = rag("ask", "SKU-1023的库存是多少？", "--kb", str(kb_dir), "--json")
    assert json.loads(other.stdout)["annotation"] is None


def test_cli_input_errors_are_messages(kb_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "休假.md").write_text(LEAVE.format(days="五天"), encoding="utf-8")
    assert rag("ingest", str(tmp_path / "休假.md"), "--kb", str(kb_dir)).exit_code == 0
    for args in (
        ["年假？"],  # neither --answer nor --refuse
        ["年假？", "-a", "十天", "--refuse"],
        ["年假？", "-a", "x", "--collection", "不存在"],
        ["年假？", "-a", "x", "--chunk", "nope"],
        ["问" * 2001, "-a", "x"],
    ):
        done = rag("annotations", "add", *args, "--kb", str(kb_dir))
        assert done.exit_code == 2 and "error:" in done.output and "Traceback" not in done.output
