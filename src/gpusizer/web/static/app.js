// gpusizer serve's page: asks /api/fit and /api/shortlist with the form, shows the answers.
// Everything shown is set with textContent (no HTML from answers); nothing is loaded from elsewhere.
"use strict";

const FIT_FIELDS = ["model", "gpu", "gpus", "weights", "kv_cache", "context", "concurrency", "engine"];
const LOAD_FIELDS = ["rate", "prompt", "output_tokens", "ttft_p95", "tpot_p95"];
const PASTE_FIELDS = ["config", "config_name"];
const $ = (id) => document.getElementById(id);
const GB = 1e9;

function option(select, value, label) {
  const o = document.createElement("option");
  o.value = value;
  o.textContent = label;
  select.appendChild(o);
}

async function getJSON(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
  return r.json();
}

async function fillCatalogue() {
  const [models, gpus, systems, engines, precisions] = await Promise.all(
    ["/api/models", "/api/gpus", "/api/systems", "/api/engines", "/api/precisions"].map(getJSON));
  for (const m of models) option($("model"), m.id, `${m.id} (${(m.params_total / 1e9).toFixed(1)}B)`);
  for (const g of gpus) option($("gpu"), g.id, `${g.id}: ${g.name}`);
  for (const s of systems) option($("gpu"), s.id, `${s.id}: ${s.gpu_count} x ${s.gpu}`);
  for (const e of engines) option($("engine"), e.name, e.name);
  for (const p of precisions.weights) option($("weights"), p, p);
  for (const p of precisions.kv_cache) option($("kv_cache"), p, p);
}

function pasted() {
  return $("paste").open && $("config").value.trim() !== "";
}

function formValues() {
  const out = {};
  for (const name of [...FIT_FIELDS, ...LOAD_FIELDS, ...PASTE_FIELDS]) {
    const v = $(name).value.trim();
    if (v !== "") out[name] = v;
  }
  if (pasted()) delete out.model; else { delete out.config; delete out.config_name; }
  return out;
}

function modelPart(values) {
  if (values.config === undefined) return { model: values.model };
  let config;
  try { config = JSON.parse(values.config); } catch (e) { throw new Error(`config.json: ${e.message}`); }
  return { config, config_name: values.config_name || "pasted-config" };
}

function fitBody(values) {
  const body = modelPart(values);
  for (const name of FIT_FIELDS.slice(1)) if (values[name] !== undefined) body[name] = values[name];
  return body;
}

function shortlistBody(values) {
  const body = modelPart(values);
  for (const name of LOAD_FIELDS) if (values[name] !== undefined) body[name] = values[name];
  if (values.weights !== undefined) body.weights = [values.weights];
  if (values.engine !== undefined) body.engine = values.engine;
  return body;
}

async function post(url, body) {
  const r = await fetch(url, { method: "POST", headers: { "content-type": "application/json" },
                               body: JSON.stringify(body) });
  const data = await r.json();
  if (!r.ok) {
    const lines = (data.detail || []).map((d) => {
      const where = (d.loc || []).filter((p) => p !== "body").join(".");
      const near = d.suggestions && d.suggestions.length ? ` (did you mean ${d.suggestions.join(", ")}?)` : "";
      return `${where ? where + ": " : ""}${d.msg}${near}`;
    });
    throw new Error(lines.join("\n") || `HTTP ${r.status}`);
  }
  return { data, command: r.headers.get("x-gpusizer-command") || "" };
}

function number(id, value, digits) {
  const el = $(id);
  el.dataset.value = String(value);
  el.textContent = value === null || value === undefined ? "-" : Number(value).toFixed(digits);
}

const PARTS = [["weights", "weights_bytes"], ["kv", "kv_cache_bytes"], ["activations", "activation_bytes"],
               ["runtime", "runtime_bytes"]];

function showBar(memory) {
  const bar = $("bar");
  const legend = $("legend");
  bar.replaceChildren();
  legend.replaceChildren();
  const scale = Math.max(memory.total_bytes, memory.capacity_bytes);
  for (const [cls, key] of PARTS) {
    const span = document.createElement("span");
    span.className = cls;
    span.style.width = `${(100 * memory[key] / scale).toFixed(3)}%`;
    span.title = `${cls}: ${(memory[key] / GB).toFixed(1)} GB`;
    bar.appendChild(span);
    const item = document.createElement("li");
    const swatch = document.createElement("i");
    swatch.className = cls;
    item.appendChild(swatch);
    const text = document.createElement("span");
    text.id = `memory-${cls}`;
    text.dataset.value = String(memory[key]);
    text.textContent = `${cls} ${(memory[key] / GB).toFixed(1)} GB`;
    item.appendChild(text);
    legend.appendChild(item);
  }
  for (const [cls, key, label] of [["capacity", "capacity_bytes", "capacity"], ["budget", "budget_bytes", "engine budget"]]) {
    const marker = document.createElement("span");
    marker.className = `marker ${cls}`;
    marker.style.left = `${(100 * memory[key] / scale).toFixed(3)}%`;
    marker.title = `${label}: ${(memory[key] / GB).toFixed(1)} GB`;
    bar.appendChild(marker);
    const item = document.createElement("li");
    item.id = `memory-${cls}`;
    item.dataset.value = String(memory[key]);
    item.textContent = `${label} ${(memory[key] / GB).toFixed(1)} GB (dashed line)`;
    legend.appendChild(item);
  }
}

function showFit(fit, command) {
  $("verdict").textContent = fit.fits ? "fits" : "does not fit";
  $("verdict").className = fit.fits ? "fits" : "nofit";
  const headroom = fit.memory.headroom_bytes;
  $("headroom").dataset.value = String(headroom);
  $("headroom").textContent = headroom >= 0 ? `${(headroom / GB).toFixed(1)} GB headroom per GPU`
    : `${(-headroom / GB).toFixed(1)} GB short per GPU`;
  $("summary").textContent = `${fit.model} on ${fit.gpus} x ${fit.gpu_name} (${fit.engine}), weights ${fit.weights}, ` +
    `KV cache ${fit.kv_cache}, ${fit.context.toLocaleString("en")} tokens x ${fit.concurrency} sequences; ` +
    `memory per GPU (GB = 10^9 bytes):`;
  showBar(fit.memory);
  number("decode-expected", fit.decode.expected_tokens_per_second, 1);
  const band = fit.decode.band;
  $("decode-band").dataset.value = JSON.stringify(band);
  $("decode-band").textContent = `${band[0].toFixed(1)}–${band[1].toFixed(1)}`;
  number("decode-ceiling", fit.decode.ceiling_tokens_per_second, 1);
  number("decode-aggregate", fit.decode.expected_aggregate_tokens_per_second, 0);
  number("ttft", fit.prefill.ttft_seconds_expected, 2);
  number("max-concurrency", fit.max_concurrency, 0);
  $("layout").textContent = `${fit.parallel.layout} (${fit.layout_choice})`;
  $("command").textContent = command;
  $("answer").hidden = false;
}

function cell(row, text) {
  const td = document.createElement("td");
  td.textContent = text;
  row.appendChild(td);
}

function fixed(value, digits) {
  return value === null || value === undefined ? "-" : Number(value).toFixed(digits);
}

function showShortlist(table, command) {
  const body = $("shortlist").querySelector("tbody");
  body.replaceChildren();
  for (const r of table.rows.slice(0, 15)) {
    const tr = document.createElement("tr");
    cell(tr, String(r.rank));
    cell(tr, r.configuration);
    cell(tr, `${fixed(r.max_rate, 2)} (${fixed(r.max_rate_band[0], 2)}–${fixed(r.max_rate_band[1], 2)})`);
    cell(tr, String(r.replicas));
    cell(tr, fixed(r.usd_per_hour, 2));
    cell(tr, fixed(r.usd_per_million_tokens, 3));
    cell(tr, fixed(r.ttft === null ? null : r.ttft * 1e3, 0));
    cell(tr, fixed(r.tpot === null ? null : r.tpot * 1e3, 0));
    cell(tr, r.bottleneck);
    body.appendChild(tr);
  }
  $("shortlist-note").textContent = `${table.rows.length} configurations meet the targets ` +
    `(${Math.min(15, table.rows.length)} shown), ${table.dropped.length} dropped; prices: ${table.price_source}`;
  $("shortlist-command").textContent = command;
  $("shortlist-section").hidden = false;
}

function permalink(values) {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(values)) query.set(k, v);
  return `${location.pathname}?${query.toString()}`;
}

async function ask(event) {
  if (event) event.preventDefault();
  $("error").hidden = true;
  const values = formValues();
  $("permalink").href = permalink(values);
  history.replaceState(null, "", permalink(values));
  try {
    const fit = await post("/api/fit", fitBody(values));
    showFit(fit.data, fit.command);
    const shortlist = await post("/api/shortlist", shortlistBody(values));
    showShortlist(shortlist.data, shortlist.command);
  } catch (error) {
    $("error").textContent = error.message;
    $("error").hidden = false;
  }
  document.body.dataset.state = "answered";
}

function applyQuery() {
  const query = new URLSearchParams(location.search);
  for (const [k, v] of query) {
    const el = $(k);
    if (!el || ![...FIT_FIELDS, ...LOAD_FIELDS, ...PASTE_FIELDS].includes(k)) continue;
    if (el.tagName === "SELECT" && ![...el.options].some((o) => o.value === v)) option(el, v, `${v} (as given)`);
    el.value = v;
  }
  if (query.has("config")) $("paste").open = true;
  return query.has("model") || query.has("config");
}

async function start() {
  try {
    await fillCatalogue();
  } catch (error) {
    $("error").textContent = error.message;
    $("error").hidden = false;
    return;
  }
  $("question").addEventListener("submit", ask);
  document.body.dataset.state = "ready";
  if (applyQuery()) await ask();
}

start();
