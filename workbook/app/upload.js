// PriceUpload's page side: pick a CSV, refuse it here if it is larger than the stated limit (nothing is sent
// but a short note to the kernel), else send its bytes as one binary buffer with a custom message.
const mib = (size) => `${(size / 2 ** 20).toFixed(1)} MiB`;

function render({ model, el }) {
  const label = document.createElement("label");
  label.className = "wb-upload";
  label.style.cssText = "display:flex;gap:8px;align-items:center;font-size:13px;margin:4px 0";
  const text = document.createElement("span");
  text.textContent = model.get("description");
  const input = document.createElement("input");
  input.type = "file";
  input.accept = ".csv,text/csv";
  const note = document.createElement("div");
  note.className = "wb-upload-note";
  note.style.cssText = "font-size:13px";
  label.append(text, input);
  el.append(label, note);

  input.addEventListener("change", async () => {
    const file = input.files[0];
    input.value = ""; // the same file can be chosen again after a fix
    if (!file) return;
    const limit = model.get("max_bytes");
    if (file.size > limit) {
      note.style.color = "#b00020";
      note.textContent = `${file.name} is ${mib(file.size)}: the limit is ${mib(limit)}, so it was not sent. ` +
        "Keep only the rows you need (the shipped price table is about 0.3 MiB).";
      model.send({ too_large: true, name: file.name, size: file.size });
      return;
    }
    note.style.color = "#555";
    note.textContent = `Sending ${file.name} (${mib(file.size)})...`;
    model.send({ upload: true, name: file.name }, undefined, [await file.arrayBuffer()]);
    note.textContent = `Sent ${file.name}; the message above says whether it was used.`;
  });
}

export default { render };
