// napkin web: forms built from GET /api, results from POST /api/<name>/view.
// No formulas here: the server computes, the page shows. The state lives in the URL.
"use strict";

(() => {
  const DEBOUNCE_MS = 150;
  const state = {
    api: null,          // GET /api
    calcs: {},          // name -> calculator description
    current: null,      // selected calculator name
    values: {},         // name -> {field: raw string}
    files: {},          // name -> {field: [File]} (uploads stay in the browser until sent)
    example: {},        // name -> Set of the fields still holding the worked example's values (marked on the form)
    cleared: {},        // name -> {values, files} of the example that the user's first input cleared ("Keep them")
    samples: {},        // url -> File: a tab's sample upload, fetched once
    seq: 0,             // request counter: a late answer to an old request is dropped
    view: null,         // last successful /view answer
    charts: [],         // vega views to finalise before redrawing
    timer: null,
  };
  const $ = (id) => document.getElementById(id);

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children) node.append(c);
    return node;
  }

  // ------------------------------------------------------------------ raw values
  function asText(value) {
    if (value === null || value === undefined) return "";
    if (Array.isArray(value)) return value.map(asText).join(",");
    if (typeof value === "object") return Object.entries(value).map(([k, v]) => `${k}=${v}`).join(",");
    return String(value);
  }

  function exampleOf(name) {
    const out = {};
    for (const [k, v] of Object.entries(state.calcs[name].example || {})) out[k] = asText(v);
    return out;
  }

  async function sampleFile(sample) {
    if (!state.samples[sample.url]) {
      const res = await fetch(sample.url);
      if (!res.ok) throw new Error(`${sample.url}: ${res.status}`);
      state.samples[sample.url] = new File([await res.blob()], sample.name, {type: sample.type || ""});
    }
    return state.samples[sample.url];
  }

  // The worked example fills every field it sets (and attaches its sample files), each marked on the form;
  // the user's first input clears the rest of it (see userInput).
  async function loadExample(name) {
    const values = exampleOf(name);
    const files = {};
    for (const [field, samples] of Object.entries(state.calcs[name].example_files || {})) {
      try {
        files[field] = await Promise.all(samples.map(sampleFile));
      } catch (err) {
        console.warn(`the sample for ${field} did not load (${err})`);
      }
    }
    state.values[name] = values;
    state.files[name] = files;
    state.example[name] = new Set([...Object.keys(values), ...Object.keys(files)]);
    delete state.cleared[name];
  }

  function boundsText(f) {
    const b = f.bounds || {};
    const lo = "gt" in b ? `> ${b.gt}` : "ge" in b ? `≥ ${b.ge}` : null;
    const hi = "lt" in b ? `< ${b.lt}` : "le" in b ? `≤ ${b.le}` : null;
    if (lo && hi) return `${lo} and ${hi}`;
    return lo || hi || "";
  }

  // ------------------------------------------------------------------ URL state
  function fromUrl() {
    const params = new URLSearchParams(location.search);
    let name = params.get("calc");
    if (!state.calcs[name]) name = state.api.calculators.length ? state.api.calculators[0].name : null;
    if (!name) return;
    const given = {};
    let any = false;
    for (const [k, v] of params) {
      if (k === "calc" || k === "form") continue;
      given[k] = v;
      any = true;
    }
    // no inputs (or form=example) opens the worked example; a form the user emptied says so (form=blank)
    // and stays empty; a link's own inputs are used alone, never mixed with the example's
    const form = params.get("form");
    if (form === "example" || (!any && form !== "blank")) {
      loadExample(name).then(() => select(name, false));
      return;
    }
    state.values[name] = given;
    state.files[name] = {};
    delete state.example[name];
    delete state.cleared[name];
    select(name, false);
  }

  function toUrl(push) {
    const params = new URLSearchParams();
    params.set("calc", state.current);
    let any = false;
    for (const [k, v] of Object.entries(state.values[state.current] || {})) {
      if (v !== "" && v !== null && v !== undefined) {
        params.set(k, v);
        any = true;
      }
    }
    if (isExample(state.current)) params.set("form", "example");
    else if (!any) params.set("form", "blank");
    const url = `${location.pathname}?${params.toString()}`;
    if (push) history.pushState(null, "", url);
    else history.replaceState(null, "", url);
  }

  // ------------------------------------------------------------------ tabs and forms
  function buildTabs() {
    const nav = $("tabs");
    nav.replaceChildren();
    for (const c of state.api.calculators) {
      const b = el("button", {type: "button", role: "tab", id: `tab-${c.name}`, "data-calc": c.name,
                              title: c.help, text: c.title});
      b.addEventListener("click", () => {
        if (state.values[c.name]) select(c.name, true);
        else loadExample(c.name).then(() => select(c.name, true));
      });
      nav.append(b);
    }
    const lists = {gpus: state.api.catalog.gpus, models: state.api.catalog.models};
    for (const [id, names] of Object.entries(lists)) {
      const dl = el("datalist", {id: `list-${id}`});
      for (const n of names) dl.append(el("option", {value: n}));
      document.body.append(dl);
    }
  }

  function listFor(f) {
    if (f.kind !== "name") return null;
    if (/model/.test(f.name)) return "list-models";
    if (/gpu|link|accelerator|card|hardware|incumbent|candidate/.test(f.name)) return "list-gpus";
    return null;
  }

  function select(name, push) {
    state.current = name;
    const calc = state.calcs[name];
    for (const b of $("tabs").children) {
      const on = b.dataset.calc === name;
      b.setAttribute("aria-selected", on ? "true" : "false");
      b.classList.toggle("active", on);
      // on a phone the tabs are one row that scrolls sideways: the chosen one comes into view
      if (on && b.parentElement.scrollWidth > b.parentElement.clientWidth) {
        b.parentElement.scrollLeft = b.offsetLeft - b.parentElement.offsetLeft - 16;
      }
    }
    $("calc-title").textContent = calc.title;
    $("calc-help").textContent = calc.help;
    document.title = `napkin: ${calc.title}`;
    buildForm(calc);
    clearResult();
    toUrl(push);
    compute();
  }

  function buildForm(calc) {
    const form = $("form");
    form.replaceChildren();
    const values = state.values[calc.name] || (state.values[calc.name] = {});
    const example = state.example[calc.name] || new Set();
    for (const f of calc.fields) {
      const id = `f-${f.name}`;
      let input;
      const value = values[f.name];
      if (f.kind === "bool") {
        input = el("input", {type: "checkbox", id, name: f.name});
        input.checked = value !== undefined ? /^(1|true|yes|on|y)$/i.test(value) : f.default === true;
        input.addEventListener("change", () => {
          userInput(calc, f.name);
          const on = input.checked;
          if (on === (f.default === true)) delete values[f.name];
          else values[f.name] = on ? "true" : "false";
          changed();
        });
      } else if (f.kind === "choice") {
        input = el("select", {id, name: f.name});
        input.append(el("option", {value: "", text: f.default !== null ? `(default: ${f.default})` : "(none)"}));
        for (const c of f.choices) input.append(el("option", {value: c, text: c}));
        input.value = value || "";
        input.addEventListener("change", () => { userInput(calc, f.name); values[f.name] = input.value; changed(); });
      } else if (f.upload) {
        // the file is read by the server in memory; it cannot live in the URL
        input = el("input", {type: "file", id, name: f.name, multiple: f.container === "list"});
        showFiles(input, (state.files[calc.name] || {})[f.name]);
        input.addEventListener("change", () => {
          userInput(calc, f.name);
          const files = state.files[calc.name] || (state.files[calc.name] = {});
          if (input.files.length) files[f.name] = Array.from(input.files);
          else delete files[f.name];
          changed();
        });
      } else {
        input = el("input", {type: "text", id, name: f.name, inputmode: "text", spellcheck: "false",
                             placeholder: f.default !== null && f.default !== undefined ? asText(f.default) : "",
                             list: listFor(f)});
        input.value = value || "";
        input.addEventListener("input", () => { userInput(calc, f.name); values[f.name] = input.value; changed(); });
      }
      const hint = [f.doc];
      if (f.expected) hint.push(f.expected);
      if (f.container === "list") hint.push("comma-separated");
      if (f.container === "dict") hint.push("NAME=VALUE pairs, comma-separated");
      const bt = boundsText(f);
      if (bt) hint.push(bt);
      if (f.required) hint.push("required");
      const row = el("div", {class: `field kind-${f.kind}${example.has(f.name) ? " from-example" : ""}`,
                             "data-field": f.name},
        el("label", {for: id}, f.name, el("span", {class: "example-tag", text: "example"})),
        el("div", {class: "control"}, input, el("span", {class: "unit", text: f.unit || ""})),
        el("small", {class: "hint", text: hint.filter(Boolean).join(" · ")}),
        el("div", {class: "field-error", id: `err-${f.name}`}));
      form.append(row);
    }
    form.onsubmit = (e) => { e.preventDefault(); compute(); };
    showExampleNote();
  }

  // a file input shows the files the page holds for it (a sample the example attached, or a kept upload)
  function showFiles(input, files) {
    const dt = new DataTransfer();
    for (const file of files || []) dt.items.add(file);
    input.files = dt.files;
  }

  function isExample(name) {
    return Boolean(state.example[name] && state.example[name].size);
  }

  // The user's first input into a form holding the worked example: their inputs replace it entirely, so
  // the example's other values are cleared (and offered back: "Keep them").
  function userInput(calc, field) {
    const example = state.example[calc.name];
    delete state.example[calc.name];
    for (const row of document.querySelectorAll(".field.from-example")) row.classList.remove("from-example");
    const cleared = state.cleared[calc.name];
    if (!example && cleared) {  // a cleared field the user fills is theirs now: "Keep them" leaves it alone
      delete cleared.values[field];
      delete cleared.files[field];
      if (!Object.keys(cleared.values).length && !Object.keys(cleared.files).length) delete state.cleared[calc.name];
      showExampleNote();
    }
    if (!example) return;
    const values = state.values[calc.name], files = state.files[calc.name] || {};
    const kept = {values: {}, files: {}};
    for (const k of example) {
      if (k === field) continue;
      if (k in values) { kept.values[k] = values[k]; delete values[k]; }
      if (k in files) { kept.files[k] = files[k]; delete files[k]; }
      setInput(calc, k);
    }
    if (Object.keys(kept.values).length || Object.keys(kept.files).length) state.cleared[calc.name] = kept;
    showExampleNote();
  }

  // "Keep them": the example's values the user's first input cleared come back, as the user's own
  function keepExample() {
    const name = state.current, calc = state.calcs[name], cleared = state.cleared[name];
    if (!cleared) return;
    delete state.cleared[name];
    Object.assign(state.values[name], cleared.values);
    state.files[name] = Object.assign(state.files[name] || {}, cleared.files);
    for (const k of [...Object.keys(cleared.values), ...Object.keys(cleared.files)]) setInput(calc, k);
    showExampleNote();
    changed();
  }

  // an input shows what the page holds for its field
  function setInput(calc, name) {
    const f = calc.fields.find((x) => x.name === name);
    const input = $(`f-${name}`);
    if (!f || !input) return;
    const value = (state.values[calc.name] || {})[name];
    if (f.kind === "bool") input.checked = value !== undefined ? /^(1|true|yes|on|y)$/i.test(value) : f.default === true;
    else if (f.upload) showFiles(input, (state.files[calc.name] || {})[name]);
    else input.value = value || "";
  }

  function showExampleNote() {
    const box = $("example-note");
    const name = state.current, example = state.example[name], cleared = state.cleared[name];
    box.replaceChildren();
    box.className = "example-note";
    if (example && example.size) {
      box.append(el("strong", {text: "Worked example. "}),
                 `Its values fill the marked fields: ${[...example].join(", ")}. Type your own and they replace it entirely.`);
    } else if (cleared) {
      const names = [...Object.keys(cleared.values), ...Object.keys(cleared.files)];
      const keep = el("button", {type: "button", id: "keep-example", text: "Keep them"});
      keep.addEventListener("click", keepExample);
      box.classList.add("cleared");
      box.append(el("strong", {text: "Your inputs replace the worked example: "}),
                 `its other values were cleared (${names.join(", ")}). `, keep);
    }
    box.hidden = !box.childNodes.length;
  }

  function changed() {
    toUrl(false);
    clearTimeout(state.timer);
    state.timer = setTimeout(compute, DEBOUNCE_MS);
  }

  // ------------------------------------------------------------------ requests
  function body(name) {
    const values = {};
    for (const [k, v] of Object.entries(state.values[name] || {})) {
      if (v !== "" && v !== null && v !== undefined) values[k] = v;
    }
    const files = state.files[name] || {};
    if (Object.keys(files).length === 0) {
      return {headers: {"content-type": "application/json"}, body: JSON.stringify(values)};
    }
    const form = new FormData();
    for (const [k, v] of Object.entries(values)) form.append(k, v);
    for (const [k, list] of Object.entries(files)) {
      for (const f of list) form.append(k, f, f.name);
    }
    return {body: form};
  }

  async function post(path, name) {
    const opts = body(name);
    return fetch(path, {method: "POST", ...opts});
  }

  async function compute() {
    clearTimeout(state.timer);
    const name = state.current;
    const seq = ++state.seq;
    const needs = state.calcs[name].needs_file;
    if (needs && !((state.files[name] || {})[needs] || []).length) {
      offerSample(state.calcs[name]);
      return;
    }
    document.body.classList.add("busy");
    let res, data;
    try {
      res = await post(`/api/${encodeURIComponent(name)}/view`, name);
      data = await res.json();
    } catch (err) {
      if (seq === state.seq) showError({message: `the server did not answer (${err})`});
      return;
    } finally {
      if (seq === state.seq) document.body.classList.remove("busy");
    }
    if (seq !== state.seq || name !== state.current) return;
    if (res.ok) render(data);
    else showError(data);
  }

  // ------------------------------------------------------------------ rendering
  function clearFieldErrors() {
    for (const node of document.querySelectorAll(".field.invalid")) node.classList.remove("invalid");
    for (const node of document.querySelectorAll(".field-error")) node.textContent = "";
    for (const node of document.querySelectorAll("[aria-invalid]")) node.removeAttribute("aria-invalid");
  }

  function clearResult() {
    state.view = null;
    $("error").hidden = true;
    $("offer").hidden = true;
    $("result").classList.add("empty");
    for (const id of ["result-title", "meaning"]) $(id).textContent = "";
    for (const id of ["figures", "tables", "warnings", "assumptions", "derivation", "notes"]) $(id).replaceChildren();
    finaliseCharts();
    $("charts").replaceChildren();
    $("cli").textContent = "";
  }

  // a tab that reads a file opens on the offer of its sample, not on "logs is required"
  function offerSample(calc) {
    clearResult();
    const box = $("offer");
    const button = el("button", {type: "button", id: "use-sample", text: calc.sample_offer || "Use the sample"});
    button.addEventListener("click", () => loadExample(calc.name).then(() => select(calc.name, false)));
    box.replaceChildren(el("strong", {text: `Choose a file for ${calc.needs_file}, `}), "or ", button,
                        calc.sample_note ? ` (${calc.sample_note}).` : ".");
    box.hidden = false;
  }

  function showError(err) {
    clearFieldErrors();
    const box = $("error");
    box.hidden = false;
    box.replaceChildren(el("strong", {text: "Cannot compute: "}), document.createTextNode(err.message || "error"));
    $("result").classList.add("stale");
    const field = String(err.field || "").replace(/\[.*$/, "").replace(/-/g, "_");
    const row = document.querySelector(`.field[data-field="${CSS.escape(field)}"]`);
    if (row) {
      row.classList.add("invalid");
      const input = row.querySelector("input, select");
      if (input) input.setAttribute("aria-invalid", "true");
      const parts = [err.problem, err.fix].filter(Boolean);
      row.querySelector(".field-error").textContent = parts.join(": ");
    }
  }

  function render(view) {
    clearFieldErrors();
    state.view = view;
    $("error").hidden = true;
    $("offer").hidden = true;
    const result = $("result");
    result.classList.remove("stale", "empty");
    $("result-title").textContent = view.title;

    const figures = $("figures");
    figures.replaceChildren();
    for (const [k, v] of view.rows) {
      figures.append(el("tr", {"data-key": k}, el("th", {text: k}), el("td", {text: v})));
    }

    const tables = $("tables");
    tables.replaceChildren();
    for (const [key, t] of Object.entries(view.tables || {})) {
      const table = el("table", {class: "records"});
      table.append(el("tr", {}, ...t.columns.map((c) => el("th", {text: c}))));
      for (const row of t.rows) {
        table.append(el("tr", {}, ...row.map((v) => el("td", v.includes("\n") ? {class: "nested", text: v} : {text: v}))));
      }
      const shown = t.total > t.rows.length ? `${t.rows.length} of ${t.total} rows` : `${t.total} rows`;
      tables.append(el("details", {class: "table", "data-table": key, open: t.total <= 12},
                       el("summary", {text: `${key} (${shown})`}), el("div", {class: "scroll"}, table)));
    }

    const calc = state.calcs[state.current];
    const meaning = $("meaning");
    meaning.replaceChildren();
    if (calc.establishes) {
      meaning.append(el("p", {class: "establishes"}, el("strong", {text: "Establishes: "}),
                          document.createTextNode(calc.establishes)));
    }
    const guessed = view.assumptions.filter((a) => a.basis === "assumed" || a.basis === "reference");
    const needs = [];
    if (calc.needs_measuring) needs.push(calc.needs_measuring);
    if (guessed.length) needs.push(`assumed, not measured: ${guessed.map((a) => `${a.name} = ${a.value}`).join("; ")}`);
    if (needs.length) {
      meaning.append(el("p", {class: "needs"}, el("strong", {text: "Still needs measuring: "}),
                          document.createTextNode(needs.join(". "))));
    }

    const warnings = $("warnings");
    warnings.replaceChildren();
    for (const w of view.report.warnings || []) {
      warnings.append(el("li", {"data-code": w.code}, el("strong", {text: w.code}), document.createTextNode(`: ${w.message}`)));
    }

    const assumptions = $("assumptions");
    assumptions.replaceChildren();
    if (view.assumptions.length) {
      assumptions.append(el("tr", {}, el("th", {text: "input"}), el("th", {text: "value"}),
                            el("th", {text: "basis"}), el("th", {text: "note"})));
    }
    for (const a of view.assumptions) {
      const note = el("td", {text: a.note});
      if (a.source) {  // a default's source, and the measurement that would replace it
        const parts = [`source: ${a.source}`];
        if (a.replaced_by) parts.push(`replaced by: ${a.replaced_by}`);
        note.append(el("small", {class: "source", text: parts.join("; ")}));
      }
      assumptions.append(el("tr", {class: `basis-${a.basis}`}, el("td", {text: a.name}), el("td", {text: a.value}),
                            el("td", {}, el("span", {class: "badge", text: a.basis})), note));
    }

    const derivation = $("derivation");
    derivation.replaceChildren();
    view.derivation.forEach((line, i) => {
      const item = el("li", {}, el("code", {text: line}));
      const cite = (view.citations || [])[i];
      if (cite) item.append(citation(cite));
      derivation.append(item);
    });

    const notes = $("notes");
    notes.replaceChildren();
    for (const n of view.report.notes || []) notes.append(el("li", {text: n}));

    $("cli").textContent = view.cli;
    drawCharts(view);
  }

  // the formula function that computed a step: its equation, the trap it guards against, its source
  function citation(cite) {
    const box = el("dl", {class: "cite", "data-function": cite.function});
    const rows = [["formula", `${cite.function}: ${cite.equation}`], ["trap", cite.trap], ["source", cite.source]];
    for (const [label, text] of rows) {
      if (!text) continue;
      box.append(el("dt", {text: label}), el("dd", {class: label, text}));
    }
    return box;
  }

  // ------------------------------------------------------------------ charts
  function finaliseCharts() {
    for (const c of state.charts) {
      try { c.finalize(); } catch (e) { /* already gone */ }
    }
    state.charts = [];
  }

  // Chart text at its own size on any screen: a chart is drawn as wide as its panel, never drawn wide and
  // shrunk (at 420 px a 520 px chart shrank its 10 px labels to 6 px); on a phone the text is larger.
  // A chart of side-by-side columns (the card) keeps its width and scrolls sideways.
  const PHONE = "(max-width: 560px)";
  const PHONE_TEXT_PX = 12;

  function forScreen(spec, available) {
    const s = JSON.parse(JSON.stringify(spec));
    const phone = window.matchMedia(PHONE).matches;
    if (typeof s.width === "number" && available > 0 && !s.hconcat && !s.vconcat && !s.concat) {
      const room = available - 8;
      if (s.width + 90 > room) {  // the axes and legend take ~90 px beside the plot
        s.width = Math.max(200, room);
        s.autosize = {type: "fit-x", contains: "padding"};
      }
    }
    if (typeof s.width === "number") wrapTitle(s, s.width);
    if (phone) {
      const text = {labelFontSize: PHONE_TEXT_PX, titleFontSize: PHONE_TEXT_PX};
      const config = s.config || {};
      s.config = {...config, axis: {...(config.axis || {}), ...text}, legend: {...(config.legend || {}), ...text},
                  title: {...(config.title || {}), fontSize: PHONE_TEXT_PX + 2}, text: {fontSize: PHONE_TEXT_PX}};
      largerText(s);
    }
    return s;
  }

  // a title longer than the chart is wide breaks into lines (Vega-Lite takes a list of lines), never cut off
  function wrapTitle(s, width) {
    if (!s.title) return;
    const title = typeof s.title === "string" ? {text: s.title} : s.title;
    const size = title.fontSize || PHONE_TEXT_PX + 2;
    const perLine = Math.max(16, Math.floor(width / (0.65 * size)));  // a character is at most about 0.65 em wide
    for (const key of ["text", "subtitle"]) {
      if (typeof title[key] !== "string" || title[key].length <= perLine) continue;
      const lines = [];
      for (const word of title[key].split(" ")) {
        const last = lines.length - 1;
        if (last >= 0 && lines[last].length + word.length + 1 <= perLine) lines[last] += ` ${word}`;
        else lines.push(word);
      }
      title[key] = lines;
    }
    s.title = title;
  }

  // text marks and titles that set their own size: at least the phone's size
  function largerText(node) {
    if (Array.isArray(node)) { node.forEach(largerText); return; }
    if (!node || typeof node !== "object") return;
    for (const [k, v] of Object.entries(node)) {
      if (k === "data") continue;
      if (k === "fontSize" && typeof v === "number" && v < PHONE_TEXT_PX) node[k] = PHONE_TEXT_PX;
      else largerText(v);
    }
  }

  function drawCharts(view) {
    finaliseCharts();
    const box = $("charts");
    box.replaceChildren();
    if (view.chart_error) box.append(el("p", {class: "chart-error", text: view.chart_error}));
    const entries = Object.entries(view.charts || {});
    if (!entries.length) return;
    if (!window.vegaEmbed) {
      box.append(el("p", {class: "chart-wait", text: "loading the chart library…"}));
      const script = $("vega-script");
      script.addEventListener("load", () => { if (state.view === view) drawCharts(view); }, {once: true});
      return;
    }
    for (const [name, spec] of entries) {
      const holder = el("figure", {class: "chart", "data-chart": name});
      box.append(holder);
      // ast + the bundled interpreter: no eval, so the page keeps script-src 'self'
      window.vegaEmbed(holder, forScreen(spec, box.clientWidth), {actions: false, renderer: "svg", ast: true})
        .then((result) => {
          if (state.view !== view) { result.finalize(); return; }
          state.charts.push(result);
          holder.dataset.ready = "true";
        })
        .catch((err) => holder.append(el("p", {class: "chart-error", text: `chart ${name}: ${err}`})));
    }
  }

  // ------------------------------------------------------------------ buttons
  async function copyCli() {
    const name = state.current;
    const res = await post(`/api/${encodeURIComponent(name)}/cli`, name);
    const data = await res.json();
    if (!res.ok) { showError(data); return; }
    $("cli").textContent = data.command;
    const button = $("copy-cli");
    try {
      await navigator.clipboard.writeText(data.command);
      button.textContent = "Copied";
    } catch (e) {
      button.textContent = "Select the command below";
    }
    setTimeout(() => { button.textContent = "Copy as CLI command"; }, 1500);
  }

  function downloadJson() {
    if (!state.view) return;
    // the server's own text: re-serialising in the browser turns 70000000000.0 into 70000000000 and
    // rounds large floats to other numbers
    const text = state.view.report_json;
    const url = URL.createObjectURL(new Blob([text], {type: "application/json"}));
    const a = el("a", {href: url, download: `napkin-${state.current}.json`});
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }

  async function init() {
    try {
      const res = await fetch("/api");
      state.api = await res.json();
    } catch (err) {
      $("calc-title").textContent = `The API did not answer (${err})`;
      return;
    }
    for (const c of state.api.calculators) state.calcs[c.name] = c;
    buildTabs();
    $("example").addEventListener("click", () => {
      const name = state.current;
      loadExample(name).then(() => select(name, false));
    });
    $("copy-cli").addEventListener("click", copyCli);
    $("download-json").addEventListener("click", downloadJson);
    window.addEventListener("popstate", fromUrl);
    fromUrl();
  }

  init();
})();
