/* Markdown of chunk text rendered as DOM nodes (never innerHTML): headings, paragraphs, lists,
 * quotes, fenced code, GFM tables, **strong**, *em*, `code`, [links](https://...).
 *
 * Every rendered piece keeps its character range in the source text, so a range given by the
 * server (a cited sentence, list item or table row; a repeated header) is marked where it lies:
 * a cited table row gets class "cited" on its <tr>, a cited sentence a <mark class="cited">,
 * repeated text (prefix/suffix) class "repeat". Server offsets count code points (Python);
 * unitIndex() turns them into the UTF-16 indices JavaScript strings use.
 */
(function (root) {
  "use strict";

  // ---------------------------------------------------------------- parse (pure)

  /** Lines of text as {from, to} (to: the index of the line's "\n" or the text's end). */
  function splitLines(text) {
    var out = [];
    var from = 0;
    while (from <= text.length) {
      var nl = text.indexOf("\n", from);
      var to = nl === -1 ? text.length : nl;
      out.push({ from: from, to: to, s: text.slice(from, to) });
      if (nl === -1) break;
      from = nl + 1;
    }
    return out;
  }

  var HEADING = /^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$/;
  var FENCE = /^ {0,3}(```+|~~~+)/;
  var TABLE_LINE = /^\s*\|/;
  var SEPARATOR = /^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$/;
  var ITEM = /^(\s*)([-*+]|\d{1,9}[.)])[ \t]+/;
  var QUOTE = /^ {0,3}>[ \t]?/;
  var RULE = /^ {0,3}([-*_])([ \t]*\1){2,}[ \t]*$/;

  /** Cells of a table line as [from, to] ranges (trimmed, without the pipes). */
  function tableCells(line) {
    var s = line.s;
    var cells = [];
    var start = s.indexOf("|") + 1;
    for (var i = start; i <= s.length; i++) {
      if (i < s.length && !(s[i] === "|" && s[i - 1] !== "\\")) continue;
      var a = start;
      var b = i;
      while (a < b && /\s/.test(s[a])) a++;
      while (b > a && /\s/.test(s[b - 1])) b--;
      if (i < s.length || a < b) cells.push([line.from + a, line.from + b]);
      start = i + 1;
    }
    return cells;
  }

  /** Blocks of text: {type, from, to, ...} with every piece of content as a [from, to] range. */
  function parse(text) {
    var lines = splitLines(String(text || ""));
    var blocks = [];
    var i = 0;
    function blank(k) {
      return k < lines.length && !lines[k].s.trim();
    }
    function starts(k) {
      var s = lines[k].s;
      return HEADING.test(s) || FENCE.test(s) || TABLE_LINE.test(s) || ITEM.test(s) ||
        QUOTE.test(s) || RULE.test(s);
    }
    while (i < lines.length) {
      var line = lines[i];
      var s = line.s;
      var m;
      if (!s.trim()) {
        i++;
      } else if ((m = HEADING.exec(s))) {
        var a = line.from + s.indexOf(m[2], m[1].length);
        blocks.push({ type: "heading", level: m[1].length, from: line.from, to: line.to,
          parts: [[a, a + m[2].length]] });
        i++;
      } else if ((m = FENCE.exec(s))) {
        var fence = m[1];
        var j = i + 1;
        while (j < lines.length && lines[j].s.trim().indexOf(fence) !== 0) j++;
        var body = j > i + 1 ? [lines[i + 1].from, lines[j - 1].to] : [line.to, line.to];
        var end = j < lines.length ? lines[j].to : lines[lines.length - 1].to;
        blocks.push({ type: "code", from: line.from, to: end, parts: [body] });
        i = j + 1;
      } else if (TABLE_LINE.test(s)) {
        var rows = [];
        var hasHeader = i + 1 < lines.length && SEPARATOR.test(lines[i + 1].s);
        var k = i;
        while (k < lines.length && TABLE_LINE.test(lines[k].s)) {
          if (!(k === i + 1 && hasHeader)) {
            rows.push({ header: hasHeader && k === i, from: lines[k].from, to: lines[k].to,
              cells: tableCells(lines[k]) });
          }
          k++;
        }
        blocks.push({ type: "table", from: line.from, to: lines[k - 1].to, rows: rows });
        i = k;
      } else if (ITEM.test(s)) {
        var ordered = /\d/.test(ITEM.exec(s)[2]);
        var items = [];
        while (i < lines.length && (m = ITEM.exec(lines[i].s)) && /\d/.test(m[2]) === ordered) {
          var item = { from: lines[i].from, to: lines[i].to, depth: Math.floor(m[1].length / 2),
            parts: [[lines[i].from + m[0].length, lines[i].to]] };
          i++;
          // lazy continuation lines belong to the item
          while (i < lines.length && !blank(i) && !starts(i)) {
            item.parts.push([lines[i].from, lines[i].to]);
            item.to = lines[i].to;
            i++;
          }
          items.push(item);
        }
        blocks.push({ type: "list", ordered: ordered, from: items[0].from,
          to: items[items.length - 1].to, items: items });
      } else if (QUOTE.test(s)) {
        var parts = [];
        var first = i;
        while (i < lines.length && (m = QUOTE.exec(lines[i].s))) {
          parts.push([lines[i].from + m[0].length, lines[i].to]);
          i++;
        }
        blocks.push({ type: "quote", from: lines[first].from, to: lines[i - 1].to, parts: parts });
      } else if (RULE.test(s)) {
        blocks.push({ type: "rule", from: line.from, to: line.to });
        i++;
      } else {
        var para = [];
        var p0 = i;
        while (i < lines.length && !blank(i) && (i === p0 || !starts(i))) {
          para.push([lines[i].from, lines[i].to]);
          i++;
        }
        blocks.push({ type: "para", from: lines[p0].from, to: lines[i - 1].to, parts: para });
      }
    }
    return blocks;
  }

  var INLINE = /(`+)([^`\n]+?)\1|\*\*(?=\S)([^\n]*?\S)\*\*|\*([^\s*](?:[^*\n]*?[^\s*])?)\*|\[([^\]\n]+)\]\(([^)\s]+)\)/g;

  /** Inline tokens of text[from:to]: {type: text|code|strong|em|link, from, to, href?}. */
  function inline(text, from, to) {
    var s = text.slice(from, to);
    var out = [];
    var last = 0;
    var m;
    INLINE.lastIndex = 0;
    while ((m = INLINE.exec(s)) !== null) {
      if (m.index > last) out.push({ type: "text", from: from + last, to: from + m.index });
      var at = from + m.index;
      if (m[2] !== undefined) {
        var open = at + m[1].length;
        out.push({ type: "code", from: open, to: open + m[2].length });
      } else if (m[3] !== undefined) out.push({ type: "strong", from: at + 2, to: at + 2 + m[3].length });
      else if (m[4] !== undefined) out.push({ type: "em", from: at + 1, to: at + 1 + m[4].length });
      else out.push({ type: "link", from: at + 1, to: at + 1 + m[5].length, href: m[6] });
      last = m.index + m[0].length;
    }
    if (last < s.length) out.push({ type: "text", from: from + last, to: to });
    return out;
  }

  /** [from, to) cut at every mark's edges: {from, to, kinds: {repeat: true, cite: true}}. */
  function pieces(from, to, marks) {
    var cuts = [from, to];
    marks.forEach(function (mk) {
      if (mk.from > from && mk.from < to) cuts.push(mk.from);
      if (mk.to > from && mk.to < to) cuts.push(mk.to);
    });
    cuts.sort(function (x, y) { return x - y; });
    var out = [];
    for (var i = 0; i + 1 < cuts.length; i++) {
      var a = cuts[i];
      var b = cuts[i + 1];
      if (a === b) continue;
      var kinds = {};
      marks.forEach(function (mk) {
        if (mk.from <= a && mk.to >= b) kinds[mk.kind] = true;
      });
      out.push({ from: a, to: b, kinds: kinds });
    }
    return out;
  }

  /** Code point offset -> UTF-16 index, for offsets counted by the server (Python). */
  function unitIndex(text, codePoint) {
    var n = Math.max(0, Number(codePoint) || 0);
    if (!/[\uD800-\uDFFF]/.test(text)) return Math.min(n, text.length);
    var unit = 0;
    for (var cp = 0; cp < n && unit < text.length; cp++) {
      var c = text.charCodeAt(unit);
      unit += c >= 0xd800 && c <= 0xdbff && unit + 1 < text.length ? 2 : 1;
    }
    return unit;
  }

  function overlaps(a, b) {
    return a.from < b.to && b.from < a.to;
  }

  // ---------------------------------------------------------------- render (DOM)

  /**
   * render(text, {prefix, suffix, cites: [{from, to, kind}]}) -> <div class="md">.
   * prefix / suffix: repeated characters at the start / end; cites: cited ranges (code points).
   */
  function render(text, opts) {
    text = String(text || "");
    opts = opts || {};
    var pre = unitIndex(text, opts.prefix);
    var codePoints = Array.from(text).length;
    var suf = text.length - unitIndex(text, Math.max(0, codePoints - (Number(opts.suffix) || 0)));
    var repeat = [];
    if (pre > 0) repeat.push({ from: 0, to: pre, kind: "repeat" });
    if (suf > 0) repeat.push({ from: text.length - suf, to: text.length, kind: "repeat" });
    var cites = (opts.cites || []).map(function (c) {
      return { from: unitIndex(text, c.start), to: unitIndex(text, c.end), kind: "cite", row: c.kind === "row" };
    });
    var blocks = parse(text);
    var rows = [];
    blocks.forEach(function (b) { if (b.type === "table") rows = rows.concat(b.rows); });
    // a cited row lights its <tr>; a row citation outside any table is marked inline
    var rowCites = cites.filter(function (c) {
      return c.row && rows.some(function (r) { return overlaps(r, c); });
    });
    var marks = repeat.concat(cites.filter(function (c) { return rowCites.indexOf(c) === -1; }));

    function textInto(parent, from, to) {
      pieces(from, to, marks).forEach(function (p) {
        var node = document.createTextNode(text.slice(p.from, p.to));
        if (p.kinds.repeat) node = wrap("span", "repeat", node);
        if (p.kinds.cite) {
          node = wrap("mark", "cited", node);
          node.setAttribute("data-testid", "cited-text");
        }
        parent.appendChild(node);
      });
    }
    function inlineInto(parent, from, to) {
      inline(text, from, to).forEach(function (t) {
        if (t.type === "text") return textInto(parent, t.from, t.to);
        var tag = { code: "code", strong: "strong", em: "em", link: "a" }[t.type];
        var node = document.createElement(tag);
        if (t.type === "link") {
          node.title = t.href;
          if (/^https?:\/\//i.test(t.href)) {
            node.setAttribute("href", t.href);
            node.setAttribute("target", "_blank");
            node.setAttribute("rel", "noopener noreferrer");
          }
        }
        textInto(node, t.from, t.to);
        parent.appendChild(node);
      });
    }
    function partsInto(parent, parts) {
      parts.forEach(function (p, i) {
        if (i) parent.appendChild(document.createTextNode("\n"));
        inlineInto(parent, p[0], p[1]);
      });
      return parent;
    }
    function isRepeat(r) {
      return repeat.some(function (x) { return x.from <= r.from && x.to >= r.to; });
    }

    var out = document.createElement("div");
    out.className = "md";
    blocks.forEach(function (b) {
      var node;
      if (b.type === "heading") node = partsInto(document.createElement("h" + b.level), b.parts);
      else if (b.type === "para") node = partsInto(document.createElement("p"), b.parts);
      else if (b.type === "quote") node = partsInto(document.createElement("blockquote"), b.parts);
      else if (b.type === "rule") node = document.createElement("hr");
      else if (b.type === "code") {
        node = document.createElement("pre");
        var code = document.createElement("code");
        textInto(code, b.parts[0][0], b.parts[0][1]);
        node.appendChild(code);
      } else if (b.type === "list") {
        node = document.createElement(b.ordered ? "ol" : "ul");
        b.items.forEach(function (it) {
          var li = partsInto(document.createElement("li"), it.parts);
          if (it.depth) li.className = "depth-" + Math.min(it.depth, 4);
          node.appendChild(li);
        });
      } else if (b.type === "table") {
        node = tableNode(b);
      }
      if (isRepeat(b)) node.classList.add("repeat-block");
      out.appendChild(node);
    });
    return out;

    function tableNode(b) {
      var wrapDiv = document.createElement("div");
      wrapDiv.className = "md-table";
      var table = document.createElement("table");
      var width = Math.max.apply(null, b.rows.map(function (r) { return r.cells.length; }).concat([1]));
      var thead = null;
      var tbody = document.createElement("tbody");
      b.rows.forEach(function (r) {
        var tr = document.createElement("tr");
        if (rowCites.some(function (c) { return overlaps(r, c); })) {
          tr.classList.add("cited");
          tr.setAttribute("data-testid", "cited-row");
        }
        if (isRepeat(r)) tr.classList.add("repeat");
        for (var k = 0; k < width; k++) {
          var cell = document.createElement(r.header ? "th" : "td");
          if (k < r.cells.length) inlineInto(cell, r.cells[k][0], r.cells[k][1]);
          tr.appendChild(cell);
        }
        if (r.header) {
          thead = thead || document.createElement("thead");
          thead.appendChild(tr);
        } else tbody.appendChild(tr);
      });
      if (thead) table.appendChild(thead);
      table.appendChild(tbody);
      wrapDiv.appendChild(table);
      return wrapDiv;
    }
  }

  function wrap(tag, cls, child) {
    var node = document.createElement(tag);
    node.className = cls;
    node.appendChild(child);
    return node;
  }

  var api = { parse: parse, inline: inline, pieces: pieces, unitIndex: unitIndex, render: render };
  if (typeof module !== "undefined" && module.exports) module.exports = api;
  else root.RagMarkdown = api;
})(typeof window !== "undefined" ? window : this);
