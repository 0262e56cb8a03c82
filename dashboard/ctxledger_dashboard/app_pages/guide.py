"""Guide: the project's documentation from this install, a section at a time, so the
remedy a page points at opens where there is no internet access (``?page=remedies.md&
section=<GitHub anchor>``)."""

from __future__ import annotations

import streamlit as st

from ctxledger_dashboard.docs_links import PUBLIC_DOCS_URL
from ctxledger_dashboard.guide_docs import (
    docs_folder,
    for_the_dashboard,
    guide_link,
    read_page,
    sections,
)
from ctxledger_dashboard.markdown_text import code

DEFAULT_PAGE = "remedies.md"

page = st.query_params.get("page") or DEFAULT_PAGE
anchor = st.query_params.get("section")
text = read_page(page)
folder = docs_folder()

if text is None:
    where = f"in {code(str(folder))}" if folder is not None else "in this install"
    st.error(
        f"**No page {code(page)} {where}.** The documentation is also on {PUBLIC_DOCS_URL}.",
        icon=":material/menu_book:",
    )
elif not page.endswith(".md"):
    st.caption(f"docs/{page}")
    st.code(text, language="yaml" if page.endswith((".yml", ".yaml")) else None)
else:
    found = {s.anchor: s for s in sections(text)}
    section = found.get(anchor) if anchor else None
    if anchor and section is None:
        st.warning(
            f"docs/{page} has no section {code(anchor)} (renamed?): the whole page follows.",
            icon=":material/search_off:",
        )
    if section is not None:
        st.caption(
            f"docs/{page} · section “{section.title.replace('`', '')}” · "
            f"[the whole page]({guide_link(page)})"
        )
        st.markdown(for_the_dashboard(section.text))
    else:
        st.caption(f"docs/{page}")
        st.markdown(for_the_dashboard(text))

if folder is not None:
    with st.sidebar:
        st.caption("Guide pages")
        pages = sorted(p.name for p in folder.glob("*.md"))
        st.markdown("\n".join(f"- [{name}]({guide_link(name)})" for name in pages))
