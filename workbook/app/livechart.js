// A Vega-Lite chart whose data can be swapped without re-embedding: the spec is embedded once
// (and again only if it changes); a change of `datasets` replaces the named datasets in the
// running Vega view and re-runs its dataflow. `vegaEmbed` is provided by vl-convert's bundle.
async function render({ model, el }) {
  let view = null;
  let queue = Promise.resolve();

  function showError(error) {
    el.innerHTML = '<div style="color:#b00020">This chart could not be drawn: ' + error.message + "</div>";
  }

  async function embed() {
    if (view) view.finalize();
    const spec = structuredClone(model.get("spec"));
    spec.datasets = model.get("datasets");
    const result = await vegaEmbed(el, spec, { actions: false, renderer: "svg" });
    view = result.view;
  }

  async function swap() {
    if (!view) return embed();
    const datasets = model.get("datasets");
    for (const name of Object.keys(datasets)) view.data(name, datasets[name]);
    await view.runAsync();
  }

  const enqueue = (task) => { queue = queue.then(task).catch(showError); };
  model.on("change:spec", () => enqueue(embed));
  model.on("change:datasets", () => enqueue(swap));
  enqueue(embed);
  await queue;
  return () => { if (view) view.finalize(); };
}

export default { render };
