"""Entry point: ``streamlit run streamlit_app.py`` (``ctxledger dashboard`` does it for you)."""

from __future__ import annotations

import streamlit as st

from ctxledger_dashboard.page_kit import REFRESH_SECONDS, api_url

# Page paths are relative to this file; Streamlit resolves them from the main script.
st.set_page_config(page_title="ctxledger", page_icon=":material/receipt_long:", layout="wide")

incidents = st.Page(
    "app_pages/incidents.py",
    title="Incidents",
    icon=":material/emergency_home:",
    url_path="incidents",
    default=True,
)


def _overview() -> None:
    """``/overview`` (the Incidents page's file name, the address people try): Incidents at
    ``/``, with the filters the link carried."""
    st.switch_page(incidents, query_params=st.query_params.to_dict())


navigation = st.navigation(
    [
        incidents,
        st.Page(_overview, title="Overview", url_path="overview", visibility="hidden"),
        st.Page("app_pages/run.py", title="Run", icon=":material/route:", url_path="run"),
        st.Page("app_pages/tool.py", title="Tool", icon=":material/build:", url_path="tool"),
        st.Page(
            "app_pages/alerts.py",
            title="Alerts",
            icon=":material/notifications:",
            url_path="alerts",
        ),
        st.Page("app_pages/guide.py", title="Guide", icon=":material/menu_book:", url_path="guide"),
    ]
)

with st.sidebar:
    st.markdown("### :material/receipt_long: ctxledger")
    st.caption("Where did the tool results go?")
    st.toggle(f"Auto-refresh every {REFRESH_SECONDS} s", key="auto_refresh", value=False)
    st.caption(f"Collector: `{api_url()}`")

navigation.run()
