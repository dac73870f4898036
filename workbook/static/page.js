// The static page: controls -> a precomputed scenario (workbook/static/grid.py) -> recommendation line, charts,
// option table. No server, no network: the data is inlined (gzip, base64) and the charts are the app's own
// ChartGrid module (workbook/app/chartgrid.js, bundled offline with Vega by vl-convert), driven by a stand-in for
// the widget model. Chart datasets are built as workbook/charts/training.py builds them (cost_datasets,
// frontier_datasets); tests/e2e/test_static.py checks them against the Python API at grid points.
const TOP_COST = 12; // charts.training.cost_datasets(top=12)
const FRONTIER_OPTIONS = 5; // charts.training.FRONTIER_OPTIONS
const TABLE_ROWS = 60; // views.option_table(limit=60)
const KIND = { gpu: "GPU", tpu: "TPU", trainium: "Trainium" };

async function inflate(id) {
  const bytes = Uint8Array.from(atob(document.getElementById(id).textContent.trim()), (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Response(stream).json();
}

// Money and days for people, as workbook.training.recommend.usd / days write them.
export function usd(v) {
  if (v === null || v === undefined) return "n/a";
  const a = Math.abs(v);
  if (a >= 1e9) return `$${(v / 1e9).toFixed(1)}B`;
  if (a >= 1e6) return `$${(v / 1e6).toFixed(1)}M`;
  if (a >= 1e4) return `$${(v / 1e3).toFixed(0)}k`;
  return `$${Math.round(v).toLocaleString("en-US")}`;
}
const days = (v) => (v < 100 ? `${v.toFixed(1)} days` : `${Math.round(v).toLocaleString("en-US")} days`);
const int = (v) => v.toLocaleString("en-US");
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function start(D, render) {
  const $ = (id) => document.getElementById(id);
  const A = D.axes;
  const options = D.options.map(([acc, cloud, pricing, price]) => ({
    name: D.accelerators[acc][0],
    kind: D.accelerators[acc][1],
    family: `${D.accelerators[acc][2]}-${D.accelerators[acc][1]}`, // charts.common.FAMILY
    acc,
    cloud: D.clouds[cloud],
    pricing_model: D.pricing[pricing],
    usd_per_chip_hour: price,
  }));

  function controls() {
    const v = (id) => Number($(id).value);
    return {
      p: v("wb-params"), t: v("wb-tokens"), f: A.frameworks.indexOf($("wb-framework").value),
      pr: A.precisions.indexOf($("wb-precision").value), d: v("wb-days"), r: v("wb-rps"),
      sp: A.serve_precisions.indexOf($("wb-serve-precision").value),
      pricing: $("wb-pricing").value, cloud: $("wb-cloud").value,
    };
  }
  // Rows without a cloud are accelerators with no price at all: shown as "no price" for the reader's choice below.
  const matches = (o, s) => o.cloud !== null && o.pricing_model === s.pricing && (s.cloud === "any" || o.cloud === s.cloud);

  // Training rows of one grid scenario, narrowed to the reader's pricing and cloud, feasible ones cheapest first.
  function trainRows(s) {
    const base = (((s.p * A.tokens_per_param.length + s.t) * A.frameworks.length + s.f) * A.precisions.length + s.pr);
    const rows = D.train[base * A.days.length + s.d];
    if (rows === null) return null;
    const feasible = [], blocked = [], first = new Map();
    for (const row of rows) {
      const o = options[row[0]];
      if (!first.has(o.acc)) first.set(o.acc, row);
      if (!matches(o, s)) continue;
      if (row.length > 2) {
        const [, chips, train_days, cost_usd, cost_usd_low, cost_usd_high, finish_days] = row;
        feasible.push({ ...o, option: row[0], chips, train_days, cost_usd, cost_usd_low, cost_usd_high, finish_days });
      } else blocked.push({ ...o, option: row[0], reason: D.reasons[row[1]][1] });
    }
    // An accelerator with no price under this pricing and cloud: ruled out by a price-independent rule if one
    // holds (training.rules checks those first), else for want of a price, in the words of rule "no_price".
    const shown = new Set(feasible.concat(blocked).map((o) => o.acc));
    for (const [acc, row] of first) {
      if (shown.has(acc)) continue;
      const [code, text] = row.length > 2 ? [""] : D.reasons[row[1]];
      const name = D.accelerators[acc][0];
      const where = s.cloud === "any" ? "" : ` on ${s.cloud}`;
      const reason = D.price_independent_codes.includes(code) ? text : `no ${s.pricing} price for ${name}${where} in the dataset`;
      blocked.push({ name, kind: D.accelerators[acc][1], acc, cloud: null, pricing_model: s.pricing,
        usd_per_chip_hour: null, reason });
    }
    feasible.sort((a, b) => a.cost_usd - b.cost_usd);
    return { feasible, blocked, frontier: D.frontier[base] || [] };
  }

  function bestPerAccelerator(feasible) {
    const seen = new Set();
    return feasible.filter((o) => !seen.has(o.acc) && seen.add(o.acc));
  }
  // charts.common.with_option: short chip name (no vendor), cloud, pricing model.
  const vendor = new RegExp(D.vendor_prefix);
  const label = (o) => `${o.name.replace(vendor, "")} · ${o.cloud} · ${o.pricing_model}`;

  // As charts.training.tab_datasets: an option's slot (its shape) is its place among the cheapest per accelerator.
  function datasets(r, deadline) {
    const best = bestPerAccelerator(r.feasible);
    const cost = best.slice(0, TOP_COST).map((o, slot) => ({
      slot, option: label(o), family: o.family, name: o.name, cloud: o.cloud, pricing_model: o.pricing_model,
      chips: o.chips, train_days: o.train_days, finish_days: o.finish_days, cost_usd: o.cost_usd,
      cost_usd_low: o.cost_usd_low, cost_usd_high: o.cost_usd_high,
    }));
    const picked = new Map(best.slice(0, FRONTIER_OPTIONS).map((o, slot) => [o.option, { ...o, slot }]));
    const points = r.frontier.filter((p) => picked.has(p[0])).map(([o, , chips, train_days, cost_usd, finish_days]) => {
      const pick = picked.get(o);
      return { option: label(pick), slot: pick.slot, family: pick.family, name: pick.name, chips,
        start_delay_days: finish_days - train_days, train_days, finish_days, cost_usd };
    });
    return {
      cost: { options: cost, message: cost.length ? [] : [{ text: "No option meets the constraints" }] },
      frontier: {
        points,
        deadline: [{ deadline, label: `deadline: ${deadline} days` }],
        message: points.length ? [] : [{ text: "No feasible option to plot" }],
      },
    };
  }

  function headline(r) {
    const b = r.feasible[0];
    if (!b) return "No accelerator meets these constraints";
    return `Train on ${b.name} (${b.cloud}, ${b.pricing_model}): ${int(b.chips)} chips, ${days(b.train_days)}, ` +
      `${usd(b.cost_usd)}`;
  }

  function detail(r) {
    const best = bestPerAccelerator(r.feasible);
    if (!best.length) return "Ruled out: " + r.blocked.slice(0, 4).map((o) => `${o.name}: ${o.reason}`).join("; ");
    const b = best[0];
    const parts = [`Range ${usd(b.cost_usd_low)}–${usd(b.cost_usd_high)} (MFU, goodput and price spread).`];
    if (best[1]) parts.push(`Runner-up: ${best[1].name} on ${best[1].cloud}, ${usd(best[1].cost_usd)}.`);
    const rival = best.find((o) => o.kind !== b.kind);
    if (rival) parts.push(`Best ${KIND[rival.kind]}: ${rival.name} on ${rival.cloud}, ${usd(rival.cost_usd)}.`);
    return parts.join(" ");
  }

  function table(r) {
    const rows = r.feasible.concat(r.blocked).slice(0, TABLE_ROWS).map((o) => {
      const ok = o.reason === undefined;
      const cells = [o.name, o.cloud || "–", o.pricing_model, ok ? int(o.chips) : "–", ok ? days(o.train_days) : "–",
        ok ? usd(o.cost_usd) : "–", ok ? `${usd(o.cost_usd_low)}–${usd(o.cost_usd_high)}` : "",
        o.usd_per_chip_hour === null ? "–" : `$${o.usd_per_chip_hour.toFixed(2)}`, ok ? "ok" : o.reason];
      return `<tr${ok ? "" : ' class="off"'}>${cells.map((c) => `<td>${esc(c)}</td>`).join("")}</tr>`;
    });
    const more = r.feasible.length + r.blocked.length - TABLE_ROWS;
    return rows.join("") + (more > 0 ? `<tr><td colspan="9">${more} more options not shown</td></tr>` : "");
  }

  function serving(s) {
    const rows = D.serve[(s.p * A.serve_precisions.length + s.sp) * A.requests_per_s.length + s.r];
    const ok = rows.filter((row) => row.length > 2 && matches(options[row[0]], s))
      .map(([o, chips, per_m, low, high]) => ({ ...options[o], chips, per_m, low, high }))
      .sort((a, b) => a.per_m - b.per_m);
    const rps = A.requests_per_s[s.r];
    if (!ok.length) return [`Serving ${rps} requests/s: no accelerator meets the latency targets here`, ""];
    const b = ok[0];
    const line = `Serve ${rps} requests/s on ${b.name} (${b.cloud}, ${b.pricing_model}): ${int(b.chips)} chips, ` +
      `$${b.per_m.toFixed(3)} per million output tokens`;
    const seen = new Set();
    const list = ok.filter((o) => !seen.has(o.acc) && seen.add(o.acc)).slice(0, 6)
      .map((o) => `<tr><td>${esc(o.name)}</td><td>${esc(o.cloud)}</td><td>${int(o.chips)}</td>` +
        `<td>$${o.per_m.toFixed(3)}</td><td>$${o.low.toFixed(3)}–$${o.high.toFixed(3)}</td></tr>`).join("");
    return [line, list];
  }

  function appLink(s) {
    const q = new URLSearchParams({
      params_b: A.params_b[s.p], framework: A.frameworks[s.f], days: A.days[s.d], precision: A.precisions[s.pr],
      pricing: s.pricing, cloud: s.cloud, mode: "train",
    });
    if (A.tokens_per_param[s.t] !== 20) q.set("tokens_b", A.params_b[s.p] * A.tokens_per_param[s.t]);
    return `${D.app_url}?${q}`;
  }

  const model = { state: { specs: D.specs, datasets: {}, columns: 2 }, handlers: {} };
  const widget = {
    get: (key) => model.state[key],
    on: (event, handler) => { model.handlers[event] = handler; },
  };

  function update() {
    const s = controls();
    $("wb-params-value").textContent = `${A.params_b[s.p]}B`;
    $("wb-tokens-value").textContent = `${int(A.tokens_per_param[s.t])} per parameter ` +
      `(${int(A.params_b[s.p] * A.tokens_per_param[s.t])}B tokens)`;
    $("wb-days-value").textContent = `${A.days[s.d]} days`;
    $("wb-rps-value").textContent = `${A.requests_per_s[s.r]} requests/s`;
    $("wb-app-link").href = appLink(s);
    const r = trainRows(s);
    if (r === null) {
      $("wb-headline").textContent = "Outside the model's accepted range (too many tokens): open the full app";
      $("wb-detail").textContent = "";
      $("wb-table").innerHTML = "";
      model.state.datasets = datasets({ feasible: [], blocked: [], frontier: [] }, A.days[s.d]);
    } else {
      $("wb-headline").textContent = headline(r);
      $("wb-detail").textContent = detail(r);
      $("wb-table").innerHTML = table(r);
      model.state.datasets = datasets(r, A.days[s.d]);
    }
    const [line, list] = serving(s);
    $("wb-serve-headline").textContent = line;
    $("wb-serve-table").innerHTML = list;
    window.wbDatasets = model.state.datasets; // read by the tests
    if (model.handlers["change:datasets"]) model.handlers["change:datasets"]();
  }

  for (const el of document.querySelectorAll("#wb-controls input, #wb-controls select")) {
    el.addEventListener("input", update);
  }
  update();
  return render({ model: widget, el: $("wb-charts") });
}

export async function main(bundleSource) {
  const D = await inflate("wb-data");
  const url = URL.createObjectURL(new Blob([bundleSource], { type: "text/javascript" }));
  const charts = (await import(url)).default;
  URL.revokeObjectURL(url);
  await start(D, charts.render);
  document.body.dataset.ready = "true";
}
