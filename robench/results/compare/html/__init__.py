"""The self-contained HTML page of a comparison: leaderboard, figures, gate and provenance.

`robench compare --format html` and `robench demo` (its `index.html`) write it. One file: the
styles, the few lines of sorting script and the figures (base64 PNG from matplotlib) are
inline, and nothing is fetched, so the page opens from a CI artifact or an e-mail with no
network. The template is a package file (`robench/results/compare/html/templates/page.html.j2`).
"""

from robench.results.compare.html.page import PageSection as PageSection
from robench.results.compare.html.page import build_section as build_section
from robench.results.compare.html.page import render_page as render_page
