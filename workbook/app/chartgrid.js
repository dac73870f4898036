// A grid of Vega-Lite charts whose data can be swapped without re-embedding. Each spec is embedded
// once (again only if it changes); a change of `datasets` replaces the named datasets in each
// running Vega view and re-runs its dataflow. One widget carries all charts, so the page loads the
// bundled vega-embed once. `vegaEmbed` is provided by vl-convert's bundle (offline, no CDN).
//
// Each chart fills its grid cell: the specs keep their fixed widths (the report's PNG and SVG use them), and here
// each view's plot width is set to what its cell leaves after axes, labels and legends. A ResizeObserver re-fits a
// chart whenever its cell's width changes: the window is resized, the grid wraps, or a hidden tab is shown (a
// hidden cell has no width; it is fitted when it appears).
const GAP = 16; // px between cells
const MIN_CELL = 480; // px: the narrowest cell every chart fits (titles, two-line bar labels, legends); one per row below
const MIN_PLOT = 120; // px of plot width a chart never goes below (a panel of a side-by-side chart too)
const MAX_HEIGHT_GROWTH = 1.5; // a fixed-height chart grows with its width, to at most 1.5x its spec height

async function render({ model, el }) {
  const views = {};
  const sizes = {}; // chart name -> its sizing()
  const fitted = {}; // chart name -> the cell width its view was last fitted to
  let queue = Promise.resolve();
  // The grid is a div of its own: the widget's element is styled by ipywidgets' Layout too, which may clear
  // display and grid properties on it after render (the Serve tab, rendered while hidden, lost its grid so).
  const grid = el.appendChild(document.createElement("div"));
  grid.style.display = "grid";
  grid.style.gap = `${GAP}px`;

  // At most `columns` charts per row, each cell at least MIN_CELL wide (one per row when the grid is narrower).
  function layout() {
    const columns = Math.max(1, model.get("columns"));
    const share = `calc((100% - ${(columns - 1) * GAP}px) / ${columns})`;
    grid.style.gridTemplateColumns = `repeat(auto-fit, minmax(min(100%, max(${MIN_CELL}px, ${share})), 1fr))`;
  }
  layout();

  function cell(name) {
    let div = grid.querySelector(`[data-chart="${name}"]`);
    if (!div) {
      div = document.createElement("div");
      div.dataset.chart = name;
      div.style.minWidth = "0"; // the cell's width comes from the grid, never from the chart it holds
      div.appendChild(document.createElement("div"));
      grid.appendChild(div);
      resized.observe(div);
    }
    return div;
  }

  // How a chart is sized: its plot-width signal ("width" for a single or layered chart, "childWidth" for side-by-side
  // panels of one width, as Vega-Lite names them), how many panels share it, and its spec's plot width and (where
  // fixed) height, read when it is embedded.
  function sizing(spec, view) {
    const signal = spec.hconcat ? "childWidth" : "width";
    const panels = spec.hconcat?.length || 1;
    const baseHeight = !spec.hconcat && typeof spec.height === "number" ? spec.height : null;
    return { signal, panels, baseWidth: view.signal(signal), baseHeight };
  }

  // Set the plot width so that the drawing (plot + axes + legends + padding) fills the cell. The space around the
  // plot is measured, not assumed: it changes with labels and legends (and a title wider than the plot does not
  // shrink), so further passes correct the first.
  async function fit(name) {
    const view = views[name];
    const room = cell(name).clientWidth;
    const size = sizes[name];
    if (!view || !room) return; // hidden: fitted when its cell gets a width
    for (let pass = 0; pass < 4; pass++) {
      const plot = view.signal(size.signal);
      const drawn = Number(view.container().querySelector("svg")?.getAttribute("width")) || 0;
      const panel = Math.max(MIN_PLOT, Math.floor((plot * size.panels + room - drawn) / size.panels));
      if (panel === plot) break; // as wide as the cell allows
      view.signal(size.signal, panel);
      if (size.baseHeight) {
        const growth = Math.min(MAX_HEIGHT_GROWTH, Math.max(1, panel / size.baseWidth));
        view.height(Math.round(size.baseHeight * growth));
      }
      await view.resize().runAsync(); // resize: side-by-side panels re-measure only when asked
    }
    fitted[name] = room;
  }

  const fitAll = () => Promise.all(Object.keys(views).map(fit));

  // A cell whose width changed (window resized, grid wrapped, tab shown) is re-fitted. Changes of height (the
  // chart's own, after a fit) are ignored.
  const resized = new ResizeObserver((entries) => {
    const names = entries.map((e) => e.target.dataset.chart).filter((n) => fitted[n] !== cell(n).clientWidth);
    if (names.length) enqueue(() => Promise.all(names.map(fit)));
  });

  async function embedAll() {
    const specs = model.get("specs");
    const datasets = model.get("datasets");
    for (const name of Object.keys(specs)) {
      if (views[name]) views[name].finalize();
      const spec = structuredClone(specs[name]);
      spec.datasets = datasets[name] || {};
      try {
        views[name] = (await vegaEmbed(cell(name).firstChild, spec, { actions: false, renderer: "svg" })).view;
        sizes[name] = sizing(spec, views[name]);
      } catch (error) {
        delete views[name];
        cell(name).firstChild.innerHTML = '<div style="color:#b00020">This chart could not be drawn: ' + error.message + "</div>";
      }
    }
    await fitAll();
  }

  async function swapAll() {
    const datasets = model.get("datasets");
    await Promise.all(Object.keys(datasets).map(async (name) => {
      const view = views[name];
      if (!view) return;
      for (const [data, rows] of Object.entries(datasets[name])) view.data(data, rows);
      await view.resize().runAsync();  // resize: re-fit the padding to new legends, labels and titles
    }));
    await fitAll();  // new labels and legends change the room they leave the plot
  }

  // One task at a time, in order; a failed task is reported and does not stop the ones after it.
  const enqueue = (task) => { queue = queue.then(task).catch((error) => console.error("chart grid:", error)); };
  model.on("change:specs", () => enqueue(embedAll));
  model.on("change:datasets", () => enqueue(swapAll));
  model.on("change:columns", layout);
  enqueue(embedAll);
  await queue;
  return () => {
    resized.disconnect();
    Object.values(views).forEach((view) => view.finalize());
  };
}

export default { render };
