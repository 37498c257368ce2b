/* A turn of the conversation as a reader sees it: the answer with its [n] markers (each opens
 * the citation pop-up of that turn's sources), a refusal's reason and closest unit, the
 * sources (collapsible), and the diagnostics (scores, the gate, timings) behind 详情.
 * An answer that is an editor's annotation (人工标注, res.annotation) carries a badge under its
 * text: who wrote it, when (local), and whether the question matched exactly or closely.
 * fillTurn fills the latest turn's fixed elements (index.html's #answer-box); earlierTurn builds
 * an earlier one (in #chat-turns) from the same parts. No page state: `cite(res, n)` is given.
 */

import { el, append, clear, show, fmtScore, fmtProb, fmtShortTime, pathNode } from "./dom.js";

/** The answer's text into `out`: every valid [n] a button opening sources[n-1]. */
function fillAnswer(out, res, cite) {
  clear(out);
  var sources = res.sources || [];
  var text = String(res.answer || "");
  var re = /\[(\d{1,3})\]/g;
  var last = 0;
  var m;
  while ((m = re.exec(text)) !== null) {
    var n = parseInt(m[1], 10);
    if (m.index > last) append(out, text.slice(last, m.index));
    if (n >= 1 && n <= sources.length) append(out, markerButton(res, n, cite));
    else append(out, m[0]);
    last = m.index + m[0].length;
  }
  if (last < text.length) append(out, text.slice(last));
  out.classList.toggle("refused", !!res.refused);
}

function markerButton(res, n, cite) {
  return el("button", {
    type: "button",
    class: "marker",
    "data-testid": "citation-marker",
    "data-source": n,
    "aria-label": "查看来源 " + n,
    text: "[" + n + "]",
    onclick: function () { cite(res, n); },
  });
}

/** The 人工标注 badge's words ("" when the answer is not an annotation). */
function annotationText(res) {
  var a = res.annotation;
  if (!a) return "";
  var parts = ["人工标注"];
  if (a.author) parts.push(a.author);
  if (a.updated_at) parts.push(fmtShortTime(a.updated_at));
  parts.push(a.match === "exact" ? "完全匹配" : "相近问题");
  return parts.join(" · ");
}

function fillAnnotation(node, res) {
  var text = annotationText(res);
  show(node, text);
  var a = res.annotation;
  node.title = a && a.annotated_question ? "标注的问题：" + a.annotated_question : "";
}

/** Why it was not answered (or answered with a reservation); "" for a plain answer. */
function reasonText(res) {
  var sources = res.sources || [];
  if (res.refused) {
    return "未作答 · " + (res.explanation || "知识库中没有找到可以回答的内容。") +
      (sources.length ? " 下面是最接近的资料。" : "");
  }
  if (res.outcome === "qualified") {
    return "有保留的回答 · 知识库可能没有所问的内容，下面是最接近的资料。";
  }
  return "";
}

/** A refusal's closest unit, quoted with its marker (the nearest the documents have). */
function fillClosest(box, res, cite) {
  clear(box);
  var sources = res.sources || [];
  var closest = res.refused ? res.closest || [] : [];
  closest.forEach(function (c) {
    var line = el("div", { class: "closest-line" }, "最接近的内容：" + c.text + " ");
    if (c.source >= 1 && c.source <= sources.length) append(line, markerButton(res, c.source, cite));
    box.appendChild(line);
  });
  box.hidden = !closest.length;
}

/** The sources as list items: marker, file, heading path (scores are under 详情); `testid`:
 * "source" (the latest turn's) or "turn-source" (an earlier one's). */
function fillSources(list, res, cite, testid) {
  clear(list);
  list.classList.toggle("closest", !!res.refused);
  (res.sources || []).forEach(function (s, i) {
    list.appendChild(
      el(
        "li",
        { class: "source", "data-testid": testid + "-item" },
        markerButton(res, i + 1, cite),
        el("span", { class: "src-file", "data-testid": testid + "-file", text: s.filename || s.doc_id }),
        pathNode(s.title_path)
      )
    );
  });
}

/** The heading of the sources: 来源, or 最接近的资料 for a refusal. */
function sourcesHeading(res) {
  return res.refused ? "最接近的资料" : "来源";
}

function ms(v) {
  var n = Number(v);
  return isNaN(n) ? String(v) : n.toFixed(n < 10 ? 1 : 0);
}

/** The diagnostics, each a line: confidence and the gate, the reader, the mode, an LLM that
 * was not used, the sources' scores, the timings. */
function diagnosticLines(res) {
  var lines = [];
  if (typeof res.confidence === "number") {
    lines.push(
      "置信度 " + fmtProb(res.confidence) +
        (res.threshold > 0 ? "（门限 " + fmtProb(res.threshold) + "）" : "（门限关闭）") +
        (res.reviewed ? " · 低于门限，已由 LLM 复核" : "")
    );
  }
  if (typeof res.reading === "number") lines.push("阅读器 " + fmtProb(res.reading));
  if (res.mode) lines.push("模式 " + res.mode);
  if (res.llm_error) lines.push("未使用 LLM：" + res.llm_error);
  var sources = res.sources || [];
  if (sources.length) {
    lines.push("相关度 " + sources.map(function (s, i) {
      return "[" + (i + 1) + "] " + fmtScore(s.score);
    }).join(" · "));
  }
  var t = res.timings || {};
  var parts = Object.keys(t).map(function (k) {
    return k.replace(/_ms$/, "") + " " + ms(t[k]) + (/_ms$/.test(k) ? " ms" : "");
  });
  if (parts.length) lines.push("耗时 " + parts.join(" · "));
  return lines;
}

function fillDiagnostics(box, res) {
  clear(box);
  diagnosticLines(res).forEach(function (line) { box.appendChild(el("div", { text: line })); });
}

/** The latest turn's elements (found by id in `parts`): everything of the answer but the
 * question line and the feedback, which conversation.js keeps. */
function fillTurn(parts, res, cite) {
  fillAnswer(parts.answer, res, cite);
  fillAnnotation(parts.annotation, res);
  show(parts.reason, reasonText(res));
  fillClosest(parts.closest, res, cite);
  var sources = res.sources || [];
  parts.heading.textContent = sourcesHeading(res);
  parts.count.textContent = "(" + sources.length + ")";
  fillSources(parts.list, res, cite, "source");
  parts.sources.hidden = !sources.length;
  parts.sources.open = true;
  fillDiagnostics(parts.diagnostics, res);
}

/** An earlier turn: its question, how it was understood, its answer, its sources (collapsed)
 * and diagnostics. `turn`: {question, resolved, answer: the response}; `correct(turn)`: its
 * 纠正 button's action (none: no button). */
function earlierTurn(turn, index, cite, correct) {
  var res = turn.answer || {};
  var node = el("article", { class: "turn chat-turn", "data-testid": "chat-turn" });
  var q = el("div", { class: "turn-q", "data-testid": "turn-question" }, turn.question);
  append(node, q);
  if (turn.resolved && turn.resolved !== turn.question) {
    append(node, el("div", { class: "answer-resolved muted", text: "理解为：" + turn.resolved }));
  }
  var out = el("div", { class: "answer", "data-testid": "turn-answer" });
  fillAnswer(out, res, cite);
  append(node, out);
  var badge = el("div", { class: "annotation-badge", "data-testid": "turn-annotation" });
  fillAnnotation(badge, res);
  append(node, badge);
  var reason = reasonText(res);
  if (reason) append(node, el("div", { class: "reason muted", text: reason }));
  var closest = el("div", { class: "closest-unit" });
  fillClosest(closest, res, cite);
  append(node, closest);
  var sources = res.sources || [];
  if (sources.length) {
    var list = el("ol", { class: "source-list" });
    fillSources(list, res, cite, "turn-source");
    append(node, el(
      "details",
      { class: "sources", "data-testid": "turn-sources" },
      el("summary", {}, sourcesHeading(res), el("span", { class: "muted", text: " (" + sources.length + ")" })),
      list
    ));
  }
  var diag = el("div", { class: "timings muted" });
  fillDiagnostics(diag, res);
  var foot = el("div", { class: "turn-foot" });
  if (correct) {
    append(foot, el("button", {
      type: "button", class: "ghost small", "data-testid": "turn-correct",
      title: "纠正这个回答（人工标注）", text: "纠正",
      onclick: function () { correct(turn); },
    }));
  }
  append(foot, el(
    "details",
    { class: "diag", "data-testid": "turn-diagnostics" },
    el("summary", { text: "详情" }),
    diag
  ));
  append(node, foot);
  node.setAttribute("data-turn", String(index));
  return node;
}

export { fillTurn, earlierTurn };
