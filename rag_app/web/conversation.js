/* The conversation the ask panel is in: its id (kept by the server, /api/chat), the turns so far
 * (each question, how it was understood: a follow-up completed from the previous turn, and its
 * answer: earlier turns in #chat-turns, the latest in #answer-box), the 历史对话 list, "新对话",
 * and 有用/有误 (👍/👎) with a comment on the latest answer (/api/feedback, with the collection it
 * was asked in; a 👎 refreshes 最近的差评). A conversation stays in one collection: switching the
 * collection starts a new one (collections.js, app.js); reopening one chooses its collection
 * (without starting a new one: its next turn and feedback carry it). An editor's 纠正 on any
 * answer opens the annotation dialog (annotate.js). The buttons are words:
 * a machine without an emoji font shows the emoji as boxes.
 */

import { $, el, clear, show, fmtShortTime } from "./dom.js";
import { state, api, canEdit, showError } from "./api.js";
import { openCorrection, setupAnnotate } from "./annotate.js";
import { adoptScope, loadRecentDown } from "./collections.js";
import { loadDocs } from "./documents.js";
import { earlierTurn } from "./thread.js";

// turns: [{question, resolved, answer: /api/chat's response, scope: the documents' names}];
// collection: the one its turns were asked in (null: none, all documents)
var conversation = { id: null, turns: [], collection: null };
var render = null; // ask.js's renderAnswer and openCitation, given by setupConversation
var cite = null; // (no import cycle)

/** The conversation now (another object once it is left: 新对话, switched, reopened). */
function currentConversation() {
  return conversation;
}

/** The request body's conversation part: continue the current one, if any. */
function conversationBody(body) {
  if (conversation.id) body.conversation_id = conversation.id;
  return body;
}

/** The earlier turns, each with its answer, above the latest; `pending`: a question is being
 * asked, so the latest answered turn is an earlier one now. */
function renderTurns(pending) {
  var box = $("chat-turns");
  clear(box);
  var earlier = pending ? conversation.turns : conversation.turns.slice(0, -1);
  var correct = canEdit() ? openCorrection : null;
  earlier.forEach(function (t, i) { box.appendChild(earlierTurn(t, i, cite, correct)); });
  box.hidden = !earlier.length;
  $("new-chat").hidden = !conversation.turns.length && !pending;
  $("thread-empty").hidden = !!(conversation.turns.length || pending);
}

/** The thread scrolled to the latest turn's question (when it scrolls by itself). */
function scrollToLatest() {
  var thread = $("thread");
  var box = $("answer-box");
  if (box.hidden || thread.scrollHeight <= thread.clientHeight) return;
  thread.scrollTop = Math.max(0, box.offsetTop - thread.offsetTop - 8);
}

/** The question `q` being asked: the thread so far above it, the latest turn emptied. */
function showPending(clearLatest) {
  renderTurns(true);
  clearLatest();
  scrollToLatest();
}

function showLatest(turn, understood) {
  render(turn.question, turn.answer, turn.scope || null, conversation.collection);
  show($("answer-resolved"), understood ? "理解为：" + turn.resolved : "");
  show($("feedback-status"), "");
  $("feedback-comment").value = "";
  $("feedback").hidden = !conversation.id;
  $("feedback-correct").hidden = !canEdit();
}

function correctLatest() {
  openCorrection(conversation.turns[conversation.turns.length - 1]);
}

/** After an answer: remember the turn, show the thread with it and how it was understood. */
function recordTurn(question, res, collection, scope) {
  conversation.id = res.conversation_id || null;
  conversation.collection = collection || null;
  var turn = {
    question: question, resolved: res.resolved_question || question, answer: res, scope: scope,
  };
  conversation.turns.push(turn);
  renderTurns();
  showLatest(turn, res.followup && res.followup !== "standalone");
  scrollToLatest();
  loadHistory();
}

/** A question that failed: the thread as it was before it. */
function restoreLatest() {
  renderTurns();
  var last = conversation.turns[conversation.turns.length - 1];
  if (last) showLatest(last, last.resolved !== last.question);
  else $("answer-box").hidden = true;
}

/** A history entry: its first question, when it was last asked in (local), its turns. */
function historyLabel(c) {
  var title = c.title.length > 28 ? c.title.slice(0, 28) + "…" : c.title;
  return title + " · " + fmtShortTime(c.updated_at || c.created_at) + " · " + c.turns + " 轮";
}

/** This key's conversations, latest first, in the 历史对话 list (the current one selected). */
function loadHistory() {
  return api("/api/conversations").then(function (body) {
    var list = (body && body.conversations) || [];
    var select = $("chat-history");
    clear(select);
    select.appendChild(el("option", { value: "", text: "历史对话 (" + list.length + ")" }));
    list.forEach(function (c) {
      select.appendChild(el("option", {
        value: c.conversation_id, text: historyLabel(c), title: c.title,
        "data-testid": "history-entry",
      }));
    });
    select.value = conversation.id || "";
    select.hidden = !list.length;
  }, function () { $("chat-history").hidden = true; });
}

/** Reopen a past conversation: every turn with its answer, its collection chosen in 知识范围
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
      turns: turns.map(function (t) {
        return { question: t.question, resolved: t.resolved_question, answer: t.answer, scope: null };
      }),
      collection: chosen || null,
    };
    if (chosen !== before) loadDocs();
    $("ask-status").textContent = wanted && chosen !== wanted
      ? "该对话的集合「" + wanted + "」已不存在：显示全部文档。" : "";
    showError($("ask-error"), "", null);
    $("ask-input").value = "";
    restoreLatest();
    scrollToLatest();
  }, function (err) { showError($("ask-error"), "无法打开对话：", err); });
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
    function (err) { showError($("feedback-status"), "反馈失败：", err); }
  );
}

function setupConversation(renderAnswer, openCitation) {
  render = renderAnswer;
  cite = openCitation;
  $("new-chat").addEventListener("click", function () { newConversation(); });
  $("chat-history").addEventListener("change", function (e) { openConversation(e.target.value); });
  $("feedback-up").addEventListener("click", function () { sendFeedback("up"); });
  $("feedback-down").addEventListener("click", function () { sendFeedback("down"); });
  $("feedback-correct").addEventListener("click", correctLatest);
  setupAnnotate(function (text) { show($("feedback-status"), text); });
}

export {
  conversationBody, currentConversation, loadHistory, newConversation, recordTurn, restoreLatest,
  setupConversation, showPending,
};
