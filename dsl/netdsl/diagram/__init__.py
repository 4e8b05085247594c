"""Graph -> Graphviz: what is drawn (view), how (dot), and the files (render)."""

FORMATS = ("svg", "png", "pdf", "dot")  # what `write_diagram` and `netdsl render` can write
