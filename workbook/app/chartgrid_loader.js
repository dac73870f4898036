// The ChartGrid widget's module as anywidget loads it. anywidget gives a widget's module 2 s to load
// and fails the widget after that; importing the 0.9 MB Vega bundle misses that deadline on a busy
// server's visitors (the page then stays blank). So this module is tiny and render(), which has no
// deadline, imports the bundle (sent in the `_bundle` trait) once per page and bundle version.
const modules = (globalThis.__workbookChartModules ??= new Map());

function load(model) {
  const key = model.get("_bundle_key");
  if (!modules.has(key)) {
    const url = URL.createObjectURL(new Blob([model.get("_bundle")], { type: "text/javascript" }));
    modules.set(key, import(url).finally(() => URL.revokeObjectURL(url)));
  }
  return modules.get(key);
}

async function render({ model, el }) {
  try {
    const grid = (await load(model)).default;
    return await grid.render({ model, el });
  } catch (error) {
    el.innerHTML = '<div style="color:#b00020">The charts could not be loaded: ' + error.message + "</div>";
  }
}

export default { render };
