""".docx files with Word's automatic numbering, notes and text boxes, built for the reader tests.

python-docx writes paragraphs, styles, tables and headers but no numbering definitions, notes or
text boxes: those are written here as raw WordprocessingML (numbering.xml, footnotes.xml, a
``w:drawing``/VML text box) and spliced into the package python-docx saved.
"""

from __future__ import annotations

import io
import zipfile
from typing import Any

W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
NS = (
    f'xmlns:w="{W_NS}" '
    'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" '
    'xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape" '
    'xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" '
    'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
    'xmlns:v="urn:schemas-microsoft-com:vml"'
)


def lvl(
    ilvl: int,
    fmt: str,
    text: str,
    *,
    start: int = 1,
    pstyle: str | None = None,
    suff: str | None = None,
    restart: int | None = None,
    legal: bool = False,
) -> str:
    parts = [f'<w:lvl w:ilvl="{ilvl}"><w:start w:val="{start}"/><w:numFmt w:val="{fmt}"/>']
    if restart is not None:
        parts.append(f'<w:lvlRestart w:val="{restart}"/>')
    if pstyle:
        parts.append(f'<w:pStyle w:val="{pstyle}"/>')
    if legal:
        parts.append("<w:isLgl/>")
    if suff:
        parts.append(f'<w:suff w:val="{suff}"/>')
    parts.append(f'<w:lvlText w:val="{text}"/></w:lvl>')
    return "".join(parts)


def abstract(abstract_id: int, *levels: str, num_style_link: str | None = None) -> str:
    link = f'<w:numStyleLink w:val="{num_style_link}"/>' if num_style_link else ""
    return f'<w:abstractNum w:abstractNumId="{abstract_id}">{link}{"".join(levels)}</w:abstractNum>'


def num(num_id: int, abstract_id: int, start_overrides: dict[int, int] | None = None) -> str:
    overrides = "".join(
        f'<w:lvlOverride w:ilvl="{ilvl}"><w:startOverride w:val="{start}"/></w:lvlOverride>'
        for ilvl, start in (start_overrides or {}).items()
    )
    return f'<w:num w:numId="{num_id}"><w:abstractNumId w:val="{abstract_id}"/>{overrides}</w:num>'


def numbering_xml(*parts: str) -> bytes:
    """A numbering part: the abstract numberings first, then the nums, as Word orders them."""
    abstracts = [p for p in parts if p.startswith("<w:abstractNum")]
    nums = [p for p in parts if not p.startswith("<w:abstractNum")]
    body = "".join(abstracts + nums)
    return f'<?xml version="1.0" encoding="UTF-8"?><w:numbering {NS}>{body}</w:numbering>'.encode()


def num_pr(num_id: int | None, ilvl: int | None = None) -> str:
    inner = (f'<w:ilvl w:val="{ilvl}"/>' if ilvl is not None else "") + (
        f'<w:numId w:val="{num_id}"/>' if num_id is not None else ""
    )
    return f"<w:numPr {NS}>{inner}</w:numPr>"


def number(paragraph: Any, num_id: int | None, ilvl: int | None = 0) -> Any:
    """Number a python-docx paragraph directly (``w:pPr/w:numPr``)."""
    from docx.oxml import parse_xml

    paragraph._p.get_or_add_pPr().append(parse_xml(num_pr(num_id, ilvl)))
    return paragraph


def style_numbering(style: Any, num_id: int, ilvl: int | None = None) -> None:
    """Give a python-docx paragraph style a ``w:numPr`` (numbering through the style)."""
    from docx.oxml import parse_xml

    style.element.get_or_add_pPr().append(parse_xml(num_pr(num_id, ilvl)))


def add_raw(document: Any, xml: str) -> None:
    """Append raw body XML (namespaces of :data:`NS` declared) before the section properties."""
    from docx.oxml import parse_xml

    body = document.element.body
    body.insert(len(body) - 1, parse_xml(xml))


def text_box_paragraph(anchor: str, box: str, *, fallback: bool = True) -> str:
    """A paragraph with text ``anchor`` and a text box holding ``box``: DrawingML in
    ``mc:Choice`` plus the VML copy in ``mc:Fallback`` (as Word saves it), or VML alone."""
    inner = f"<w:txbxContent><w:p><w:r><w:t>{box}</w:t></w:r></w:p></w:txbxContent>"
    vml = f"<w:pict><v:shape><v:textbox>{inner}</v:textbox></v:shape></w:pict>"
    drawing = (
        "<w:drawing><wp:anchor><a:graphic><a:graphicData><wps:wsp><wps:txbx>"
        f"{inner}</wps:txbx></wps:wsp></a:graphicData></a:graphic></wp:anchor></w:drawing>"
    )
    shape = (
        f'<mc:AlternateContent><mc:Choice Requires="wps">{drawing}</mc:Choice>'
        f"<mc:Fallback>{vml}</mc:Fallback></mc:AlternateContent>"
        if fallback
        else vml
    )
    return f"<w:p {NS}><w:r><w:t>{anchor}</w:t></w:r><w:r>{shape}</w:r></w:p>"


def footnote_reference_paragraph(before: str, note_id: int, after: str = "") -> str:
    return (
        f"<w:p {NS}><w:r><w:t>{before}</w:t></w:r>"
        f'<w:r><w:footnoteReference w:id="{note_id}"/></w:r><w:r><w:t>{after}</w:t></w:r></w:p>'
    )


def footnotes_xml(notes: dict[int, str]) -> bytes:
    separators = (
        '<w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote>'
        '<w:footnote w:type="continuationSeparator" w:id="0"><w:p><w:r>'
        "<w:continuationSeparator/></w:r></w:p></w:footnote>"
    )
    body = "".join(
        f'<w:footnote w:id="{i}"><w:p><w:r><w:footnoteRef/></w:r>'
        f'<w:r><w:t xml:space="preserve"> {text}</w:t></w:r></w:p></w:footnote>'
        for i, text in notes.items()
    )
    return f'<?xml version="1.0" encoding="UTF-8"?><w:footnotes {NS}>{separators}{body}</w:footnotes>'.encode()


_FOOTNOTES_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.footnotes+xml"
_FOOTNOTES_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/footnotes"


def save(
    document: Any,
    *,
    numbering: bytes | None = None,
    footnotes: bytes | None = None,
    styles_patch: tuple[bytes, bytes] | None = None,
) -> bytes:
    """The document's bytes with ``word/numbering.xml`` replaced, ``word/footnotes.xml`` added
    (with its relationship and content type) and a (old, new) replacement in styles.xml."""
    saved = io.BytesIO()
    document.save(saved)
    out = io.BytesIO()
    with (
        zipfile.ZipFile(saved) as src,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst,
    ):
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename == "word/numbering.xml" and numbering is not None:
                data = numbering
            elif info.filename == "word/styles.xml" and styles_patch is not None:
                assert styles_patch[0] in data
                data = data.replace(*styles_patch)
            elif footnotes is not None and info.filename == "[Content_Types].xml":
                override = (
                    f'<Override PartName="/word/footnotes.xml" ContentType="{_FOOTNOTES_TYPE}"/>'
                )
                data = data.replace(b"</Types>", override.encode() + b"</Types>")
            elif footnotes is not None and info.filename == "word/_rels/document.xml.rels":
                rel = (
                    f'<Relationship Id="rIdFoot1" Type="{_FOOTNOTES_REL}" Target="footnotes.xml"/>'
                )
                data = data.replace(b"</Relationships>", rel.encode() + b"</Relationships>")
            dst.writestr(info.filename, data)
        if footnotes is not None:
            dst.writestr("word/footnotes.xml", footnotes)
    return out.getvalue()
