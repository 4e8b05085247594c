"""How fast does `netdsl lsp` answer while someone types? A real client over stdio.

Prints:
  1. on a generated 1,000-line spec, bursts of ten keystrokes 50 ms apart:
     the time from the last key to the publish of correct diagnostics (those
     `netdsl.check` gives for the final text; target at most 1.0 s), and the
     p95 of hover and completion answered during the bursts (target 100 ms);
  2. on each example spec, change -> diagnostics latency (p95 target 200 ms);
each beside the in-process `netdsl.check` time of the same text, measured in
the same run (the plain tool: what the server adds is the difference).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "dsl"))
sys.path.insert(0, str(ROOT / "tests" / "support"))

from lsp_harness import (  # noqa: E402
    SERVER,
    assert_same_as_check,
    doc,
    edit,
    initialize,
    make_client,
    open_doc,
    pos,
    replace_all,
)
from lsprotocol import types  # noqa: E402

import netdsl  # noqa: E402

BURSTS, KEYS, KEY_GAP = 5, 10, 0.05
TYPED = " -> relu6x"  # ten keys; the final text has one error: unknown step 'relu6x'


def generated_spec(lines_wanted: int = 1000) -> str:
    """A 1,000-line model: dense layers, a block, sums of earlier tensors, one per line."""
    lines = [
        "let width = 64",
        "",
        "block unit(f, drop=0.1) {",
        "  input x",
        "  y = x -> dense(f) -> layer_norm -> relu",
        "  output out = (y -> dropout(drop)) + x",
        "}",
        "",
        "model big {",
        "  input x: (64,)",
        "  h0 = x -> dense(width)",
    ]
    i = 0
    while len(lines) < lines_wanted - 3:
        i += 1
        lines.append(
            [
                f"  h{i} = h{i - 1} -> dense(width, activation=relu)",
                f"  h{i} = h{i - 1} -> unit(width)  # a block",
                f"  h{i} = (h{i - 1} + h{i - 2}) -> layer_norm",
            ][i % 3]
        )
    lines += [f"  output y = h{i} -> dense(10, activation=softmax)", "}"]
    return "\n".join(lines) + "\n"


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def check_seconds(text: str, path: Path, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        netdsl.check(text=text, filename=str(path))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def timed(request) -> float:
    start = time.perf_counter()
    await request
    return time.perf_counter() - start


async def typing_bursts(client, folder: Path) -> None:
    path = folder / "generated_1000.net"
    text = generated_spec()
    uri = path.as_uri()
    lines = text.split("\n")
    target = 500  # the line typed on: `  hN = ... -> dense(width, activation=relu)` or similar
    open_doc(client, uri, text)
    await client.recorder.wait_for(uri, 1, timeout=60)
    await asyncio.sleep(1.0)
    for _ in range(2):  # the client's own JSON converters are built on first use: not the server's time
        await client.text_document_completion_async(types.CompletionParams(text_document=doc(uri), position=pos(0, 0)))
        await client.text_document_hover_async(types.HoverParams(text_document=doc(uri), position=pos(0, 5)))
    version, after_key, hovers, completions, in_process = 1, [], [], [], []
    hover_at = pos(target - 1, 3)  # the tensor bound on that line
    for _ in range(BURSTS):
        version += 1
        replace_all(client, uri, text, version)
        await client.recorder.wait_for(uri, version, timeout=60)
        await asyncio.sleep(1.0)  # a pause before typing again: the name index is built after the publish
        column = len(lines[target - 1])
        pending = []
        for key in TYPED:
            version += 1
            edit(client, uri, version, (target - 1, column), (target - 1, column), key)
            column += 1
            last_key = time.perf_counter()
            pending.append(
                asyncio.ensure_future(
                    timed(
                        client.text_document_hover_async(types.HoverParams(text_document=doc(uri), position=hover_at))
                    )
                )
            )
            pending.append(
                asyncio.ensure_future(
                    timed(
                        client.text_document_completion_async(
                            types.CompletionParams(text_document=doc(uri), position=pos(target - 1, column))
                        )
                    )
                )
            )
            await asyncio.sleep(KEY_GAP)
        published = await client.recorder.wait_for(uri, version, timeout=60)
        after_key.append(client.recorder.published_at(uri, version) - last_key)
        final = "\n".join(lines[: target - 1] + [lines[target - 1] + TYPED] + lines[target:])
        check = [d.model_dump() for d in netdsl.check(text=final, filename=str(path))]
        assert_same_as_check(published.diagnostics, check, str(path), final)  # correct, not only fast
        assert [d["message"] for d in check] == ["unknown step 'relu6x'"] or len(check) == 1, check
        results = await asyncio.gather(*pending)
        hovers += results[0::2]
        completions += results[1::2]
        in_process.append(check_seconds(final, path, repeat=1))
    print(f"1,000-line spec ({len(lines) - 1} lines), {BURSTS} bursts of {KEYS} keys {KEY_GAP * 1000:.0f} ms apart:")
    print(
        f"  last key -> correct diagnostics: median {statistics.median(after_key):.3f} s, "
        f"max {max(after_key):.3f} s (target <= 1.0 s)"
    )
    print(
        f"  hover during the bursts:      p95 {p95(hovers) * 1000:.1f} ms, max {max(hovers) * 1000:.1f} ms "
        f"({len(hovers)} requests; target <= 100 ms)"
    )
    print(
        f"  completion during the bursts: p95 {p95(completions) * 1000:.1f} ms, "
        f"max {max(completions) * 1000:.1f} ms ({len(completions)} requests; target <= 100 ms)"
    )
    print(
        f"  netdsl.check of the final text in process: median {statistics.median(in_process):.3f} s "
        f"(last key -> diagnostics is {statistics.median(after_key) / statistics.median(in_process):.2f}x it)"
    )


async def example_specs(client) -> None:
    latencies, checks = [], []
    for spec in sorted((ROOT / "specs").glob("*.net")):
        text = spec.read_text(encoding="utf-8")
        uri = (spec.parent / f"bench_{spec.name}").as_uri()  # beside lib/: imports resolve
        open_doc(client, uri, text)
        await client.recorder.wait_for(uri, 1, timeout=60)
        last = text.split("\n")[-2] if text.endswith("\n") else text.split("\n")[-1]
        line = text.count("\n") - (1 if text.endswith("\n") else 0)
        for version in range(2, 12):
            if version % 2 == 0:
                edit(client, uri, version, (line, len(last)), (line, len(last)), " ")
            else:
                edit(client, uri, version, (line, len(last)), (line, len(last) + 1), "")
            sent = time.perf_counter()
            await client.recorder.wait_for(uri, version, timeout=60)
            latencies.append(client.recorder.published_at(uri, version) - sent)
            checks.append(check_seconds(text, spec, repeat=1))
            await asyncio.sleep(0.3)
        client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=doc(uri)))
    print(f"example specs ({len(latencies)} changes over {len(latencies) // 10} specs):")
    print(
        f"  change -> diagnostics: p95 {p95(latencies) * 1000:.0f} ms, median "
        f"{statistics.median(latencies) * 1000:.0f} ms (target p95 <= 200 ms)"
    )
    median = statistics.median(checks) * 1000
    print(
        f"  netdsl.check in process: p95 {p95(checks) * 1000:.0f} ms, median {median:.0f} ms "
        f"(ratio of medians {statistics.median(latencies) / statistics.median(checks):.2f})"
    )


async def main() -> None:
    import tempfile

    client = make_client()
    await client.start_io(*SERVER)
    try:
        await initialize(client, root=ROOT)
        with tempfile.TemporaryDirectory() as folder:
            await typing_bursts(client, Path(folder))
        await example_specs(client)
    finally:
        await client.shutdown_session()
        await client.stop()


if __name__ == "__main__":
    asyncio.run(main())
