// The ChartGrid widget's module as anywidget loads it. anywidget gives a widget's module 2 s to load
// and fails the widget after that; importing the 0.9 MB Vega bundle misses that deadline on a busy
// server's visitors (the page then stays blank). So this module is tiny, and render(), which has no
// deadline, asks the kernel for the bundle (a custom message, answered with the code as a string) and
// imports it, once per page and bundle version. The bundle is not part of the widget's state, so the
// page's first request for every widget's state stays small: ipywidgets gives that request 4 s.
const modules = (globalThis.__workbookChartModules ??= new Map());
// This page view's id: the kernel sends the bundle once per page view and ignores repeated requests.
// (Not crypto.randomUUID: that needs a secure context, and the app may be served over plain http.)
const pageId = (globalThis.__workbookPageId ??= `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`);

function fetchBundle(model, key) {
  return new Promise((resolve, reject) => {
    const onMessage = (content) => {
      if (content?.bundle !== key) return;
      model.off("msg:custom", onMessage);
      const url = URL.createObjectURL(new Blob([content.javascript], { type: "text/javascript" }));
      import(url).then(resolve, reject).finally(() => URL.revokeObjectURL(url));
    };
    model.on("msg:custom", onMessage);
    model.send({ request: "bundle", page: pageId });
  });
}

function load(model) {
  const key = model.get("_bundle_key");
  if (!modules.has(key)) modules.set(key, fetchBundle(model, key));
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
