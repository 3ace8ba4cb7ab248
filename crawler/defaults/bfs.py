"""Defaults of the bfs spider's settings (``BFS_*``): which links it follows, read by
crawler/spiders/bfs.py."""

# Which links are followed: "any" host, "seed-hosts" or "seed-domains".
BFS_SCOPE = "any"
# What is followed: "pages" (links to pages: <a>, <area>, frames, <link rel=next>...;
# links to images, scripts, stylesheets, PDFs and archives are only counted) or
# "resources" (those too, and what pages embed; CSS and XML files read for links).
BFS_FOLLOW = "pages"
