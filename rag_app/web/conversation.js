/* The conversation the ask panel is in: its id (kept by the server, /api/chat), the turns so far
 * (each question and how it was understood: a follow-up completed from the previous turn), "新对话",
 * and 有用/有误 (👍/👎) with a comment on the latest answer (/api/feedback, with the collection it
 * was asked in; a 👎 refreshes 最近的差评). A conversation stays in one collection: switching the
 * collection starts a new one (collections.js, app.js); reopening one chooses its collection
 * (without starting a new one: its next turn and feedback carry it). The buttons are words:
 * a machine without an emoji font shows the emoji as boxes.
 */

import { $, el, append, clear, show } from "./dom.js";
import { state, api, errText } from "./api.js";
import { adoptScope, loadRecentDown } from "./collections.js";
import { loadDocs } from "./documents.js";

// collection: the one its turns were asked in (null: none, all documents)
var conversation = { id: null, turns: [], collection: null };
var render = null; // ask.js's renderAnswer, given by setupConversation (no import cycle)

/** The conversation now (another object once it is left: 新对话, switched, reopened). */
function currentConversation() {
  return conversation;
}

/** The request body's conversation part: continue the current one, if any. */
function conversationBody(body) {
  if (conversation.id) body.conversation_id = conversation.id;
  return body;
}

/** After an answer: remember the turn, show the thread and how the question was understood. */
function recordTurn(question, res, collection) {
  conversation.id = res.conversation_id || null;
  conversation.collection = collection || null;
  conversation.turns.push({ question: question, resolved: res.resolved_question || question });
  renderTurns();
  var understood = res.followup && res.followup !== "standalone";
  show($("answer-resolved"), understood ? "理解为：" + res.resolved_question : "");
  show($("feedback-status"), "");
  $("feedback-comment").value = "";
  $("feedback").hidden = !conversation.id;
  loadHistory();
}

/** This key's conversations, latest first, in the 历史对话 list (the current one selected). */
function loadHistory() {
  return api("/api/conversations").then(function (body) {
    var list = (body && body.conversations) || [];
    var select = $("chat-history");
    clear(select);
    select.appendChild(el("option", { value: "", text: "历史对话 (" + list.length + ")" }));
    list.forEach(function (c) {
      var title = c.title.length > 24 ? c.title.slice(0, 24) + "…" : c.title;
      select.appendChild(el("option", { value: c.conversation_id, text: title + " · " + c.turns + " 轮" }));
    });
    select.value = conversation.id || "";
    select.hidden = !list.length;
  }, function () { $("chat-history").hidden = true; });
}

/** Reopen a past conversation: its turns, its last answer, its collection chosen in 知识范围
 * (all documents, with a note, when that one is gone); the next question continues it. */
function openConversation(id) {
  if (!id) return;
  api("/api/conversations/" + encodeURIComponent(id)).then(function (body) {
    var turns = body.turns || [];
    var wanted = (body.collections || [])[0] || "";
    var before = state.collection;
    var chosen = adoptScope(wanted);
    conversation = {
      id: body.conversation_id,
      turns: turns.map(function (t) { return { question: t.question, resolved: t.resolved_question }; }),
      collection: chosen || null,
    };
    if (chosen !== before) loadDocs();
    $("ask-status").textContent = wanted && chosen !== wanted
      ? "该对话的集合「" + wanted + "」已不存在：显示全部文档。" : "";
    renderTurns();
    var last = turns[turns.length - 1];
    if (!last || !render) return;
    render(last.answer, null, chosen || null);
    var understood = last.resolved_question !== last.question;
    show($("answer-resolved"), understood ? "理解为：" + last.resolved_question : "");
    show($("feedback-status"), "");
    $("feedback").hidden = false;
    $("ask-input").value = "";
  }, function (err) { show($("ask-error"), "无法打开对话：" + errText(err)); });
}

function renderTurns() {
  var box = $("chat-turns");
  clear(box);
  // the earlier turns; the latest is the answer below
  var earlier = conversation.turns.slice(0, -1);
  earlier.forEach(function (t, i) {
    var line = el("div", { class: "chat-turn", "data-testid": "chat-turn" }, "问 " + (i + 1) + "：" + t.question);
    if (t.resolved !== t.question) append(line, el("span", { class: "muted", text: "（理解为：" + t.resolved + "）" }));
    box.appendChild(line);
  });
  box.hidden = !earlier.length;
  $("new-chat").hidden = !conversation.turns.length;
}

/** Start over; `why`: what the status line says (default: the next question stands alone). */
function newConversation(why) {
  conversation = { id: null, turns: [], collection: null };
  renderTurns();
  $("answer-box").hidden = true;
  $("chat-history").value = "";
  $("ask-status").textContent = why || "新对话：下一个问题独立理解。";
  $("ask-input").focus();
}

function sendFeedback(rating) {
  if (!conversation.id) return;
  var body = { conversation_id: conversation.id, rating: rating, comment: $("feedback-comment").value.trim() };
  if (conversation.collection) body.collection = conversation.collection;
  show($("feedback-status"), "提交中…");
  api("/api/feedback", { method: "POST", json: body }).then(
    function () {
      show($("feedback-status"), "已记录（" + (rating === "up" ? "有用" : "有误") + "），谢谢。");
      if (rating === "down") loadRecentDown();
    },
    function (err) { show($("feedback-status"), "反馈失败：" + errText(err)); }
  );
}

function setupConversation(renderAnswer) {
  render = renderAnswer;
  $("new-chat").addEventListener("click", function () { newConversation(); });
  $("chat-history").addEventListener("change", function (e) { openConversation(e.target.value); });
  $("feedback-up").addEventListener("click", function () { sendFeedback("up"); });
  $("feedback-down").addEventListener("click", function () { sendFeedback("down"); });
}

export {
  conversationBody, currentConversation, loadHistory, newConversation, recordTurn, setupConversation,
};
