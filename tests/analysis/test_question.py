"""Question analysis on general phrasings (not any evaluation set's templates)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_app.analysis import Lexicon, QuestionAnalyzer


@pytest.mark.parametrize(
    ("question", "answer_type"),
    [
        ("密码要多长时间换一次？", "duration"),
        ("快递一般几天能到？", "duration"),
        ("这座桥是哪一年建成的？", "date"),
        ("会议什么时候开始？", "date"),
        ("一张门票多少钱？", "money"),
        ("合格率是百分之多少？", "ratio"),
        ("这个班有多少名学生？", "number"),
        ("这部小说的作者是谁？", "person"),
        ("这款手机是哪家公司生产的？", "organization"),
        ("总部设在哪里？", "place"),
        ("为什么天空是蓝色的？", "reason"),
        ("忘记密码了怎么办？", "method"),
        ("年假期间可以做哪些事？", "list"),
        ("试用期员工能不能请年假？", "yes_no"),
        ("什么是等待期？", "definition"),
        ("他的职业是什么？", "what"),
        ("请介绍一下公司", "other"),
    ],
)
def test_answer_type_from_the_question_word(
    analyzer: QuestionAnalyzer, question: str, answer_type: str
) -> None:
    assert analyzer(question).answer_type == answer_type


def test_the_more_specific_question_word_wins(analyzer: QuestionAnalyzer) -> None:
    # "多少天" is a duration even though "多少" alone asks for a number
    assert analyzer("等待期是多少天？").answer_type == "duration"
    # "为什么" is a reason although it contains "什么"
    assert analyzer("为什么要备份数据？").answer_type == "reason"


def test_a_value_in_the_question_is_a_constraint_not_an_entity(analyzer: QuestionAnalyzer) -> None:
    a = analyzer("单笔报销金额5000元需要谁审批？")
    assert a.answer_type == "person"
    assert "5000元" in a.constraints
    assert not any("5000" in e for e in a.entities)
    b = analyzer("63岁男性每年要交多少保费？")
    assert "63岁" in b.constraints and b.answer_type == "money"
    assert analyzer("65周岁男性投保，每年交多少？").constraints == ["65周岁"]  # full years of age


@pytest.mark.parametrize(
    ("question", "bounds"),
    [
        ("哪些小区在2021年12月的房价位于10000至20000元之间？", ["10000", "20000元"]),
        ("哪些企业在2021年的营业利润超过了7亿？", ["7亿"]),
        ("单笔报销5000元以上需要谁审批？", ["5000元"]),
        ("年龄在18~60岁的员工有多少人？", ["18", "60岁"]),
        ("2020-07-01的成交量是多少？", []),  # a date, not a range
        ("2021年和2017年的利润分别是多少？", []),  # two values, no range
        ("63岁男性每年要交多少保费？", []),
    ],
)
def test_a_range_end_or_a_compared_value_is_a_bound(
    analyzer: QuestionAnalyzer, question: str, bounds: list[str]
) -> None:
    a = analyzer(question)
    assert a.bounds == bounds
    assert set(a.bounds) <= set(a.constraints)


def test_terms_leave_out_question_words_and_function_words(analyzer: QuestionAnalyzer) -> None:
    a = analyzer("请问密码要多长时间换一次？")
    assert "密码" in a.terms
    assert not {"请问", "多长", "时间", "多长时间"} & set(a.terms)


def test_firm_names_are_quoted_latin_or_anonymised_not_any_tagged_word(
    analyzer: QuestionAnalyzer,
) -> None:
    """The names a question uses whose absence from the evidence is certain to matter: a Latin
    name or code, a quoted title, an anonymised person. A word jieba merely tags as a name (合伙,
    明星) is not one of them."""
    from rag_app.analysis.names import firm_names

    a = analyzer("SAP系统和《员工手册》里，张某某的权限怎么设置？")
    assert firm_names(a) == ["张某某", "员工手册", "SAP"]
    b = analyzer("利用明星的肖像剪影做宣传，侵权吗？")
    assert firm_names(b) == [] and b.entities  # tagged, not firm
    assert firm_names(analyzer("名为“个体工商户”实为“合伙”，如何认定？")) == ["个体工商户", "合伙"]


def test_entities_quoted_titles_and_latin_names(analyzer: QuestionAnalyzer) -> None:
    a = analyzer("《劳动合同法》对试用期有什么规定？")
    assert "劳动合同法" in a.entities
    b = analyzer("Kubernetes 的默认端口是多少？")
    assert "Kubernetes" in b.entities


def test_head_is_the_asked_thing(analyzer: QuestionAnalyzer) -> None:
    assert analyzer("保费是多少？").head == "保费"
    assert analyzer("每年交多少保费？").head == "保费"


def test_head_prefers_a_noun_to_a_verb_or_a_vague_noun(analyzer: QuestionAnalyzer) -> None:
    # a verb before the question word is not what is asked; the noun before it is
    assert analyzer("这款手机的售价达到了多少？").head == "售价"
    assert analyzer("重疾险的等待期是多少天？").head == "等待期"  # 等待|期, one compound
    assert analyzer("年假有多少天？").head == "年假"  # jieba: 年/m 假/a
    assert analyzer("登录口令最少要设置几位？").head == "口令"
    # 数据/情况/信息 say nothing about what is asked
    assert analyzer("这个小区的绿化率数据是多少？").head == "绿化率"
    assert analyzer("地铁站的客流情况是多少？").head == "客流"
    # 标准/要求/名称 name only the kind of what is asked: a document states the thing itself
    assert analyzer("机房的温度标准是多少？").head == "温度"
    assert analyzer("这座大桥叫什么名字？").head == "大桥"
    assert analyzer("这家医院的名称是什么？").head == "医院"


def test_the_word_between_de_and_the_question_word_is_asked(analyzer: QuestionAnalyzer) -> None:
    """Whatever jieba tags it (身高/v, 生日/t, 年/m 假/a), not the person before 的."""
    assert analyzer("王五的身高是多少？").head == "身高"
    assert analyzer("李四的生日是哪一天？").head == "生日"
    assert analyzer("员工的年假是多少天？").head == "年假"
    # a noun there is found the usual way, and a verb after a noun is not asked
    assert analyzer("公司的营收增长了多少？").head == "营收"
    assert analyzer("合同的有效期是多久？").head == "有效期"
    # a question word jieba tags as a noun (多长/n) and a 有 it glues on (等待|期有) change nothing
    assert analyzer("这款保险的等待期有多长？").head == "等待期"
    assert analyzer("会议室的面积有多大？").head == "面积"


def test_the_asked_thing_follows_a_distributive_adverb(analyzer: QuestionAnalyzer) -> None:
    """各自 / 分别 spread the predicate over the subjects named before them: the head is in the
    predicate (存放, 卖出), not the subjects' noun (仓库, 门店); a head already after the adverb
    stays."""
    assert analyzer("甲乙两个仓库各自存放了多少吨货物？").head == "存放"
    assert analyzer("这两家门店分别卖出了多少台空调？").head == "卖出"
    assert analyzer("两款手机各自的电池容量是多少？").head == "电池容量"
    assert analyzer("两个仓库的面积分别是多少？").head == "面积"


def test_a_question_word_starting_inside_another_is_found(analyzer: QuestionAnalyzer) -> None:
    """是什么|时候: 什么时候 starts inside 是什么 and asks for a date."""
    assert analyzer("他的生日是什么时候？").answer_type == "date"
    assert analyzer("这台设备是什么时候安装的？").answer_type == "date"
    assert analyzer("这个词是什么意思？").answer_type == "definition"
    assert analyzer("为什么要修改密码？").answer_type == "reason"


def test_a_noun_opening_the_question_word_after_de_is_the_head(
    analyzer: QuestionAnalyzer,
) -> None:
    """合同的有效期是多少: the cue opens with the asked noun, and 合同 only owns it."""
    assert analyzer("合同的有效期是多少？").head == "有效期"
    assert analyzer("这笔订单的金额是多少？").head == "金额"
    assert analyzer("会议的日期是哪天？").head == "日期"


def test_a_one_char_piece_before_a_copula_is_not_the_head(analyzer: QuestionAnalyzer) -> None:
    """年|交|保费/v是多少: jieba tags 保费 a verb; the subject of 是 is what is asked, not 交."""
    assert analyzer("三十岁男性每年的年交保费是多少？").head == "保费"
    # a verb that governs the question word is still not the head
    assert analyzer("这款手机的售价达到了多少？").head == "售价"


def test_a_piece_of_a_name_is_never_the_head(analyzer: QuestionAnalyzer) -> None:
    """jieba cuts 柳|某某 and 戈|登出|生于: the surname is a piece of a name (the name is a term
    of its own), not the asked thing."""
    a = analyzer("张某和柳某某分别犯了什么错？")
    assert "柳某某" in a.names
    assert a.head != "柳"
    assert analyzer("戈登出生于哪里？").head != "戈"


def test_the_word_after_the_question_word_is_the_head(analyzer: QuestionAnalyzer) -> None:
    """什么颜色的汽车 asks the colour; the noun 的 leads to is what the colour is of."""
    assert analyzer("他最喜欢什么颜色的汽车？").head == "颜色"


def test_a_one_char_verb_after_the_question_word_is_not_the_head(
    analyzer: QuestionAnalyzer,
) -> None:
    """什么|来|付款, 什么|出|道: a one-char verb after the question word asks nothing itself."""
    assert analyzer("他用什么来付款？").head != "来"
    assert analyzer("她主演电视剧什么出道？").head != "出"


def test_an_english_question_names_its_capitalised_words(analyzer: QuestionAnalyzer) -> None:
    """Not every word of an English question is an entity; a Latin word inside a Chinese
    question is (a name or a code)."""
    a = analyzer("Where is the coffee machine at Acme Labs?")
    assert set(a.entities) == {"Acme", "Labs"}
    assert "Redis" in analyzer("部署指南里 Redis 需要什么版本？").entities


def test_a_light_verb_hands_the_head_to_its_object(analyzer: QuestionAnalyzer) -> None:
    assert analyzer("公司在哪一年开展了员工培训？").head == "培训"
    assert analyzer("两家公司分别在哪一年进行了资产重组？").asked == "资产重组"


def test_ji_after_a_demonstrative_means_a_few(analyzer: QuestionAnalyzer) -> None:
    """这几个 / 前几年 / 十几岁 say "a few", not "how many": the question word is the later one."""
    assert analyzer("这几个仓库的面积分别是多少？").head == "面积"
    assert analyzer("前几年公司的利润是多少？").cue == "多少"
    assert analyzer("这个班有几个学生？").cue in ("几", "几个")


def test_the_size_of_a_span_of_time_is_a_duration(analyzer: QuestionAnalyzer) -> None:
    """多长 / 多少 after a noun naming a span of time asks for a duration; a count after the
    question word stays a number."""
    assert analyzer("这款保险的等待期有多长？").answer_type == "duration"
    assert analyzer("员工的试用期是多少？").answer_type == "duration"
    assert analyzer("会议室的面积有多大？").answer_type == "number"
    assert analyzer("一学年有几个学期？").answer_type == "number"


def test_a_conjunction_glued_to_a_name_is_not_part_of_the_entity(
    analyzer: QuestionAnalyzer,
) -> None:
    for entity in analyzer("比较农田实业有限公司和云翼航空有限公司的重组时间，哪家更早？").entities:
        assert not entity.startswith("和")


def test_comparisons_ask_for_a_choice(analyzer: QuestionAnalyzer) -> None:
    assert analyzer("甲和乙的体温谁更高？").answer_type == "choice"
    assert analyzer("这两家公司哪家更早上市？").answer_type == "choice"


def test_a_modal_after_the_question_word_is_not_the_head(analyzer: QuestionAnalyzer) -> None:
    """ "X多久才能Y" asks how long until Y: 才能 (only then can) is no noun there, whatever
    jieba's tag (才能/n, talent), and no document's word."""
    for question, head in [
        ("退款多久才能到账？", "退款"),
        ("护照几天才能办好？", "护照"),
        ("账号被锁了要等多久才能自动解开？", "账号"),
    ]:
        analysis = analyzer(question)
        assert analysis.head == head
        assert "才能" not in analysis.terms


def test_the_asked_phrase_as_written(analyzer: QuestionAnalyzer) -> None:
    assert analyzer("这款手机的电池容量是多少？").asked == "电池容量"
    # without the trailing noun that names only the kind of what is asked (标准)
    assert analyzer("制度规定的机房温度标准是多少？").asked == "机房温度"
    assert analyzer("为什么？").asked == ""


def test_article_labels_are_canonical(analyzer: QuestionAnalyzer) -> None:
    assert analyzer("第三十三条规定了什么？").labels == ["第33条"]


def test_a_lexicon_of_ones_own(tmp_path: Path) -> None:
    data = json.loads(Path("rag_app/analysis/lexicon.json").read_text(encoding="utf-8"))
    data["answer_types"].insert(0, {"type": "duration", "cues": ["几时完工"]})
    path = tmp_path / "lexicon.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    assert QuestionAnalyzer(Lexicon.load(path))("大楼几时完工？").answer_type == "duration"


def test_a_broken_lexicon_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "lexicon.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="lexicon"):
        Lexicon.load(path)


def test_normalize_maps_spelling_variants() -> None:
    lex = Lexicon.load()
    assert lex.normalize("年缴保费") == lex.normalize("年交保费")
    assert lex.normalize("180天") == lex.normalize("180日")


def test_a_span_of_time_named_by_the_verb_before_it_is_the_head(
    analyzer: QuestionAnalyzer,
) -> None:
    """备份保留期限是多少: the asked thing is the 保留期限, not the subject before it (备份); the
    question word opening with the noun (期限是多少) does not swallow it."""
    a = analyzer("财务报销系统的备份保留期限是多少？")
    assert (a.head, a.asked, a.answer_type) == ("保留期限", "备份保留期限", "duration")
    assert analyzer("贷款的还款期限是多少？").head == "还款期限"
    assert analyzer("合同的付款周期是多少？").head == "付款周期"
    assert analyzer("合同的有效期是多少？").head == "有效期"  # owned by 合同 through 的: as before
    assert analyzer("服务器的登录日志至少要保留多长时间？").head == "日志"  # a question word


def test_an_anonymised_name_is_one_term(analyzer: QuestionAnalyzer) -> None:
    """张某某 / 欧阳某 name a person: one term (jieba cuts them, and the mark 某某 is in every
    record), not the 高某 of 提高某项."""
    a = analyzer("根据判决书，被告人葛某某的职业是什么？")
    assert a.names == ["葛某某"] and "葛某某" in a.terms and "某某" not in a.terms
    assert analyzer("尹某与欧阳某的判刑时间谁更长？").names == ["尹某", "欧阳某"]
    assert analyzer("提高某项指标需要多久？").names == []
    assert analyzer("机房温度标准是多少？").names == []
    # a surname that is also a function word takes the long mark only
    assert analyzer("合同于某日签订后多久生效？").names == []
    assert analyzer("公司和某供应商签订的合同金额是多少？").names == []
    assert analyzer("于某某的入院时间是什么时候？").names == ["于某某"]


def test_pseudonym_spans_mark_every_occurrence_where_a_word_starts(
    analyzer: QuestionAnalyzer,
) -> None:
    """The spans locate each occurrence of a name (the head reading skips their characters);
    the analysis lists each name once. A match that starts inside a word is no name."""
    lex = Lexicon.load()
    text = "张某某与李某的房子，张某某卖了吗"
    starts = {0, 4, 9, 10}  # 张某某|与|李某|的… : 李某 starts at 4, the second 张某某 at 10
    spans = lex.pseudonym_spans(text, starts)
    assert [text[a:b] for a, b in spans] == ["张某某", "李某", "张某某"]
    assert spans[2] == (10, 13)
    assert analyzer(text).names == ["张某某", "李某"]
    assert lex.pseudonym_spans(text, {0}) == [(0, 3)]


def test_the_subjects_of_a_question_asked_of_several_at_once(analyzer: QuestionAnalyzer) -> None:
    """A和B分别…, A与B谁更…, or two people: their names and entities; one subject: none."""
    assert analyzer("苏某某和廉某某的脉搏谁更快？").subjects == ["苏某某", "廉某某"]
    assert analyzer("被告人尹某的血型是什么？").subjects == []
    assert analyzer("云溪花园的平均房价是多少？").subjects == []  # 平均 holds 均, no distributive


def test_two_names_in_a_chain_of_de_are_one_subject(analyzer: QuestionAnalyzer) -> None:
    """Names joined by a conjunction (和, 与, 、) are several subjects; a name that qualifies
    another through 的 (张某的律师李某某) is not: only the last is asked about."""
    assert analyzer("王某某与钱某的住址分别在哪里？").subjects == ["王某某", "钱某"]
    assert analyzer("王某某、钱某的籍贯是哪里？").subjects[:2] == ["王某某", "钱某"]
    assert analyzer("张某的律师李某某的电话是多少？").subjects == []
    assert analyzer("张某的律师李某某的电话是多少？").names == ["张某", "李某某"]


def test_a_manner_word_ending_the_question_after_a_noun_asks_how_that_thing_is(
    analyzer: QuestionAnalyzer,
) -> None:
    """ "X如何" with X a noun asks what X is like (X is the asked thing); before a verb, 如何 asks
    how to do something and names no head."""
    for question, head in [
        ("机房的温度如何？", "温度"),
        ("上个月的天气怎么样？", "天气"),
        ("新员工的试用期待遇怎样？", "待遇"),
        ("这个项目的预算如何呢？", "预算"),
    ]:
        a = analyzer(question)
        assert (a.answer_type, a.head) == ("what", head), question
    not_one_thing = ["忘记密码应该如何处理？", "如何申请年假？", "报销单怎样填写？", "张三如何？"]
    for question in [*not_one_thing, "今年的销售情况如何？"]:  # 情况: asked broadly
        a = analyzer(question)
        assert a.answer_type == "method" and a.head is None, question


def test_a_function_word_the_hmm_glued_on_is_cut_off(analyzer: QuestionAnalyzer) -> None:
    """jieba's HMM makes up 症能 (轻|症能|赔), 和元 (于某某|和元|某某) and 罪会 (…犯罪活动|罪会|判):
    half a word with a verb or a conjunction on it is never the head."""
    a = analyzer("得了轻症能赔几次？")
    assert a.head is None or "能" not in a.head
    assert analyzer("犹豫期有几天？").head == "犹豫期"  # 犹豫|期有|几天
    assert analyzer("于某某和元某某的辅助检查结果分别是什么？").head == "检查"
    assert analyzer("帮助信息网络犯罪活动罪会判多久").head == "犯罪活动"


def test_a_function_word_inside_a_name_stays(analyzer: QuestionAnalyzer) -> None:
    """都 of 乍都节 and 和 of 荣和 are not a verb or 的 at the end of a made-up word."""
    assert "乍都" in analyzer("乍都节公园位于什么地方？").entities
