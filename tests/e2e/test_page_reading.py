"""Issue 16, the page and the words, in a real browser: the journey's rung table in each figure's unit, a
worked example that is marked and that a user's inputs replace entirely, a 420 px phone (the answer first,
wide tables that scroll under a fixed first column, chart text at a readable size), and the ledger tab
opening on the sample log."""

from __future__ import annotations

import json
import re
from urllib.parse import urlencode

import pytest
from click.testing import CliRunner
from playwright.sync_api import expect

from napkin import units
from napkin.cli import cli
from tests.e2e.test_page import PNG, api, figure

PHONE = {"width": 420, "height": 900}


def cli_rungs() -> dict[str, dict[str, str]]:
    """`napkin journey` as the terminal prints it: rung title -> {figure: value as printed}."""
    out = CliRunner().invoke(cli, ["journey"]).stdout
    rungs: dict[str, dict[str, str]] = {}
    current = None
    for line in out.splitlines():
        head = re.fullmatch(r"\d+\. (.+?)\s+Σ .*", line)
        if head:
            current = rungs.setdefault(head.group(1), {})
        elif current is not None and line.startswith("  ") and not line.startswith("  note:"):
            key, rest = line.strip().split(None, 1)
            current[key] = rest.split("  = ")[0].strip()
        elif not line.strip():
            current = None
    return rungs


def test_the_journeys_rung_table_prints_each_figure_in_its_unit_as_the_cli_does(page, server, watch, screenshots):
    """Found in issue 16: `kv_bytes_per_sequence: 670924800/s`, `batch_s_per_step: 0.03349/s`, a raw `8e10`."""
    page.goto(server + "?calc=journey")
    table = page.locator('#tables details[data-table="rungs"]')
    expect(table).to_have_attribute("open", "")
    heads = table.locator("tr").first.locator("th").all_inner_texts()
    assert heads == ["n", "key", "title", "flops", "meter_flops", "figures", "notes"]  # units and working folded in
    figures = dict(zip(table.locator("td:nth-child(3)").all_inner_texts(),
                       table.locator("td:nth-child(6)").all_inner_texts()))
    decode = figures["Decode"].splitlines()
    assert "kv_bytes_per_sequence: 670.9 MB  = kv_bytes_per_token · (prompt + output)   [tokens = 1,300]" in decode
    assert "batch_s_per_step: 45.43 ms  = Σ operators of a decode step of 64 sequences (no prompts)" in decode
    assert "memory_bytes_per_gpu: 80 GB" in figures["The weights"].splitlines()
    expected = cli_rungs()
    assert sorted(expected) == sorted(figures)
    for title, cell in figures.items():
        shown = {line.split(": ", 1)[0]: line.split(": ", 1)[1].split("  = ")[0] for line in cell.splitlines()}
        printed = {k: v for k, v in expected[title].items() if k in shown}
        assert {k: shown[k] for k in printed} == printed, title  # the terminal's figure, character for character
        assert len(printed) >= len(shown) - 1, title  # all but the prompt (printed above the rungs)
    page.wait_for_selector('.chart[data-ready="true"] svg')  # nothing above it moves any more
    table.locator("tr", has_text="kv_bytes_per_sequence").screenshot(path=str(screenshots / "journey-decode-rung.png"),
                                                                      timeout=60_000)
    watch.assert_clean()


def test_the_worked_example_is_marked_and_a_users_inputs_replace_it_entirely(page, server, watch):
    """Found in issue 16: a user typed their own training run over the example and the page still added the
    example's overheads and fixed spend (loaded $862,875 on the page, $401,437 from the CLI for the same inputs)."""
    page.goto(server + "?calc=train")
    expect(figure(page, "loaded_usd")).to_have_text("$387,513")  # cost-7b-2t-loaded
    marked = page.locator(".field.from-example")
    expect(marked).to_have_count(9)  # every value the example sets, in its own field, marked
    expect(page.locator('.field[data-field="overhead"] .example-tag')).to_be_visible()
    expect(page.locator("#f-overhead")).to_have_value("experiments=0.6,lost=0.15,eval=0.05,idle=0.2")
    expect(page.locator("#example-note")).to_contain_text("Worked example. Its values fill the marked fields: params")
    assert "form=example" in page.url

    mine = {"params": "13B", "tokens": "2.6T", "gpu": "h100-sxm", "mfu": "0.38", "price": "$2.20/h"}
    for field, value in mine.items():
        page.locator(f"#f-{field}").fill(value)
    expect(marked).to_have_count(0)
    note = page.locator("#example-note")
    expect(note).to_contain_text("Your inputs replace the worked example: its other values were cleared "
                                 "(goodput, overhead, fixed_usd, sensitivity)")
    expect(page.locator("#f-overhead")).to_have_value("")
    expect(page.locator("#f-fixed_usd")).to_have_value("")
    expect(page.locator("#f-sensitivity")).not_to_be_checked()
    words = ["--params", "13B", "--tokens", "2.6T", "--gpu", "h100-sxm", "--mfu", "0.38", "--price", "$2.20/h"]
    from_cli = json.loads(CliRunner().invoke(cli, ["train", *words, "--json"]).stdout)
    expect(figure(page, "loaded_usd")).to_have_text(units.format(from_cli["loaded_usd"], "usd"))
    expect(page.locator("#cli")).to_have_text("napkin train --params 13B --tokens 2.6T --gpu h100-sxm --mfu 0.38 "
                                              "--price '$2.20/h'")
    assert "form=example" not in page.url and "overhead" not in page.url

    page.click("#keep-example")  # one click brings the rest of the example back, as the user's own inputs
    expect(page.locator("#f-overhead")).to_have_value("experiments=0.6,lost=0.15,eval=0.05,idle=0.2")
    expect(note).to_be_hidden()
    with_rest = api(server, "/api/train", {**mine, "goodput": "0.9", "overhead": "experiments=0.6,lost=0.15,eval=0.05,"
                                           "idle=0.2", "fixed_usd": "60k", "sensitivity": "true"})
    expect(figure(page, "loaded_usd")).to_have_text(units.format(with_rest["loaded_usd"], "usd"))
    watch.assert_clean(allow=("status of 422",))


def test_the_worked_example_button_marks_every_field_again_and_survives_a_reload(page, server, watch):
    page.goto(server + "?" + urlencode({"calc": "serve", "model": "llama-3.1-8b", "gpu": "a100"}))
    expect(page.locator(".field.from-example")).to_have_count(0)  # a link's inputs are the user's, alone
    expect(page.locator("#example-note")).to_be_hidden()
    page.click("#example")
    expect(page.locator(".field.from-example")).to_have_count(5)
    expect(page.locator("#f-model")).to_have_value("llama-3.1-70b")
    page.reload()
    expect(page.locator(".field.from-example")).to_have_count(5)
    expect(page.locator("#example-note")).to_contain_text("model, gpu, gpus, batch, price")
    watch.assert_clean()


def _rendered_text_px(page) -> list[tuple[str, float]]:
    """Every chart label's size on the screen: its font size times the SVG's scale."""
    return page.evaluate("""() => Array.from(document.querySelectorAll('.chart svg')).flatMap(svg => {
        const scale = svg.getBoundingClientRect().width / svg.width.baseVal.value;
        return Array.from(svg.querySelectorAll('text')).filter(t => t.textContent.trim())
          .map(t => [t.textContent, parseFloat(getComputedStyle(t).fontSize) * scale]);
      })""")


@pytest.mark.parametrize("calc", ["train", "journey", "plan-serve", "ledger", "card"])
def test_on_a_phone_the_answer_comes_first_and_chart_text_is_readable(page, server, watch, screenshots, calc):
    """Found in issue 16: at 420 px the answer began 3,453 px down and chart text was about 6 px."""
    page.set_viewport_size(PHONE)
    page.goto(server + f"?calc={calc}")
    page.wait_for_selector("#result-title:not(:empty)")
    page.wait_for_function("() => { const c = document.querySelectorAll('.chart');"
                           " return c.length && Array.from(c).every(x => x.dataset.ready === 'true'); }")
    top = page.evaluate("document.querySelector('#result-title').getBoundingClientRect().top")
    assert top < 400, f"the answer starts {top:.0f} px down"
    assert page.evaluate("document.querySelector('#output').getBoundingClientRect().top"
                         " < document.querySelector('#inputs').getBoundingClientRect().top")
    sizes = _rendered_text_px(page)
    assert sizes and min(px for _, px in sizes) >= 11.9, sorted(sizes, key=lambda s: s[1])[:3]
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    page.screenshot(path=str(screenshots / f"phone-{calc}.png"), timeout=60_000)  # the first screen: the answer
    assert (screenshots / f"phone-{calc}.png").read_bytes().startswith(PNG)
    watch.assert_clean()


def test_on_a_phone_a_wide_table_scrolls_under_its_fixed_first_column(page, server, watch, screenshots):
    page.set_viewport_size(PHONE)
    page.goto(server + "?calc=plan-serve")
    table = page.locator('#tables details[data-table="ranking"]')
    expect(table).to_have_attribute("open", "")
    scroller = table.locator(".scroll")
    width, room = scroller.evaluate("s => [s.scrollWidth, s.clientWidth]")
    assert width > room + 200, "the ranking is wider than a phone"
    first = table.locator("tr").nth(1).locator("td").first
    second = table.locator("tr").nth(1).locator("td").nth(1)
    left = scroller.bounding_box()["x"]
    assert first.bounding_box()["x"] == pytest.approx(left, abs=1)
    scroller.evaluate("s => { s.scrollLeft = 200; }")
    page.wait_for_timeout(100)
    assert first.bounding_box()["x"] == pytest.approx(left, abs=1)  # the first column stays
    assert second.bounding_box()["x"] < left + first.bounding_box()["width"] - 100  # the rest scrolled under it
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    table.screenshot(path=str(screenshots / "phone-plan-serve-ranking.png"), timeout=60_000)
    watch.assert_clean()


def test_the_ledger_tab_opens_on_the_sample_log_and_offers_it_when_the_form_has_none(page, server, watch):
    """Found in issue 16: the ledger tab opened on a red "logs is required"."""
    page.goto(server + "?calc=ledger")
    expect(page.locator("#result-title")).to_have_text("Realised cost: sample-run.csv")
    expect(figure(page, "usd_per_million_advanced_tokens")).to_have_text("$0.08351/M")  # as the docs' walk-through
    expect(page.locator("#error")).to_be_hidden()
    assert page.evaluate("Array.from(document.querySelector('#f-logs').files).map(f => f.name)") == ["sample-run.csv"]
    assert page.evaluate("Array.from(document.querySelector('#f-plan').files).map(f => f.name)") == ["plan.toml"]
    expect(page.locator("#cli")).to_have_text(
        "napkin ledger report sample-run.csv --plan plan.toml --model llama-2-7b --gpu h100")
    expect(page.locator('.field[data-field="logs"]')).to_have_class(re.compile("from-example"))

    page.goto(server + "?" + urlencode({"calc": "ledger", "price": "$2.50/h"}))  # a form without a log
    offer = page.locator("#offer")
    expect(offer).to_contain_text("Choose a file for logs, or Use the sample log (three days of a 7B run on 64 H100s")
    expect(page.locator("#error")).to_be_hidden()
    page.click("#use-sample")
    expect(page.locator("#result-title")).to_have_text("Realised cost: sample-run.csv")
    expect(offer).to_be_hidden()
    watch.assert_clean()
