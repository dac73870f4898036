// A grid of Vega-Lite charts whose data can be swapped without re-embedding. Each spec is embedded
// once (again only if it changes); a change of `datasets` replaces the named datasets in each
// running Vega view and re-runs its dataflow. One widget carries all charts, so the page loads the
// bundled vega-embed once. `vegaEmbed` is provided by vl-convert's bundle (offline, no CDN).
async function render({ model, el }) {
  const views = {};
  let queue = Promise.resolve();
  const GAP = 16;
  el.style.display = "grid";
  el.style.gap = `${GAP}px`;

  // At most `columns` charts per row, and fewer when the widest chart would not fit its cell: a chart
  // is never clipped, the grid wraps instead (CSS: auto-fit with a minimum of the widest chart).
  function layout() {
    const widths = Object.values(views).map((view) => Number(view.container()?.querySelector("svg")?.getAttribute("width")) || 0);
    const widest = Math.max(0, ...widths);  // the SVG's own width: known even while the tab is hidden
    const columns = model.get("columns");
    const share = `calc((100% - ${(columns - 1) * GAP}px) / ${columns})`;
    el.style.gridTemplateColumns = `repeat(auto-fit, minmax(min(100%, max(${Math.ceil(widest)}px, ${share})), 1fr))`;
  }
  layout();

  function cell(name) {
    let div = el.querySelector(`[data-chart="${name}"]`);
    if (!div) {
      div = document.createElement("div");
      div.dataset.chart = name;
      el.appendChild(div);
    }
    return div;
  }

  async function embedAll() {
    const specs = model.get("specs");
    const datasets = model.get("datasets");
    for (const name of Object.keys(specs)) {
      if (views[name]) views[name].finalize();
      const spec = structuredClone(specs[name]);
      spec.datasets = datasets[name] || {};
      try {
        views[name] = (await vegaEmbed(cell(name), spec, { actions: false, renderer: "svg" })).view;
      } catch (error) {
        cell(name).innerHTML = '<div style="color:#b00020">This chart could not be drawn: ' + error.message + "</div>";
      }
    }
    layout();
  }

  async function swapAll() {
    const datasets = model.get("datasets");
    await Promise.all(Object.keys(datasets).map(async (name) => {
      const view = views[name];
      if (!view) return;
      for (const [data, rows] of Object.entries(datasets[name])) view.data(data, rows);
      await view.resize().runAsync();  // resize: re-fit the padding to new legends, labels and titles
    }));
    layout();  // new data can change a chart's width (longer labels)
  }

  const enqueue = (task) => { queue = queue.then(task); };
  model.on("change:specs", () => enqueue(embedAll));
  model.on("change:datasets", () => enqueue(swapAll));
  model.on("change:columns", layout);
  enqueue(embedAll);
  await queue;
  return () => Object.values(views).forEach((view) => view.finalize());
}

export default { render };
