// graphmem ui: pick the answer's point on a key's plot. A click in a cell fills the
// form's cutoff and known_at with the times that cell stands for (the server lists
// them on the plot, one per column and row) and asks the server again; the address
// keeps both, so the view can be shared.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  const plot = document.getElementById("plot");
  const form = document.getElementById("pick");
  if (!plot || !form) return;
  const d = plot.dataset;
  const xs = JSON.parse(d.x), ys = JSON.parse(d.y);
  const cell = (offset, size, count) => Math.min(count - 1, Math.max(0, Math.floor(offset / size)));
  plot.addEventListener("click", (event) => {
    const box = plot.getBoundingClientRect();
    const scale = box.width / plot.viewBox.baseVal.width;
    const px = (event.clientX - box.left) / scale - Number(d.left);
    const py = (event.clientY - box.top) / scale - Number(d.top);
    if (px < 0 || py < 0 || py > Number(d.height)) return;
    form.elements.cutoff.value = xs[cell(px, Number(d.col), xs.length)];
    form.elements.known_at.value = ys[cell(Number(d.height) - py, Number(d.row), ys.length)];
    form.submit();
  });
});
