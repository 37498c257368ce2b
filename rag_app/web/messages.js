/* Errors in Chinese: what a failed request means as a sentence a reader understands (errText),
 * the server's own words (English, technical) kept apart as a smaller line (errDetail,
 * showError). Known server messages get their own sentence (naming the file type, the limit,
 * the collection); any other falls back to its HTTP status's sentence.
 */

import { el, clear } from "./dom.js";

// [pattern of the server's detail, its sentence ($1.. from the pattern)]
var KNOWN = [
  [/^unsupported file type '([^']*)'/i, "不支持此文件类型（$1）。支持 Markdown、TXT、HTML、PDF、Word、Excel、CSV、PowerPoint。"],
  [/^unsupported file type/i, "不支持此文件类型（没有扩展名）。"],
  [/^empty file$/i, "文件是空的。"],
  [/^file too large: more than ([\d.]+) MB/i, "文件过大：超过上传上限 $1 MB。"],
  [/^file too large/i, "文件过大，超过服务器允许的大小。"],
  [/^request body too large/i, "请求内容过大。"],
  [/^content is not an? \.?(\w+)/i, "文件内容与扩展名不符：不是有效的 $1 文件。"],
  [/^the upload has no usable file name/i, "文件名无效，请改名后再上传。"],
  [/^the same content was already uploaded/i, "相同内容的文件已经上传过。"],
  [/^a document of this name exists that this key may not change/i,
    "已有同名文档，且此 key 无权修改它：请改名后再上传。"],
  [/^the document's stored file is gone/i, "该文档的原始文件已不存在，请重新上传。"],
  [/^no document /i, "找不到该文档（可能已被删除）。"],
  [/^no conversation /i, "找不到该对话（可能已被删除）。"],
  [/^no turn /i, "找不到该轮对话。"],
  [/^missing API key/i, "缺少 API key：请先粘贴并保存。"],
  [/^invalid or revoked API key/i, "API key 无效或已被吊销。"],
  [/^role '(\w+)' cannot change documents/i, "只读 key（$1）不能修改文档。"],
  [/^this key may not use collection '(.*)'$/i, "此 key 无权使用集合「$1」。"],
  [/^this key is limited to several collections/i, "此 key 限于多个集合：请先在“知识范围”中选择一个。"],
  [/^no collection '(.*)'$/i, "集合「$1」不存在（可能已被删除）。"],
  [/^collection '(.*)' exists$/i, "集合「$1」已存在，请换一个名称。"],
  [/^a collection needs a name/i, "集合名称不能为空。"],
  [/^a collection name has at most (\d+) characters/i, "集合名称最多 $1 个字符。"],
  [/^a collection name may not contain/i, "集合名称不能包含 /、\\ 或控制字符。"],
  [/^(question|query) is empty/i, "问题不能为空。"],
  [/^no current chunk /i, "所选来源已不存在（文档可能已重新解析或删除），或此 key 无权读取：请重新选择来源。"],
  [/^give the answer, or should_refuse/i, "请填写正确答案，或勾选“应拒答”。"],
  [/^give the question/i, "请填写问题。"],
  [/^this key is limited to some collections: name one/i, "此 key 限于部分集合：请先在“知识范围”中选择一个集合。"],
  [/^no annotation /i, "找不到该标注（可能已被删除）。"],
  [/^send a JSON body/i, "请求格式有误。"],
];

// What an HTTP status means, as a sentence (when the server's message is not one of the above).
var STATUS_SENTENCE = {
  400: "请求格式有误。",
  401: "API key 无效或缺失，请检查后重新保存。",
  403: "权限不足：此 key 不能执行该操作。",
  404: "未找到所请求的内容（可能已被删除）。",
  408: "上传超时，请重新发送。",
  409: "与现有内容冲突。",
  413: "内容过大，超过服务器的上限。",
  415: "不支持此文件类型。",
  422: "请求内容无效。",
  429: "请求过于频繁，请稍后再试。",
  500: "服务器内部错误，请稍后再试。",
  502: "服务暂不可用，请稍后再试。",
  503: "服务暂不可用，请稍后再试。",
  504: "服务响应超时，请稍后再试。",
};

// bodies that only repeat the status line ("Internal Server Error") say nothing more
var GENERIC_DETAIL = /^(HTTP \d+|internal (server )?error|bad gateway|service unavailable|gateway timeout|not found)$/i;

function detailOf(err) {
  return String((err && err.detail) || "").trim();
}

/** The error as a Chinese sentence (no English, no status code). */
function errText(err) {
  if (!err || err.status === undefined) return String(err && err.message ? err.message : err);
  if (err.words) return err.words; // said in Chinese where it was made (network, a cut stream)
  if (!err.status) return detailOf(err);
  var known = sentence(KNOWN, detailOf(err));
  if (known) return known;
  return STATUS_SENTENCE[err.status] || (err.status >= 500 ? "服务器出错，请稍后再试。" : "请求失败。");
}

// A document that failed to parse: its reader's message (English) as a sentence.
var PARSE_FAILURES = [
  [/^encrypted PDF/i, "PDF 已加密，需要密码才能打开。"],
  [/^PDF has no extractable text \(scanned/i, "PDF 中没有可提取的文字（可能是扫描件，OCR 未开启）。"],
  [/^PDF has no pages/i, "PDF 没有页面。"],
  [/^PDF has (\d+) pages \(limit (\d+)\)/i, "PDF 共 $1 页，超过上限 $2 页。"],
  [/^PDF text extraction failed/i, "PDF 文字提取失败（文件可能已损坏）。"],
  [/no extractable text|no text content|^empty (document|presentation|workbook|file)|no indexable text/i,
    "文件中没有可读取的文字。"],
  [/^cannot decode text/i, "无法识别文字编码（已尝试 UTF-8、GB18030、UTF-16）。"],
  [/^not a legacy \.(\w+) file/i, "不是有效的旧版 .$1 文件。"],
  [/^not a valid (\.?\w+) file/i, "不是有效的 $1 文件（可能已损坏，或扩展名与内容不符）。"],
  [/^binary content in a (\.?\w+) file/i, "$1 文件中含有二进制内容，不能作为文本读取。"],
  [/^parse exceeded ([\d.]+) s/i, "解析超时（超过 $1 秒）。"],
  [/^parse ran out of memory/i, "解析时内存不足。"],
  [/^could not start LibreOffice/i, "无法启动 LibreOffice 转换旧版 Office 文件。"],
  [/^unsupported file type/i, "不支持此文件类型。"],
  [/^file too large/i, "文件过大。"],
  [/^(file not found|cannot (access|read)|permission denied|not a (regular )?file)/i,
    "无法读取已存储的文件，请重新上传。"],
];

function sentence(table, text) {
  for (var i = 0; i < table.length; i++) {
    var m = table[i][0].exec(text);
    if (m) return table[i][1].replace(/\$(\d)/g, function (_, n) { return m[Number(n)] || ""; });
  }
  return "";
}

/** Why a document failed to parse, as a Chinese sentence ("解析失败。" when not known). */
function parseErrText(message) {
  return sentence(PARSE_FAILURES, String(message || "").trim()) || "解析失败。";
}

/** The technical line: the status and the server's own message ("" when it says nothing). */
function errDetail(err) {
  if (!err || err.status === undefined) return "";
  var detail = detailOf(err);
  if (!err.status) return err.words && detail ? detail : "";
  return "HTTP " + err.status + (detail && !GENERIC_DETAIL.test(detail) ? " · " + detail : "");
}

/** `lead` + the sentence in `node`, the technical line under it in small type; "" hides it. */
function showError(node, lead, err) {
  clear(node);
  if (!err) {
    node.hidden = !lead;
    if (lead) node.textContent = lead;
    return;
  }
  node.appendChild(el("span", { class: "err-main", text: (lead || "") + errText(err) }));
  var detail = errDetail(err);
  if (detail) node.appendChild(el("span", { class: "err-detail", "data-testid": "err-detail", text: detail }));
  node.hidden = false;
}

export { errText, errDetail, parseErrText, showError };
