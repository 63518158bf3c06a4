"""report.md -> report.html (Python-Markdown with tables and fenced code; images stay
relative, so the folder opens anywhere)."""
import html

import markdown

CSS = """
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; color: #1b1f24; background: #fff;
       margin: 0; }
main { max-width: 1100px; margin: 0 auto; padding: 24px 32px 48px; line-height: 1.45; }
h1 { font-size: 26px; border-bottom: 3px solid #1f77b4; padding-bottom: 8px; }
h2 { font-size: 21px; margin-top: 32px; border-bottom: 1px solid #d0d7de; padding-bottom: 4px; }
h3 { font-size: 17px; margin-top: 24px; }
table { border-collapse: collapse; margin: 10px 0 16px; font-size: 14px; }
th, td { border: 1px solid #d0d7de; padding: 5px 10px; text-align: left; vertical-align: top; }
th { background: #eef3f8; }
tr:nth-child(even) td { background: #f8fafc; }
td:not(:first-child) { font-variant-numeric: tabular-nums; }
pre { background: #f3f5f7; border: 1px solid #d0d7de; padding: 10px 12px; overflow-x: auto; font-size: 13px; }
code { font-family: "DejaVu Sans Mono", Menlo, monospace; font-size: 90%; }
blockquote { border-left: 4px solid #d4a017; background: #fff8e1; margin: 12px 0; padding: 6px 14px; }
img { max-width: 100%; border: 1px solid #e1e4e8; margin: 6px 0; }
hr { border: 0; border-top: 1px solid #d0d7de; margin-top: 32px; }
"""


def to_html(md_text):
    title = md_text.splitlines()[0].lstrip("# ").strip() if md_text else "Report"
    body = markdown.markdown(md_text, extensions=["tables", "fenced_code", "toc"], output_format="html")
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{html.escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n"
            f"{body}\n</main>\n</body>\n</html>\n")
