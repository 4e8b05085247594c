"""The live diagram preview (`netdsl preview SPEC`): a page on 127.0.0.1 that redraws on every save.

    server = PreviewServer("specs/unet.net", port=0)   # checks and draws the spec once
    print(server.start())                               # http://127.0.0.1:PORT/
    ...
    server.close()

`snapshot` checks and draws (pure Python and Graphviz: never Keras), `watch`
polls the files and hands each new snapshot to the page's connections,
`server` serves the page and its event stream. See docs/preview.md.
"""

from netdsl.preview.server import PreviewServer

__all__ = ["PreviewServer"]
