"""Office formats end to end: ingested into a real knowledge base, retrieved with their headings."""

from __future__ import annotations

from pathlib import Path

from tests.readers.office_files import CSV_TEXT, make_pptx, make_xls, make_xlsx


def _hit(kb, question: str, needle: str):  # type: ignore[no-untyped-def]
    hits = kb.retrieve(question, top_k=5)
    found = [h for h in hits if needle in h.text]
    assert found, [h.text[:60] for h in hits]
    return found[0]


def test_spreadsheets_and_slides_are_retrieved_with_their_heading_paths(kb, tmp_path: Path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "费率.xlsx").write_bytes(make_xlsx())
    (folder / "差旅标准.csv").write_bytes(CSV_TEXT.encode("gbk"))
    (folder / "产品介绍.pptx").write_bytes(make_pptx())
    report = kb.ingest([folder])
    assert [f.status for f in report.files] == ["SUCCESS"] * 3, [f.reason for f in report.files]
    assert {d.doc_type for d in kb.documents.list()} == {"xlsx", "csv", "pptx"}

    cell = _hit(kb, "45岁男性年交保费是多少元？", "| 45 | 1250 | 1150 |")
    assert cell.title_path == "费率表"
    assert "| 年龄 | 年交保费（元）/男 | 年交保费（元）/女 |" in cell.text  # header repeated

    note = _hit(kb, "犹豫期多长？", "十五日内可无条件退保")
    assert note.title_path == "说明"

    city = _hit(kb, "乌鲁木齐的住宿标准是多少？", "| 乌鲁木齐 | 420 | 80 |")
    assert city.title_path == "差旅标准"

    slide = _hit(kb, "理赔款多久到账？", "理赔款在五个工作日内到账")
    assert slide.title_path == "理赔时效"
    row = _hit(kb, "门诊理赔的金额上限是多少？", "| 门诊 | 一万元 | 三个工作日 |")
    assert row.title_path == "理赔时效"


def test_a_legacy_xls_is_ingested_and_its_cells_retrieved(kb, tmp_path: Path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "费率.xls").write_bytes(make_xls())
    report = kb.ingest([folder])
    assert [f.status for f in report.files] == ["SUCCESS"], [f.reason for f in report.files]
    assert {d.doc_type for d in kb.documents.list()} == {"xls"}
    cell = _hit(kb, "45岁男性年交保费是多少元？", "| 45 | 1250 | 1150 |")
    assert cell.title_path == "费率表"
    assert "| 年龄 | 年交保费（元）/男 | 年交保费（元）/女 |" in cell.text
    assert _hit(kb, "保单什么时候生效？", "| 生效日期 | 2024-03-01 |").title_path == "说明"
