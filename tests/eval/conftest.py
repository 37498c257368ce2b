"""Fixtures for the evaluation tests: a tiny corpus with five questions and hand-built
records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

SECURITY = """# 信息安全制度

## 账号管理

第十二条 连续5次输入错误密码的，账号将被自动锁定30分钟。

第十三条 密码长度不少于12位，每90天必须修改一次。
"""

TRAVEL = """# 差旅标准

## 住宿与伙食

| 城市类别 | 住宿标准（元/晚） | 伙食补助（元/天） |
| --- | --- | --- |
| 一类城市 | 600 | 120 |
| 二类城市 | 450 | 100 |
"""

FAQ = """常见问题

问：出差在外怎么访问公司内部系统？
答：必须通过公司统一部署的VPN接入内部系统，禁止使用公共代理。
"""

QUESTIONS: list[dict[str, Any]] = [
    {
        "id": "t-1",
        "question": "账号连续输错密码5次会被锁定多久？",
        "answers": ["30分钟"],
        "gold_docs": ["policy/security.md"],
        "gold_spans": ["连续5次输入错误密码的，账号将被自动锁定30分钟"],
        "category": "policy",
    },
    {
        "id": "t-2",
        "question": "密码长度和修改周期有什么要求？",
        "answers": ["12位", "90天"],
        "answer_match": "all",
        "gold_docs": ["policy/security.md"],
        "gold_spans": ["密码长度不少于12位，每90天必须修改一次"],
        "category": "policy",
    },
    {
        "id": "t-3",
        "question": "一类城市住宿标准每晚多少元？",
        "answers": ["600"],
        "gold_docs": ["travel.md"],
        "gold_rows": [
            {"城市类别": "一类城市", "住宿标准（元/晚）": "600", "伙食补助（元/天）": "120"}
        ],
        "gold_header": ["城市类别", "住宿标准（元/晚）", "伙食补助（元/天）"],
        "category": "table",
    },
    {
        "id": "t-4",
        "question": "出差在外怎么访问公司内部系统？",
        "answers": ["必须通过公司统一部署的VPN接入内部系统"],
        "answer_match": "reference",
        "gold_docs": ["faq.txt"],
        "gold_spans": ["通过公司统一部署的VPN接入"],
        "category": "faq",
    },
    {
        "id": "t-5",
        "question": "公司年会在哪里举办？",
        "answerable": False,
        "answer_match": "reference",
        "category": "unanswerable",
    },
]


def write_corpus(root: Path) -> tuple[Path, Path]:
    """Write the tiny docs folder and its question file under ``root``; returns both paths."""
    docs = root / "docs"
    (docs / "policy").mkdir(parents=True)
    (docs / "policy" / "security.md").write_text(SECURITY, encoding="utf-8")
    (docs / "travel.md").write_text(TRAVEL, encoding="utf-8")
    (docs / "faq.txt").write_text(FAQ, encoding="utf-8")
    qa = root / "qa.jsonl"
    qa.write_text(
        "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in QUESTIONS), encoding="utf-8"
    )
    return docs, qa


@pytest.fixture
def corpus(tmp_path: Path) -> tuple[Path, Path]:
    return write_corpus(tmp_path / "corpus")


@pytest.fixture
def shared_model(monkeypatch: pytest.MonkeyPatch, embed_model: Any) -> Any:
    """Make every ``KnowledgeBase.open`` (CLI, pipeline) reuse the session's loaded model."""
    from rag_app import kb as kb_module

    original = kb_module.KnowledgeBase.open.__func__  # type: ignore[attr-defined]

    def open_with_model(cls, path=None, settings=None, **kw):  # type: ignore[no-untyped-def]
        if kw.get("embed_model") is None:
            kw["embed_model"] = embed_model
        return original(cls, path, settings, **kw)

    monkeypatch.setattr(kb_module.KnowledgeBase, "open", classmethod(open_with_model))
    return embed_model
