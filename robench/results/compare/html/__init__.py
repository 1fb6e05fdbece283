"""The self-contained HTML page of a comparison (docs/formats.md, "HTML page"): styles,
script and figures inline, nothing fetched; template `templates/page.html.j2` beside this file.
"""

from robench.results.compare.html.page import PageSection as PageSection
from robench.results.compare.html.page import build_section as build_section
from robench.results.compare.html.page import render_page as render_page
