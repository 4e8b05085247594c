"""Draw the example specs for docs/examples.md: one SVG per model, at --depth 1 (run from the repo root).

    python scripts/gen_gallery.py            # rewrites docs/examples.md and docs/gallery/*.svg
    python scripts/gen_gallery.py --check    # exit 1 if docs/examples.md is out of date

The page lists each spec of specs/ with the first sentence of its leading comment (what
`netdsl examples` prints) and its models' diagrams. The SVGs depend on the installed
Graphviz; `tests/test_way_in.py` checks the page's text and that every image is there.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "dsl"))

import netdsl  # noqa: E402
from netdsl.starter import examples  # noqa: E402

PAGE = ROOT / "docs" / "examples.md"
GALLERY = ROOT / "docs" / "gallery"


def page() -> tuple[str, list[tuple[Path, str]]]:
    """The page's text and the (image, model) pairs it shows."""
    lines = [
        "# Examples",
        "",
        "The example specs that ship with netdsl (`netdsl examples` lists them, `netdsl examples NAME`",
        "copies one out), each model drawn by `netdsl render SPEC --model NAME --depth 1`.",
        "This page is written by `scripts/gen_gallery.py`.",
        "",
    ]
    images = []
    for name, about in examples().items():
        lines += [f"## {name}", "", about, "", f"`specs/{name}.net`", ""]
        for model in netdsl.parse_file(ROOT / "specs" / f"{name}.net").model_names:
            image = GALLERY / f"{name}-{model}.svg"
            images.append((image, model))
            lines += [f"![{model}](gallery/{image.name})", ""]
    return "\n".join(lines).rstrip() + "\n", images


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    text, images = page()
    if args.check:
        same = PAGE.read_text(encoding="utf-8") == text
        print(f"{PAGE.relative_to(ROOT)}: {'up to date' if same else 'OUT OF DATE'}")
        return 0 if same else 1
    from netdsl.diagram.render import write_diagram

    for image, model in images:
        spec = ROOT / "specs" / f"{image.stem.split('-')[0]}.net"
        write_diagram(netdsl.render(spec, model, depth=1), image.with_suffix(""), "svg")
        print(f"wrote {image.relative_to(ROOT)}")
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
