/* The API client and the key's identity: the page state, fetch with the Bearer key, errors in
 * words, answers streamed as server-sent events (apiStream, sseParser), /api/me (tenant, role,
 * the collections a key is limited to, and what it may do), /api/health.
 */

import { $, el, append, clear, show } from "./dom.js";
import { errText, errDetail, showError } from "./messages.js";

var ACTIVE = { PENDING: true, PROCESSING: true };

var state = {
  key: "",
  me: null, // {tenant, role, key_id, collections: the names a key is limited to, null: all}
  docs: [],
  rows: {}, // doc_id -> <tr>
  pollTimer: null,
  loadSeq: 0,
  chunkDocId: null,
  selected: {}, // doc_id -> filename: ask only within these documents (doc_ids)
  collections: [], // [{name, documents, created_at}]: the key's collections
  collection: "", // the chosen one (知识范围): the question's scope, the list, uploads; "": all
  showAllDocs: false, // with a collection chosen: list every document (to add some to it)
  authStatus: 0, // the HTTP status of the last rejected key check (401, 403; 0: none)
};

// ---------------------------------------------------------------- API

/** A failed request: its HTTP status (0: none came), the server's detail (its own words), the
 * body; `words`: the failure in Chinese, where it was made here (no connection, a cut stream). */
function ApiError(status, detail, body, words) {
  this.status = status;
  this.detail = detail;
  this.body = body;
  this.words = words || "";
  this.message = words || detail;
}

function detailText(body, status) {
  if (body && body.detail !== undefined) {
    var d = body.detail;
    if (typeof d === "string") return d;
    if (Array.isArray(d)) {
      // FastAPI validation errors: [{loc, msg, type}, ...]
      return d.map(function (e) {
        if (e && typeof e === "object") {
          var loc = Array.isArray(e.loc) ? e.loc.join(".") + ": " : "";
          return loc + (e.msg || JSON.stringify(e));
        }
        return String(e);
      }).join("; ");
    }
    return JSON.stringify(d);
  }
  return "HTTP " + status;
}

function request(path, opts) {
  var headers = {};
  if (state.key) headers["Authorization"] = "Bearer " + state.key;
  var init = { method: opts.method || "GET", headers: headers };
  if (opts.json !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(opts.json);
  } else if (opts.form) {
    init.body = opts.form; // the browser sets the multipart boundary
  }
  return fetch(path, init).then(null, function (netErr) {
    throw new ApiError(0, netErr.message, null, "无法连接服务：请检查网络，或服务是否在运行。");
  });
}

/** A response's text as JSON (or its first 300 characters as the detail); an ApiError if the
 * status is not 2xx. */
function jsonBody(resp, opts) {
  return resp.text().then(function (raw) {
    var body = null;
    if (raw) {
      try { body = JSON.parse(raw); } catch (e) { body = { detail: raw.slice(0, 300) }; }
    }
    if (!resp.ok) {
      var err = new ApiError(resp.status, detailText(body, resp.status), body);
      // quiet: the caller shows a 403 itself (no page-wide banner)
      if (resp.status === 401 || (resp.status === 403 && !opts.quiet)) noteAuthError(err);
      throw err;
    }
    return body;
  });
}

function api(path, opts) {
  opts = opts || {};
  return request(path, opts).then(function (resp) { return jsonBody(resp, opts); });
}

// ---------------------------------------------------------------- streamed answers

/** Server-sent events from text that arrives in pieces: push(text) as it comes (an event, a
 * line, even a CR LF may be split anywhere), end() when it stops; onEvent(name, data) for each
 * complete event (data: its data lines joined by "\n"; name: "message" when it has none). */
function sseParser(onEvent) {
  var buf = "";
  var skipLF = false; // the piece before ended in CR: a LF starting this one belongs to it
  var name = "";
  var data = null;

  function line(s) {
    if (s === "") { // a blank line ends the event
      if (data !== null) onEvent(name || "message", data.join("\n"));
      name = "";
      data = null;
      return;
    }
    if (s.charAt(0) === ":") return; // a comment (a keep-alive)
    var at = s.indexOf(":");
    var field = at === -1 ? s : s.slice(0, at);
    var value = at === -1 ? "" : s.slice(at + 1);
    if (value.charAt(0) === " ") value = value.slice(1);
    if (field === "event") name = value;
    else if (field === "data") (data = data || []).push(value);
  }

  return {
    push: function (text) {
      buf += text;
      if (skipLF && buf) {
        if (buf.charAt(0) === "\n") buf = buf.slice(1);
        skipLF = false;
      }
      var start = 0;
      for (var i = 0; i < buf.length; i++) {
        var c = buf.charAt(i);
        if (c !== "\n" && c !== "\r") continue;
        line(buf.slice(start, i));
        if (c === "\r") {
          if (i + 1 === buf.length) skipLF = true;
          else if (buf.charAt(i + 1) === "\n") i++;
        }
        start = i + 1;
      }
      buf = buf.slice(start);
    },
    end: function () {
      if (buf) line(buf);
      buf = "";
      line(""); // an event not closed by a blank line still counts
    },
  };
}

/** Whether this browser can read a response as it arrives (fetch with a readable body). */
function canStream() {
  return typeof ReadableStream !== "undefined" && typeof TextDecoder !== "undefined" &&
    typeof Response !== "undefined" && "body" in Response.prototype;
}

/** POST `json` with stream: true: onDelta(text, sofar) for each piece of the answer as it is
 * written; resolves with the `answer` event's response (the text that counts), rejects with an
 * ApiError for an HTTP error (JSON, as api()), an `error` event, or a stream cut short. */
function apiStream(path, json, onDelta, opts) {
  opts = opts || {};
  var body = Object.assign({}, json, { stream: true });
  return request(path, { method: "POST", json: body }).then(function (resp) {
    var type = (resp.headers.get("Content-Type") || "").toLowerCase();
    if (!resp.ok || type.indexOf("text/event-stream") === -1) return jsonBody(resp, opts);
    var answer = null, failure = null, sofar = "";
    var parser = sseParser(function (name, data) {
      var payload;
      try { payload = JSON.parse(data); } catch (e) { return; }
      if (name === "delta" && answer === null && failure === null) {
        sofar += String((payload && payload.text) || "");
        if (onDelta) onDelta(String((payload && payload.text) || ""), sofar);
      } else if (name === "answer") {
        answer = payload;
      } else if (name === "error") {
        var status = (payload && payload.status) || 500;
        failure = new ApiError(status, detailText(payload, status), payload);
      }
    });
    function settle() {
      parser.end();
      if (failure) throw failure;
      if (answer === null) {
        throw new ApiError(0, "stream ended early", null, "回答未完整返回：连接中断，请重试。");
      }
      return answer;
    }
    if (!resp.body || typeof resp.body.getReader !== "function") {
      return resp.text().then(function (raw) { parser.push(raw); return settle(); });
    }
    var reader = resp.body.getReader();
    var decoder = new TextDecoder("utf-8");
    function next() {
      return reader.read().then(function (chunk) {
        if (chunk.done) {
          parser.push(decoder.decode());
          return settle();
        }
        parser.push(decoder.decode(chunk.value, { stream: true }));
        return next();
      }, function (netErr) {
        throw new ApiError(0, netErr.message, null, "回答未完整返回：连接中断，请重试。");
      });
    }
    return next();
  });
}

function noteAuthError(err) {
  if (err.status === 401 && !state.key) showError($("auth-error"), "请先粘贴 API key 并保存。", null);
  else showError($("auth-error"), "", err);
  if (err.status === 401) {
    state.me = null;
    renderWhoami();
  }
}

// ---------------------------------------------------------------- key + identity

function canEdit() {
  return !!(state.me && state.me.role === "editor");
}

/** A key limited to some collections (/api/me's collections): it manages none of them. */
function isLimited() {
  return !!(state.me && Array.isArray(state.me.collections));
}

function renderWhoami() {
  var who = $("whoami");
  clear(who);
  who.className = "whoami";
  if (!state.key) {
    who.classList.add("muted");
    who.textContent = "未设置 key";
  } else if (!state.me) {
    who.classList.add("muted");
    who.textContent = "未验证";
  } else {
    append(
      who,
      el("span", { class: "tenant", "data-testid": "whoami-tenant", text: state.me.tenant }),
      " · ",
      el("span", {
        class: "role role-" + state.me.role,
        "data-testid": "whoami-role",
        text: state.me.role === "editor" ? "editor 编辑" : "reader 只读",
      }),
      // short: the selector lists them; the names in the tooltip
      isLimited() ? el("span", {
        class: "limited muted", "data-testid": "whoami-collections",
        title: "此 key 仅限集合：" + (state.me.collections.join("、") || "（无）"),
        text: " · 限 " + state.me.collections.length + " 个集合",
      }) : null
    );
    who.title = "key_id: " + (state.me.key_id || "");
  }
  applyRole();
}

function applyRole() {
  var edit = canEdit();
  var dz = $("dropzone");
  dz.classList.toggle("disabled", !edit);
  dz.setAttribute("aria-disabled", edit ? "false" : "true");
  dz.title = edit ? "" : "上传需要 editor 角色";
  $("dz-hint").textContent = edit
    ? "Markdown / TXT / HTML / PDF / DOCX / XLSX / CSV / PPTX"
    : state.me
      ? "只读 key（reader）：上传、重新解析、删除需要 editor 角色"
      : "保存有效的 API key 后可上传";
  $("upload-input").disabled = !edit;
  Object.keys(state.rows).forEach(function (id) { applyRowRole(state.rows[id]); });
}

function applyRowRole(tr) {
  var edit = canEdit();
  var busy = !!ACTIVE[tr.getAttribute("data-status")];
  tr.querySelectorAll("button.edit-only").forEach(function (b) {
    b.disabled = !edit;
    b.title = edit ? "" : "需要 editor 角色";
  });
  if (edit && busy) {
    var rp = tr.querySelector("[data-testid=reparse-button]");
    rp.disabled = true;
    rp.title = "处理中";
  }
}

function loadMe() {
  if (!state.key) {
    state.me = null;
    renderWhoami();
    show($("auth-error"), "请先粘贴 API key 并保存。");
    return Promise.resolve(null);
  }
  return api("/api/me").then(
    function (me) {
      state.me = me;
      state.authStatus = 0;
      show($("auth-error"), "");
      renderWhoami();
      return me;
    },
    function (err) {
      state.me = null;
      state.authStatus = err.status || 0;
      renderWhoami();
      if (err.status !== 401 && err.status !== 403) showError($("auth-error"), "", err);
      return null;
    }
  );
}

function loadHealth() {
  fetch("/api/health").then(function (r) { return r.json(); }).then(
    function (h) {
      var q = h.queue || {}, w = h.workers || {};
      $("health").textContent =
        "v" + (h.version || "?") + " · " + (h.embedding || "?") +
        " · 队列 " + (q.pending || 0) + " 待处理 / " + (q.processing || 0) + " 处理中" +
        (w.configured ? (w.mode === "threads" ? " · 工作线程 " : " · 工作进程 ") + w.alive +
          "/" + w.configured + (w.restarts ? "（重启 " + w.restarts + " 次）" : "") : "");
    },
    function () { $("health").textContent = "服务不可达"; }
  );
}

export {
  ACTIVE, state, ApiError, api, apiStream, canStream, sseParser, errText, errDetail, showError,
  canEdit, isLimited, renderWhoami, applyRowRole, loadMe, loadHealth,
};
