/* 纠正 (人工标注, an editor's correction of an answer): the dialog, prefilled with the turn's
 * resolved question and the answer's first line, an 应拒答 box and an optional source (one of
 * the answer's chunks) to cite; 保存 posts /api/annotations with the chosen 知识范围 collection
 * (none: the whole tenant). A later question that matches is answered with it (thread.js shows
 * its badge). Errors are said in Chinese inside the dialog, which stays open to correct them.
 */

import { $, el, clear } from "./dom.js";
import { state, api, canEdit, showError } from "./api.js";

var current = null; // the turn being corrected: {question, resolved, answer}

/** The answer's first line, its [n] markers taken out (the text an editor starts from). */
function firstLine(res) {
  var text = String((res && res.answer) || "").replace(/\[\d{1,3}\]/g, "").trim();
  return text.split(/\r?\n/)[0].trim();
}

function sourceLabel(s, i) {
  var where = s.title_path ? " · " + s.title_path.split("\n").join(" / ") : "";
  return "[" + (i + 1) + "] " + (s.filename || s.doc_id) + where;
}

/** Open the dialog for `turn` (an editor only). */
function openCorrection(turn) {
  if (!canEdit() || !turn) return;
  current = turn;
  var res = turn.answer || {};
  $("annotate-question").value = turn.resolved || turn.question || "";
  $("annotate-answer").value = res.refused ? "" : firstLine(res);
  $("annotate-refuse").checked = false;
  $("annotate-answer").disabled = false;
  var select = $("annotate-chunk");
  clear(select);
  select.appendChild(el("option", { value: "", text: "不引用来源" }));
  (res.sources || []).forEach(function (s, i) {
    if (s.chunk_id) select.appendChild(el("option", { value: s.chunk_id, text: sourceLabel(s, i) }));
  });
  select.disabled = select.options.length < 2;
  $("annotate-scope").textContent = state.collection
    ? "保存到集合「" + state.collection + "」：在该集合中提问时使用。"
    : "未选择集合：对全部文档的提问使用。";
  showError($("annotate-error"), "", null);
  $("annotate-save").disabled = false;
  var dlg = $("annotate-dialog");
  if (typeof dlg.showModal === "function") dlg.showModal();
  else dlg.setAttribute("open", "");
  $("annotate-answer").focus();
}

function closeCorrection() {
  var dlg = $("annotate-dialog");
  if (typeof dlg.close === "function") dlg.close();
  else dlg.removeAttribute("open");
  current = null;
}

/** Post the annotation; on success close and say so (`done(text)`: where it is said). */
function saveCorrection(done) {
  var error = $("annotate-error");
  var question = $("annotate-question").value.trim();
  var refuse = $("annotate-refuse").checked;
  var answer = $("annotate-answer").value.trim();
  if (!question) {
    showError(error, "请填写问题。", null);
    $("annotate-question").focus();
    return;
  }
  if (!refuse && !answer) {
    showError(error, "请填写正确答案，或勾选“应拒答”。", null);
    $("annotate-answer").focus();
    return;
  }
  var body = { question: question, answer: refuse ? "" : answer, should_refuse: refuse };
  if (state.collection) body.collection = state.collection;
  var chunk = $("annotate-chunk").value;
  if (chunk && !refuse) body.chunk_id = chunk;
  var button = $("annotate-save");
  button.disabled = true;
  api("/api/annotations", { method: "POST", json: body, quiet: true }).then(
    function () {
      closeCorrection();
      done("已保存标注，相同或相近的问题将直接使用此答案。");
    },
    function (err) { showError(error, "保存失败：", err); }
  ).then(function () { button.disabled = false; });
}

/** Wire the dialog; `done(text)` shows the confirmation (conversation.js: the feedback line). */
function setupAnnotate(done) {
  $("annotate-form").addEventListener("submit", function (e) {
    e.preventDefault(); // open until saved
    saveCorrection(done);
  });
  $("annotate-cancel").addEventListener("click", closeCorrection);
  $("annotate-refuse").addEventListener("change", function (e) {
    $("annotate-answer").disabled = e.target.checked;
    $("annotate-chunk").disabled = e.target.checked || $("annotate-chunk").options.length < 2;
  });
}

export { firstLine, openCorrection, setupAnnotate };
