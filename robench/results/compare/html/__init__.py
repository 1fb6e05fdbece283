"""The self-contained HTML page of a comparison: leaderboard, figures, gate and provenance.

`robench compare --format html` and `robench demo` write it. Styles, sorting script and
figures (base64 PNG) are inline and nothing is fetched, so the page opens from a CI artifact
with no network. The template is `robench/results/compare/html/templates/page.html.j2`.
"""

from robench.results.compare.html.page import PageSection as PageSection
from robench.results.compare.html.page import build_section as build_section
from robench.results.compare.html.page import render_page as render_page
